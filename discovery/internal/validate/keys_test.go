package validate

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
)

// TestKeyCountBound: a pair of columns with 3 and 4 values over 100 rows
// has at most 12 distinct values, so at eps 0.1 it is no key without a
// row read (its subset's partition stays unmade) and keeps 12 as its
// bound; with noBound it is counted, and the count is within the bound.
// A pair with a near-unique column is counted either way.
func TestKeyCountBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, b, u := randomColumn(rng, 100, 3), randomColumn(rng, 100, 4), randomColumn(rng, 100, 95)
	tab := &table.Table{Rows: 100, Columns: []table.Column{*a, *b, *u}}
	for _, noBound := range []bool{false, true} {
		ks := &keySearch{t: tab, budget: RemovalBudget(0.1, 100), v: NewValidator(), opts: KeyOptions{NoBound: noBound},
			cols: make([]*StrippedPartition, 3), sets: map[uint64]*keySet{0: {distinct: 1, part: FullPartition(100)}}}
		for c := range 3 {
			ks.sets[1<<c] = &keySet{distinct: tab.Columns[c].Cardinality}
		}
		set, _, key := ks.count(0b011, 0b001, 1, false)
		distinct := set.distinct
		if key || distinct > 12 {
			t.Fatalf("noBound %v: {a,b} distinct %d, key %v", noBound, distinct, key)
		}
		if counted := ks.sets[0b001].part != nil; counted != noBound {
			t.Fatalf("noBound %v: {a,b} counted %v (distinct %d)", noBound, counted, distinct)
		}
		if noBound && distinct != exactDistinct(a, b) {
			t.Fatalf("{a,b} counted %d distinct, want %d", distinct, exactDistinct(a, b))
		}
		if _, _, _ = ks.count(0b101, 0b001, 2, false); ks.sets[0b001].part == nil {
			t.Fatalf("noBound %v: {a,u} (bound %d) not counted", noBound, ks.distinctBound(0b101))
		}
	}
}

// exactDistinct counts the distinct pairs of a and b.
func exactDistinct(a, b *table.Column) int {
	seen := map[[2]uint32]bool{}
	for r := range a.Ranks {
		seen[[2]uint32{a.Ranks[r], b.Ranks[r]}] = true
	}
	return len(seen)
}

// TestKeyChanceBound: over 1,000 rows, u holds 900 values (100 rows
// repeat one) and f four values drawn at random, so {u,f} is a key at eps
// 0.05 (about 25 of the 100 repeats agree on f, within the budget of 50)
// that chance alone passes: f's pdep of about 1/4 times u's 100 pairs is
// within it. chanceBound decides that from u's classes without a product,
// and FindKeys returns the same keys, measures included, without it; as
// the last size searched it is not counted, and no reliable key is found.
func TestKeyChanceBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 1000
	u := &table.Column{Ranks: make([]uint32, n), Cardinality: 900}
	for r := range n {
		u.Ranks[r] = uint32(r % 900)
	}
	f := randomColumn(rng, n, 4)
	tab := &table.Table{Rows: n, Columns: []table.Column{*u, *f}}
	ev := NewEvidence(tab, 0.12)
	var found [2][]FoundKey
	for i, noBound := range []bool{false, true} {
		keys, err := FindKeys(context.Background(), tab, ev, KeyOptions{Eps: 0.05, MaxColumns: 3, MinStrength: -1, NoBound: noBound})
		if err != nil {
			t.Fatal(err)
		}
		found[i] = keys
	}
	if len(found[0]) != 1 || !slices.Equal(found[0][0].Cols, []int{0, 1}) {
		t.Fatalf("keys %+v, want {u,f}", found[0])
	}
	if !reflect.DeepEqual(found[0], found[1]) {
		t.Fatalf("with the bounds %+v, without %+v", found[0], found[1])
	}
	for _, noBound := range []bool{false, true} {
		keys, err := FindKeys(context.Background(), tab, ev, KeyOptions{Eps: 0.05, MaxColumns: 2, MinStrength: 0.5, NoBound: noBound})
		if err != nil || len(keys) != 0 {
			t.Fatalf("noBound %v: reliable keys %+v, %v; want none", noBound, keys, err)
		}
	}
	ks := &keySearch{t: tab, opts: KeyOptions{Eps: 0.05}, ev: ev, cols: make([]*StrippedPartition, 2), pdep: []float64{ev.Pdep(u), ev.Pdep(f)},
		sets: map[uint64]*keySet{0b01: {distinct: 900}, 0b10: {distinct: 4}}}
	if !ks.chanceBound(0b11) {
		t.Fatal("chanceBound does not decide {u,f}")
	}
}
