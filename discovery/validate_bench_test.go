package discovery

import (
	"context"
	"fmt"
	"testing"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/tableio"
	"github.com/odwatch/odwatch/internal/testkit"
)

// BenchmarkOCValidate validates OCs X: A ~ B at eps 0.1, both polarities,
// on one goroutine, for a sample of contexts X of one size: the hot loop
// of Discover on a wide table without the lattice around it. Adult's
// small contexts have large classes; letter's three-column contexts have
// the small classes of the deeper levels.
func BenchmarkOCValidate(b *testing.B) {
	for _, bc := range []struct {
		file  string
		size  int
		every int
	}{{"bench/adult.csv", 1, 1}, {"bench/adult.csv", 2, 4}, {"bench/letter.csv", 3, 40}} {
		b.Run(fmt.Sprintf("%s/context=%d", bc.file, bc.size), func(b *testing.B) {
			tab := readShared(b, bc.file, tableio.CSVOptions{})
			budget := RemovalBudget(0.1, tab.Rows)
			m := len(tab.Columns)
			var ctxs [][]int
			var walk func(cols []int, next int)
			walk = func(cols []int, next int) {
				if len(cols) == bc.size {
					ctxs = append(ctxs, cols)
					return
				}
				for c := next; c < m; c++ {
					walk(append(cols[:len(cols):len(cols)], c), c+1)
				}
			}
			walk(nil, 0)
			var parts []*validate.StrippedPartition
			var kept [][]int
			for i, cols := range ctxs {
				if i%bc.every == 0 {
					kept = append(kept, cols)
					parts = append(parts, validate.PartitionOf(tab, cols))
				}
			}
			v := validate.NewValidator()
			b.ReportAllocs()
			cpu0 := testkit.CPUTime(b).Seconds()
			for b.Loop() {
				valid := 0
				for i, cols := range kept {
					var in uint64
					for _, c := range cols {
						in |= 1 << c
					}
					for a := range m {
						for c := a + 1; c < m; c++ {
							if in&(1<<a|1<<c) != 0 {
								continue
							}
							asc, desc := v.OCRemovalsBoth(parts[i], &tab.Columns[a], &tab.Columns[c], budget)
							if asc <= budget {
								valid++
							}
							if desc <= budget {
								valid++
							}
						}
					}
				}
				b.ReportMetric(float64(valid), "valid")
			}
			b.ReportMetric((testkit.CPUTime(b).Seconds()-cpu0)*1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkValidateEach re-validates a handful of tracked dependencies on
// adult (32k records x 15 columns), one ValidateEach per op, on the same
// table each time, as the stream's check path and its samples do: what a
// call costs beyond the validations themselves is finding the table's
// distinct records, which a table keeps once found.
func BenchmarkValidateEach(b *testing.B) {
	tab := readShared(b, "bench/adult.csv", tableio.CSVOptions{})
	deps := []Dependency{
		{Kind: KindOFD, Context: []string{"education"}, RHS: "education_num"},
		{Kind: KindOC, Context: []string{}, Left: "capital_gain", Right: "capital_loss", Polarity: Desc},
		{Kind: KindOFD, Context: []string{"relationship"}, RHS: "sex"},
		{Kind: KindKey, Set: []string{"fnlwgt", "age"}},
	}
	opts := Options{Epsilon: 0.05, MinStrength: DefaultMinStrength}
	b.ReportAllocs()
	cpu0 := testkit.CPUTime(b).Seconds()
	for b.Loop() {
		if _, _, err := ValidateEach(context.Background(), tab, deps, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((testkit.CPUTime(b).Seconds()-cpu0)*1000/float64(b.N), "cpu-ms/op")
}
