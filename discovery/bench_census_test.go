package discovery

import (
	"compress/gzip"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
	"github.com/odwatch/odwatch/internal/testkit"
)

// BenchmarkListingCensus counts, per file and eps, the reliable results
// of the listing alone: those Discover returns in the default mode
// (typed, DefaultMinStrength) that are not in its paper's minimal set on
// the same typing (MinStrength 0). It reports them by kind and, as
// listing-ctx-K, by context size: what the listing's own search (the
// default mode's cost over the paper mode, docs/DESIGN.md, "Performance
// model") finds on real and literature tables, and on windows as the
// monitor sees them: 5,000 records drawn with replacement (as in the
// stream precision benchmark) from adult, zipcodes and flights' first
// 300k rows at eps 0.05, and the end-to-end stream's 100k window at eps
// 0.01, both to the monitor's level 3.
//
//	go test ./discovery -run '^$' -bench ListingCensus -benchtime 1x -v
func BenchmarkListingCensus(b *testing.B) {
	for _, f := range []struct {
		file     string
		maxLevel int
	}{
		{"bench/abalone.csv", 0}, {"bench/adult.csv", 5}, {"bench/echocardiogram.csv", 0},
		{"bench/hepatitis.csv", 0}, {"bench/horse10.csv", 5}, {"bench/letter.csv", 4},
		{"bench/ncvoter-1k.csv", 0}, {"bench/ncvoter-100k.csv", 4}, {"bench/satellites.csv", 4},
		{"airports.csv", 0}, {"cars.csv", 0}, {"species.csv", 0}, {"weather.csv", 0}, {"zipcodes.csv", 0},
	} {
		for _, eps := range []float64{0.05, 0.1} {
			b.Run(fmt.Sprintf("%s/eps%v", filepath.Base(f.file), eps), func(b *testing.B) {
				listingCensus(b, readShared(b, f.file, tableio.CSVOptions{}), Options{Epsilon: eps, MaxLevel: f.maxLevel})
			})
		}
	}
	for _, f := range []struct {
		file    string
		maxRows int
	}{{"bench/adult.csv", 0}, {"zipcodes.csv", 0}, {"flights-3m.csv.gz", 300_000}} {
		for seed := range uint64(3) {
			b.Run(fmt.Sprintf("window-%s/%d", strings.TrimSuffix(filepath.Base(f.file), ".gz"), seed), func(b *testing.B) {
				listingCensus(b, resampledWindow(b, f.file, f.maxRows, 5000, seed), Options{Epsilon: 0.05, MaxLevel: 3})
			})
		}
	}
	b.Run("window-e2e", func(b *testing.B) {
		listingCensus(b, benchStreamWindow(b), Options{Epsilon: 0.01, MaxLevel: 3})
	})
}

// listingCensus reports, for BenchmarkListingCensus, the reliable results
// of tab in the default mode that are not in its minimal set.
func listingCensus(b *testing.B, tab *table.Table, opts Options) {
	run := func(minStrength float64) *Discovery {
		opts.MinStrength = minStrength
		d, err := Discover(context.Background(), tab, opts)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	for b.Loop() {
		paper := map[string]bool{}
		for _, r := range run(0).Dependencies {
			paper[r.String()] = true
		}
		counts := map[string]float64{"listing-oc": 0, "listing-ofd": 0}
		for _, r := range run(DefaultMinStrength).Dependencies {
			if r.Reliable && !paper[r.String()] {
				counts["listing-"+r.Kind.String()]++
				counts[fmt.Sprintf("listing-ctx-%d", len(r.Context))]++
				b.Logf("listing alone: %s (%.2f)", r, r.Strength)
			}
		}
		for k, v := range counts {
			b.ReportMetric(v, k)
		}
	}
}

// resampledWindow is n records drawn with replacement (seeded) from the
// first maxRows rows (0: all) of the shared CSV file name, encoded in the
// default typing.
func resampledWindow(b *testing.B, name string, maxRows, n int, seed uint64) *table.Table {
	f, err := os.Open(testkit.SharedData(b, name))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		in = z
	}
	r := csv.NewReader(in)
	header, err := r.Read()
	if err != nil {
		b.Fatal(err)
	}
	var rows [][]string
	for maxRows <= 0 || len(rows) < maxRows {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, rec)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	return encodeRows(b, header, n, func(int) []string { return rows[rng.IntN(len(rows))] })
}
