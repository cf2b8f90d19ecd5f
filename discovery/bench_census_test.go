package discovery

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/odwatch/odwatch/discovery/tableio"
)

// BenchmarkListingCensus counts, per file and eps, the reliable results
// of the listing alone: those Discover returns in the default mode
// (typed, DefaultMinStrength) that are not in its paper's minimal set on
// the same typing (MinStrength 0). It reports them by kind and, as
// listing-ctx-K, by context size: what the listing's own search (the
// default mode's cost over the paper mode, docs/DESIGN.md, "Performance
// model") finds on real and literature tables.
//
//	go test ./discovery -run '^$' -bench ListingCensus -benchtime 1x
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
				tab := readShared(b, f.file, tableio.CSVOptions{})
				run := func(minStrength float64) *Discovery {
					d, err := Discover(context.Background(), tab, Options{Epsilon: eps, MaxLevel: f.maxLevel, MinStrength: minStrength})
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
						}
					}
					for k, v := range counts {
						b.ReportMetric(v, k)
					}
				}
			})
		}
	}
}
