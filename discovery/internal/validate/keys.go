package validate

import (
	"context"
	"math"
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// keySearch finds the minimal keys of one table: the column sets X whose
// partition leaves at most the eps budget of rows to remove for X to
// identify every record (n - |dom X| <= floor(eps n), on all records), no
// proper subset of which does. It is used by one goroutine.
type keySearch struct {
	t      *table.Table
	eps    float64
	ev     *Evidence
	budget int
	v      *Validator
	pdep   []float64 // of each column over the distinct records
	root   *StrippedPartition
	// cols are the columns' partitions, each made once (colPartition);
	// seen and mark count a column's values within a class (within).
	cols []*StrippedPartition
	seen []uint32
	mark uint32
}

// FoundKey is one minimal key with its measures (Score 0 when Strength is
// 0 by chance: see keySearch.measure).
type FoundKey struct {
	Cols     []int
	Removals int
	Score    float64
	Strength float64
}

// FindKeys returns the minimal keys of t of at most maxColumns columns, in
// the order found (by size, then by columns), their strengths judged on
// ev, t's distinct records. It passes pause, when not nil, before each
// candidate (discovery.Options.Pause), and returns its error as it is. A candidate is a key or not by its removals alone (within),
// which need no partition: its partition is made only for the next level
// to extend, or for the strength of a key chance alone would not pass.
func FindKeys(ctx context.Context, t *table.Table, eps float64, maxColumns int, ev *Evidence, pause func(context.Context) error) ([]FoundKey, error) {
	ks := &keySearch{t: t, eps: eps, ev: ev, budget: RemovalBudget(eps, t.Rows), v: NewValidator(), cols: make([]*StrippedPartition, len(t.Columns))}
	for i := range t.Columns {
		ks.pdep = append(ks.pdep, ks.ev.Pdep(&t.Columns[i]))
	}
	ks.root = ks.ev.Of(FullPartition(t.Rows))
	var keys []FoundKey
	prev := map[uint64]*StrippedPartition{0: FullPartition(t.Rows)}
	for k := 1; k <= maxColumns && len(prev) > 0; k++ {
		next := map[uint64]*StrippedPartition{}
		for _, x := range sortedSets(prev) {
			for c := len(t.Columns) - 1; c >= 0 && x&(1<<c) == 0; c-- {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if pause != nil {
					if err := pause(ctx); err != nil {
						return nil, err
					}
				}
				y := x | 1<<c
				if !allSubsetsIn(y, prev) {
					continue
				}
				product := func() *StrippedPartition { return ks.v.Product(prev[x], ks.colPartition(c)) }
				if removals, ok := ks.within(prev[x], &t.Columns[c]); ok {
					keys = append(keys, ks.measure(y, product, removals, prev))
				} else if k < maxColumns {
					next[y] = product() // the next level extends it
				}
			}
		}
		prev = next
	}
	return keys, nil
}

// colPartition is column c's partition, made on first use (a column is
// multiplied into many candidates).
func (ks *keySearch) colPartition(c int) *StrippedPartition {
	if ks.cols[c] == nil {
		ks.cols[c] = ColumnPartition(&ks.t.Columns[c])
	}
	return ks.cols[c]
}

// within returns the removals of p's context with column c (per class
// of p, its records beyond the first of each value of c) when they are
// within the budget (ok); it reads p's classes until they pass it.
func (ks *keySearch) within(p *StrippedPartition, c *table.Column) (removals int, ok bool) {
	for i := 0; i < p.NumClasses(); i++ {
		ks.nextMark()
		cls := p.Class(i)
		values := 0
		for _, r := range cls {
			v := c.Ranks[r]
			if int(v) >= len(ks.seen) {
				ks.seen = append(ks.seen, make([]uint32, max(int(v)+1, 2*len(ks.seen))-len(ks.seen))...)
			}
			if ks.seen[v] != ks.mark {
				ks.seen[v] = ks.mark
				values++
			}
		}
		if removals += len(cls) - values; removals > ks.budget {
			return 0, false
		}
	}
	return removals, true
}

// nextMark starts a new count of values in within: seen[v] == mark says
// value v was seen in the class being counted.
func (ks *keySearch) nextMark() {
	if ks.mark++; ks.mark == 0 {
		clear(ks.seen)
		ks.mark = 1
	}
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

// measure returns the key y with its strength; partition makes its
// partition, only when the strength needs it: a key chance alone would
// pass (KeyStrengthAt's 0) has strength 0, and its score is left 0 (no
// caller lists such a key: Summarize adds the reliable ones).
func (ks *keySearch) measure(y uint64, partition func() *StrippedPartition, removals int, subsets map[uint64]*StrippedPartition) FoundKey {
	key := FoundKey{Removals: removals}
	var rests []*StrippedPartition
	var pdeps []float64
	for c := range ks.t.Columns {
		if y&(1<<c) == 0 {
			continue
		}
		key.Cols = append(key.Cols, c)
		rest := ks.root
		if y != 1<<c {
			rest = ks.ev.Of(subsets[y&^(1<<c)])
		}
		rests, pdeps = append(rests, rest), append(pdeps, ks.pdep[c])
	}
	expected := KeyExpected(rests, pdeps)
	if chanceWithin(expected, ks.ev.N, ks.eps) {
		return key
	}
	evp := ks.ev.Of(partition())
	key.Score, key.Strength = evp.Score(), KeyStrength(evp, expected)
	return key
}

// KeyStrengthAt is the strength of a key at eps, evp being its partition over the
// distinct records and rests and pdeps KeyExpected's: 0 when the
// records chance would leave together are within the eps budget of the
// distinct records, since chance alone would then pass the key's eps test
// (a near-unique column with any other: ncvoter-100k's column 3, 90,780
// values in 100,000 records, with column 1 drawn at random leaves 1,219
// records together, within the budget of 5,000), KeyStrength
// otherwise. An eps of 0 (Validate without one) has no budget.
func KeyStrengthAt(evp *StrippedPartition, rests []*StrippedPartition, pdeps []float64, eps float64) float64 {
	expected := KeyExpected(rests, pdeps)
	if chanceWithin(expected, evp.N, eps) {
		return 0
	}
	return KeyStrength(evp, expected)
}

// chanceWithin reports whether the records chance would leave together,
// expected, are within the eps budget of n distinct records (KeyStrengthAt).
func chanceWithin(expected float64, n int, eps float64) bool {
	return n > 0 && expected <= float64(RemovalBudget(eps, n)) && RemovalBudget(eps, n) > 0
}

// RemovalBudget is the largest number of removals a dependency may need to
// be valid at eps on n rows: floor(eps*n). A tiny slack absorbs the binary
// rounding of products such as 0.29*100 = 28.999999999999996.
func RemovalBudget(eps float64, n int) int {
	if n <= 0 || !(eps > 0) {
		return 0
	}
	if eps >= 1 {
		return n
	}
	b := int(math.Floor(eps*float64(n) + 1e-9))
	return min(b, n)
}
