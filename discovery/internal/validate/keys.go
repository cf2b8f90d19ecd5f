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
}

// FoundKey is one minimal key with its measures.
type FoundKey struct {
	Cols     []int
	Removals int
	Score    float64
	Strength float64
}

// FindKeys returns the minimal keys of t of at most maxColumns columns, in
// the order found (by size, then by columns), their strengths judged on
// ev, t's distinct records. It passes pause, when not nil, before each
// candidate's partition (discovery.Options.Pause), and returns its error
// as it is.
func FindKeys(ctx context.Context, t *table.Table, eps float64, maxColumns int, ev *Evidence, pause func(context.Context) error) ([]FoundKey, error) {
	ks := &keySearch{t: t, eps: eps, ev: ev, budget: RemovalBudget(eps, t.Rows), v: NewValidator()}
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

// measure returns the key y, p being its partition, with its strength.
func (ks *keySearch) measure(y uint64, p *StrippedPartition, removals int, subsets map[uint64]*StrippedPartition) FoundKey {
	evp := ks.ev.Of(p)
	key := FoundKey{Removals: removals, Score: evp.Score()}
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
	key.Strength = KeyStrengthAt(evp, rests, pdeps, ks.eps)
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
	if evp.N > 0 && expected <= float64(RemovalBudget(eps, evp.N)) && RemovalBudget(eps, evp.N) > 0 {
		return 0
	}
	return KeyStrength(evp, expected)
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
