package validate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
)

// shuffledColumn is B shuffled within each class of p as
// OCShuffledRemovals defines it, written out row by row: the reference
// OCMeasureCounts is checked against.
func shuffledColumn(p *StrippedPartition, b *table.Column) *table.Column {
	sb := append([]uint32(nil), b.Ranks...)
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		bs := make([]uint32, len(cls))
		for k, r := range cls {
			bs[k] = b.Ranks[r]
		}
		rng := shuffleRand(cls[0])
		for k := len(bs) - 1; k > 0; k-- {
			j := rng.next() % uint64(k+1)
			bs[k], bs[j] = bs[j], bs[k]
		}
		for k, r := range cls {
			sb[r] = bs[k]
		}
	}
	return &table.Column{Ranks: sb, Cardinality: b.Cardinality}
}

// randomColumn returns n ranks below card.
func randomColumn(rng *rand.Rand, n, card int) *table.Column {
	c := &table.Column{Ranks: make([]uint32, n), Cardinality: card}
	for i := range c.Ranks {
		c.Ranks[i] = uint32(rng.IntN(card))
	}
	return c
}

// TestOCMeasureCounts checks the one-pass counts against the exact
// removals of the columns and of B shuffled row by row, on contexts whose
// classes take every path: pairs, small classes, the lazy and sorting
// paths of large ones, with B of few ranks and of many, either column the
// wider.
func TestOCMeasureCounts(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(25, 1))
	v := NewValidator()
	for trial := range 400 {
		n := 2 + rng.IntN(1500)
		ctx := randomColumn(rng, n, 1+rng.IntN(max(1, n/(1+rng.IntN(40)))))
		p := ColumnPartition(ctx)
		cards := []int{1, 2, 3, 7, 60, 64, 65, 300, 5000}
		a := randomColumn(rng, n, cards[rng.IntN(len(cards))])
		b := randomColumn(rng, n, cards[rng.IntN(len(cards))])
		if trial%5 == 0 {
			// Correlated columns: classes with few removals.
			for r := range b.Ranks {
				b.Ranks[r] = min(a.Ranks[r]*uint32(b.Cardinality)/uint32(a.Cardinality), uint32(b.Cardinality-1))
				if rng.IntN(10) == 0 {
					b.Ranks[r] = uint32(rng.IntN(b.Cardinality))
				}
			}
		}
		sb := shuffledColumn(p, b)
		for pol := Asc; pol <= Desc; pol++ {
			want := v.OCRemovals(p, a, b, pol, -1)
			wantShuffled := v.OCRemovals(p, a, sb, pol, -1)
			r, s := v.OCMeasureCounts(p, a, b, pol, true)
			if r != want || s != wantShuffled {
				t.Fatalf("trial %d (n=%d, |A|=%d, |B|=%d, %v): counts (%d, %d), want (%d, %d)", trial, n, a.Cardinality, b.Cardinality, pol, r, s, want, wantShuffled)
			}
			if r, s := v.OCMeasureCounts(p, a, b, pol, false); r != 0 || s != wantShuffled {
				t.Fatalf("trial %d: counts without exact (%d, %d), want (0, %d)", trial, r, s, wantShuffled)
			}
			if s := v.OCShuffledRemovals(p, a, b, pol); s != wantShuffled {
				t.Fatalf("trial %d: OCShuffledRemovals %d, want %d", trial, s, wantShuffled)
			}
		}
	}
}

// TestOCShuffleBoundOf checks the bound from each column's largest groups
// against OCShuffleBound, which counts both columns class by class.
func TestOCShuffleBoundOf(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(25, 3))
	v := NewValidator()
	var ga, gb []uint32
	for trial := range 300 {
		n := 1 + rng.IntN(800)
		p := ColumnPartition(randomColumn(rng, n, 1+rng.IntN(n)))
		a := randomColumn(rng, n, 1+rng.IntN(50))
		b := randomColumn(rng, n, 1+rng.IntN(500))
		ga = v.ClassGroupMax(p, a, ga)
		gb = v.ClassGroupMax(p, b, gb)
		if got, want := OCShuffleBoundOf(p, ga, gb), v.OCShuffleBound(p, a, b); got != want {
			t.Fatalf("trial %d: OCShuffleBoundOf %d, OCShuffleBound %d", trial, got, want)
		}
	}
}

// TestOFDStrengthWithin checks OFDStrengthWithin's chance model against
// its definition: on small random tables, the expected impurity of X: [] ->
// A is the average of X's impurity over every permutation of A within each
// class of Y (Y = X less one column), enumerated; and with Y empty (one
// class) the measure is OFDStrength's.
func TestOFDStrengthWithin(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 7))
	impurity := func(x *StrippedPartition, ranks []uint32) float64 {
		var sum float64
		for i := 0; i < x.NumClasses(); i++ {
			cls := x.Class(i)
			count := map[uint32]float64{}
			for _, r := range cls {
				count[ranks[r]]++
			}
			sq := 0.0
			for _, k := range count {
				sq += k * k
			}
			sum += float64(len(cls)) - sq/float64(len(cls))
		}
		return sum
	}
	// permutations calls f with every arrangement of ranks[rows] among
	// rows, restoring ranks after.
	var permutations func(ranks []uint32, rows []uint32, f func())
	permutations = func(ranks []uint32, rows []uint32, f func()) {
		if len(rows) <= 1 {
			f()
			return
		}
		for i := range rows {
			ranks[rows[0]], ranks[rows[i]] = ranks[rows[i]], ranks[rows[0]]
			permutations(ranks, rows[1:], f)
			ranks[rows[0]], ranks[rows[i]] = ranks[rows[i]], ranks[rows[0]]
		}
	}
	v := NewValidator()
	for trial := range 40 {
		n := 2 + rng.IntN(6)
		tab := &table.Table{Rows: n, Columns: []table.Column{*randomColumn(rng, n, 2), *randomColumn(rng, n, 3), *randomColumn(rng, n, 3)}}
		x, y, a := PartitionOf(tab, []int{0, 1}), PartitionOf(tab, []int{0}), &tab.Columns[2]
		observed, expected := v.ofdWithinCounts(x, y, a)
		ranks := append([]uint32(nil), a.Ranks...)
		var sum, count float64
		var each func(k int)
		each = func(k int) {
			if k == y.NumClasses() {
				sum += impurity(x, ranks)
				count++
				return
			}
			permutations(ranks, y.Class(k), func() { each(k + 1) })
		}
		each(0)
		if math.Abs(observed-impurity(x, a.Ranks)) > 1e-9 || math.Abs(expected-sum/count) > 1e-9 {
			t.Fatalf("trial %d: observed %v expected %v, want %v and %v", trial, observed, expected, impurity(x, a.Ranks), sum/count)
		}
		full := FullPartition(n)
		if got, want := v.OFDStrengthWithin(x, full, a), v.OFDStrength(x, a, ColumnPdep(a)); math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d: within {} %v, want OFDStrength's %v", trial, got, want)
		}
	}
}
