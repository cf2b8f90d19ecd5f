package validate

import (
	"math/rand/v2"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
)

// BenchmarkOCRemovalRows lists one minimal removal set of an OC over 100k
// rows, 2% of them off the order: in one class (an OC of the empty
// context, as a violated or discovered event's sample takes it), and in
// classes of about 50 rows. A ranks 0..69, B ranks 0..17, as the monitor
// benchmarks' age ~ age_group.
func BenchmarkOCRemovalRows(b *testing.B) {
	const n = 100_000
	rng := rand.New(rand.NewPCG(5, 8))
	a := &table.Column{Ranks: make([]uint32, n), Cardinality: 70}
	c := &table.Column{Ranks: make([]uint32, n), Cardinality: 18}
	for i := range n {
		a.Ranks[i] = uint32(rng.IntN(70))
		c.Ranks[i] = a.Ranks[i] / 10
		if rng.IntN(50) == 0 {
			c.Ranks[i] = 8 + uint32(rng.IntN(10))
		}
	}
	one := &StrippedPartition{N: n, Starts: []uint32{0, n}, Rows: make([]uint32, n)}
	small := &StrippedPartition{N: n}
	for i := range n {
		one.Rows[i] = uint32(i)
		if i%50 == 0 {
			small.Starts = append(small.Starts, uint32(i))
		}
		small.Rows = append(small.Rows, uint32(i))
	}
	small.Starts = append(small.Starts, n)
	for _, c2 := range []struct {
		name string
		p    *StrippedPartition
	}{{"one-class", one}, {"classes-of-50", small}} {
		b.Run(c2.name, func(b *testing.B) {
			for b.Loop() {
				if rows := OCRemovalRows(c2.p, a, c, Asc); len(rows) == 0 {
					b.Fatal("no removals")
				}
			}
		})
	}
}
