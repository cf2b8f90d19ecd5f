package discovery

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
	"github.com/odwatch/odwatch/internal/testkit"
)

// BenchmarkDiscoverModes runs what `odwatch discover --epsilon 0.1` runs
// (Discover and Summarize) on the literature's tables in the modes
// issue 25 compares: the paper's (every column ordered as text, no
// MinStrength) and the default (typed, DefaultMinStrength, the reliable
// listing), as the text listing asks it (BoundUnreliable: the strengths
// of unreliable results only bounded) and as --all and JSON ask it
// (default-all: every strength exact). Profile one with -cpuprofile and
// -run '^$' -bench 'DiscoverModes/hepatitis.csv/paper'.
func BenchmarkDiscoverModes(b *testing.B) {
	for _, bc := range []struct {
		file     string
		maxLevel int
	}{{"bench/abalone.csv", 0}, {"bench/ncvoter-1k.csv", 0}, {"bench/hepatitis.csv", 0}, {"bench/adult.csv", 4}} {
		for _, mode := range []struct {
			name        string
			typing      table.Typing
			minStrength float64
			bound       bool
		}{
			{"paper", table.Typing{OrderText: true}, 0, false},
			{"default", table.Typing{}, DefaultMinStrength, true},
			{"default-all", table.Typing{}, DefaultMinStrength, false},
		} {
			b.Run(fmt.Sprintf("%s/%s", filepath.Base(bc.file), mode.name), func(b *testing.B) {
				tab := readShared(b, bc.file, tableio.CSVOptions{Typing: mode.typing})
				opts := Options{Epsilon: 0.1, MaxLevel: bc.maxLevel, MinStrength: mode.minStrength, BoundUnreliable: mode.bound}
				cpu0 := testkit.CPUTime(b).Seconds()
				for b.Loop() {
					discoverSummarized(b, tab, opts)
				}
				b.ReportMetric((testkit.CPUTime(b).Seconds()-cpu0)/float64(b.N), "cpu-s/discovery")
			})
		}
	}
}

// discoverSummarized runs Discover and Summarize on tab, as the CLI and
// the monitor do, failing b on an error.
func discoverSummarized(b *testing.B, tab *table.Table, opts Options) {
	d, err := Discover(context.Background(), tab, opts)
	if err == nil {
		err = Summarize(context.Background(), tab, d, opts)
	}
	if err != nil {
		b.Fatal(err)
	}
}
