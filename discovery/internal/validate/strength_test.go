package validate

import (
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
