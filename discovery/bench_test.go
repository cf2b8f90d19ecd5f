package discovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
	"github.com/odwatch/odwatch/internal/testkit"
)

// syntheticOC returns a two-column table where B follows A except for
// about 5% of the rows, which get a random B: the shape of a real
// approximate OC.
func syntheticOC(n int) *table.Table {
	rng := rand.New(rand.NewPCG(uint64(n), 5))
	a := make([]int, n)
	b := make([]int, n)
	for i := range a {
		a[i] = rng.IntN(n)
		b[i] = a[i] / 3
		if rng.IntN(100) < 5 {
			b[i] = rng.IntN(n / 3)
		}
	}
	return tableFromInts([][]int{a, b})
}

// BenchmarkValidateOC times one empty-context AOC validation at eps 0.1:
// the LNDS validator against the iterative baseline (not run at 1M,
// where it takes minutes; at 100k one slow iteration ends the loop).
func BenchmarkValidateOC(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"n=10k", 10_000}, {"n=100k", 100_000}, {"n=1M", 1_000_000}}
	for _, validator := range []string{"lis", "iterative"} {
		for _, sz := range sizes {
			b.Run(validator+"/"+sz.name, func(b *testing.B) {
				if validator == "iterative" && sz.n > 100_000 {
					b.Skip("iterative baseline: minutes at 1M rows")
				}
				if validator == "iterative" && sz.n == 100_000 && testing.Short() {
					b.Skip("iterative baseline at 100k takes over a minute; run without -short")
				}
				tab := syntheticOC(sz.n)
				p := validate.FullPartition(tab.Rows)
				budget := RemovalBudget(0.1, tab.Rows)
				v := validate.NewValidator()
				colA, colB := &tab.Columns[0], &tab.Columns[1]
				var removals int
				b.ReportAllocs()
				cpu0 := testkit.CPUTime(b).Seconds()
				for b.Loop() {
					if validator == "lis" {
						removals = v.OCRemovals(p, colA, colB, Asc, budget)
					} else {
						removals = v.OCRemovalsIterative(p, colA, colB, Asc, budget)
					}
				}
				b.ReportMetric(float64(removals), "removals")
				b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/validation")
				b.ReportMetric((testkit.CPUTime(b).Seconds()-cpu0)*1000/float64(b.N), "cpu-ms/validation")
			})
		}
	}
}

// prefixTable returns the first n rows of t, re-ranked densely: the table
// encoding those rows alone would give.
func prefixTable(t *table.Table, n int) *table.Table {
	if n >= t.Rows {
		return t
	}
	out := &table.Table{Rows: n}
	for _, c := range t.Columns {
		remap := make([]int32, c.Cardinality)
		for i := range remap {
			remap[i] = -1
		}
		for _, r := range c.Ranks[:n] {
			remap[r] = 0
		}
		nc := table.Column{Name: c.Name, Type: c.Type, Ranks: make([]uint32, n)}
		for r := range remap {
			if remap[r] == 0 {
				remap[r] = int32(nc.Cardinality)
				nc.Cardinality++
				if r < len(c.Values) {
					nc.Values = append(nc.Values, c.Values[r])
				}
			}
		}
		for i, r := range c.Ranks[:n] {
			nc.Ranks[i] = uint32(remap[r])
		}
		out.Columns = append(out.Columns, nc)
	}
	return out
}

func countKinds(d *Discovery) (ofd, oc int) {
	for _, r := range d.Dependencies {
		if r.Kind == KindOFD {
			ofd++
		} else {
			oc++
		}
	}
	return ofd, oc
}

// BenchmarkDiscoverFlights runs full discovery on prefixes of the 3M-row
// flights table at eps 0 and 0.1. Loading is outside the timer.
func BenchmarkDiscoverFlights(b *testing.B) {
	full := readShared(b, "flights-3m.csv.gz", tableio.CSVOptions{})
	for _, rows := range []int{100_000, 1_000_000, 3_000_000} {
		b.Run("rows="+humanCount(rows), func(b *testing.B) {
			tab := prefixTable(full, rows)
			for _, eps := range []float64{0, 0.1} {
				b.Run(fmt.Sprintf("eps=%v", eps), func(b *testing.B) {
					var d *Discovery
					cpu0 := testkit.CPUTime(b).Seconds()
					for b.Loop() {
						var err error
						d, err = Discover(context.Background(), tab, Options{Epsilon: eps})
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric((testkit.CPUTime(b).Seconds()-cpu0)/float64(b.N), "cpu-s/discovery")
					ofd, oc := countKinds(d)
					b.ReportMetric(float64(tab.Rows), "rows")
					b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/discovery")
					b.ReportMetric(float64(len(d.Dependencies)), "deps")
					b.ReportMetric(float64(ofd), "ofds")
					b.ReportMetric(float64(oc), "ocs")
					b.ReportMetric(float64(d.Stats.Validations), "validations")
				})
			}
		})
	}
}

// BenchmarkDiscoverDatasets runs full discovery at eps 0.1 on the smaller
// shared datasets and reports the dependencies found by kind.
func BenchmarkDiscoverDatasets(b *testing.B) {
	for _, name := range []string{"zipcodes.csv", "species.csv", "weather.csv", "cars.csv"} {
		b.Run(name, func(b *testing.B) {
			tab := readShared(b, name, tableio.CSVOptions{})
			var d *Discovery
			for b.Loop() {
				var err error
				d, err = Discover(context.Background(), tab, Options{Epsilon: 0.1})
				if err != nil {
					b.Fatal(err)
				}
			}
			ofd, oc := countKinds(d)
			b.ReportMetric(float64(tab.Rows), "rows")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/discovery")
			b.ReportMetric(float64(ofd), "ofds")
			b.ReportMetric(float64(oc), "ocs")
			b.ReportMetric(float64(d.Stats.Validations), "validations")
		})
	}
}

func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// BenchmarkDiscoverLiterature runs full discovery at eps 0.05 with the
// default MinStrength on the literature's tables (bench/ of the shared data),
// cut at a level where one run takes seconds: the lattice's own work
// (inheritance, partitions, candidates, pruning, next level) on wide
// tables rather than the validators on long ones.
func BenchmarkDiscoverLiterature(b *testing.B) {
	for _, bc := range []struct {
		file     string
		maxLevel int
	}{{"bench/abalone.csv", 0}, {"bench/letter.csv", 4}, {"bench/adult.csv", 4}, {"bench/ncvoter-1k.csv", 5}, {"bench/hepatitis.csv", 4}} {
		b.Run(fmt.Sprintf("%s/level=%d", filepath.Base(bc.file), bc.maxLevel), func(b *testing.B) {
			tab := readShared(b, bc.file, tableio.CSVOptions{})
			var d *Discovery
			cpu0 := testkit.CPUTime(b).Seconds()
			for b.Loop() {
				var err error
				d, err = Discover(context.Background(), tab, Options{Epsilon: 0.05, MaxLevel: bc.maxLevel, MinStrength: DefaultMinStrength})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((testkit.CPUTime(b).Seconds()-cpu0)/float64(b.N), "cpu-s/discovery")
			b.ReportMetric(float64(len(d.Dependencies)), "deps")
			b.ReportMetric(float64(d.Stats.Validations), "validations")
		})
	}
}
