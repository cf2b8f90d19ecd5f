package discovery

import (
	"context"
	"math"
	"slices"
)

// maxKeyColumns bounds the keys Summarize looks for: a key of four or more
// columns is almost always the accident of measurement columns combined,
// and the search grows with the number of column sets.
const maxKeyColumns = 3

// keySearch finds the minimal keys of one table: the column sets X whose
// partition leaves at most the eps budget of rows to remove for X to
// identify every record (n - |dom X| <= floor(eps n), on all records), no
// proper subset of which does. It is used by one goroutine.
type keySearch struct {
	t      *Table
	ev     *evidence
	budget int
	v      *Validator
	pdep   []float64 // of each column over the distinct records
	root   *StrippedPartition
}

// foundKey is one minimal key with its measures.
type foundKey struct {
	cols     []int
	removals int
	score    float64
	strength float64
}

// findKeys returns the minimal keys of t of at most maxColumns columns, in
// the order found (by size, then by columns).
func findKeys(ctx context.Context, t *Table, eps float64, maxColumns int) ([]foundKey, error) {
	ks := &keySearch{t: t, ev: newEvidence(t), budget: RemovalBudget(eps, t.Rows), v: NewValidator()}
	for i := range t.Columns {
		ks.pdep = append(ks.pdep, ks.ev.pdep(&t.Columns[i]))
	}
	ks.root = ks.ev.of(FullPartition(t.Rows))
	var keys []foundKey
	prev := map[uint64]*StrippedPartition{0: FullPartition(t.Rows)}
	for k := 1; k <= maxColumns && len(prev) > 0; k++ {
		next := map[uint64]*StrippedPartition{}
		for _, x := range sortedSets(prev) {
			for c := len(t.Columns) - 1; c >= 0 && x&(1<<c) == 0; c-- {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				y := x | 1<<c
				if !allSubsetsIn(y, prev) {
					continue
				}
				p := ks.v.Product(prev[x], ColumnPartition(&t.Columns[c]))
				if removals := p.Covered() - p.NumClasses(); removals <= ks.budget {
					keys = append(keys, ks.measure(y, p, removals, prev))
				} else {
					next[y] = p
				}
			}
		}
		prev = next
	}
	return keys, nil
}

// sortedSets returns the keys of m ascending.
func sortedSets(m map[uint64]*StrippedPartition) []uint64 {
	out := make([]uint64, 0, len(m))
	for x := range m {
		out = append(out, x)
	}
	slices.Sort(out)
	return out
}

// allSubsetsIn reports whether every direct subset of y is in m (none of
// them a key).
func allSubsetsIn(y uint64, m map[uint64]*StrippedPartition) bool {
	for rest := y; rest != 0; rest &= rest - 1 {
		if _, ok := m[y&^(rest&-rest)]; !ok {
			return false
		}
	}
	return true
}

// measure returns the key y, p being its partition, with its keyStrength.
func (ks *keySearch) measure(y uint64, p *StrippedPartition, removals int, subsets map[uint64]*StrippedPartition) foundKey {
	evp := ks.ev.of(p)
	key := foundKey{removals: removals, score: evp.Score()}
	var rests []*StrippedPartition
	var pdeps []float64
	for c := range ks.t.Columns {
		if y&(1<<c) == 0 {
			continue
		}
		key.cols = append(key.cols, c)
		rest := ks.root
		if y != 1<<c {
			rest = ks.ev.of(subsets[y&^(1<<c)])
		}
		rests, pdeps = append(rests, rest), append(pdeps, ks.pdep[c])
	}
	key.strength = keyStrength(evp, rests, pdeps)
	return key
}

// keyStrength is the strength of a key (docs/DESIGN.md, "Keys"), evp
// being its partition over the distinct records and, for each of its
// columns C, rests the partition of the rest of the key there and pdeps
// C's pdep: the records the key fails to tell apart against those chance
// would leave together, chance being the values of one of its columns
// drawn at random from the column's distribution within each class of the
// rest of the key (the column that earns the least decides).
func keyStrength(evp *StrippedPartition, rests []*StrippedPartition, pdeps []float64) float64 {
	if evp.N == 0 {
		return NoStrength
	}
	expected := math.Inf(1)
	for i, rest := range rests {
		expected = min(expected, chanceCollisions(rest, pdeps[i]))
	}
	return chanceCorrected(float64(evp.Covered()-evp.NumClasses()), expected)
}

// chanceCollisions is the number of records expected to share their class
// of p with an earlier one when a column of the given pdep is drawn at
// random within each class: per class of m records, about the pairs that
// agree, m(m-1)/2 pdep, and never more than m-1.
func chanceCollisions(p *StrippedPartition, pdep float64) float64 {
	var sum float64
	for i := 0; i < p.NumClasses(); i++ {
		m := float64(len(p.Class(i)))
		sum += min(m-1, m*(m-1)/2*pdep)
	}
	return sum
}
