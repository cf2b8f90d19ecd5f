package discovery

import (
	"fmt"
	"testing"
)

// BenchmarkOCAdult validates OCs X: A ~ B of the adult data at eps 0.1,
// both polarities, on one goroutine: every one-column context, and every
// fourth two-column one. It is the hot loop of Discover on a wide table
// without the lattice around it.
func BenchmarkOCAdult(b *testing.B) {
	tab := loadCSV(b, "bench/adult.csv")
	budget := RemovalBudget(0.1, tab.Rows)
	m := len(tab.Columns)
	for _, size := range []int{1, 2} {
		var ctxs [][]int
		for x := range m {
			if size == 1 {
				ctxs = append(ctxs, []int{x})
				continue
			}
			for y := x + 1; y < m; y++ {
				if (x*m+y)%4 == 0 {
					ctxs = append(ctxs, []int{x, y})
				}
			}
		}
		parts := make([]*StrippedPartition, len(ctxs))
		for i, cols := range ctxs {
			parts[i] = PartitionOf(tab, cols)
		}
		b.Run(fmt.Sprintf("context=%d", size), func(b *testing.B) {
			v := NewValidator()
			b.ReportAllocs()
			cpu0 := cpuSeconds()
			for b.Loop() {
				valid := 0
				for i, cols := range ctxs {
					for a := range m {
						for c := a + 1; c < m; c++ {
							if a == cols[0] || c == cols[0] || a == cols[len(cols)-1] || c == cols[len(cols)-1] {
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
			b.ReportMetric((cpuSeconds()-cpu0)*1000/float64(b.N), "cpu-ms/op")
		})
	}
}
