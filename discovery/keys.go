package discovery

import (
	"context"
	"slices"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// keySearch finds the minimal keys of one table: the column sets X whose
// partition leaves at most the eps budget of rows to remove for X to
// identify every record (n - |dom X| <= floor(eps n), on all records), no
// proper subset of which does. It is used by one goroutine.
type keySearch struct {
	t      *table.Table
	eps    float64
	ev     *evidence
	budget int
	v      *validate.Validator
	pdep   []float64 // of each column over the distinct records
	root   *validate.StrippedPartition
}

// foundKey is one minimal key with its measures.
type foundKey struct {
	cols     []int
	removals int
	score    float64
	strength float64
}

// findKeys returns the minimal keys of t of at most maxColumns columns, in
// the order found (by size, then by columns). It passes pause, when not
// nil, before each candidate's partition (Options.Pause), and returns its
// error as it is.
func findKeys(ctx context.Context, t *table.Table, eps float64, maxColumns int, tune listingTuning, pause func(context.Context) error) ([]foundKey, error) {
	ks := &keySearch{t: t, eps: eps, ev: newEvidence(t, tune), budget: RemovalBudget(eps, t.Rows), v: validate.NewValidator()}
	for i := range t.Columns {
		ks.pdep = append(ks.pdep, ks.ev.Pdep(&t.Columns[i]))
	}
	ks.root = ks.ev.Of(validate.FullPartition(t.Rows))
	var keys []foundKey
	prev := map[uint64]*validate.StrippedPartition{0: validate.FullPartition(t.Rows)}
	for k := 1; k <= maxColumns && len(prev) > 0; k++ {
		next := map[uint64]*validate.StrippedPartition{}
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
				p := ks.v.Product(prev[x], validate.ColumnPartition(&t.Columns[c]))
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
func sortedSets(m map[uint64]*validate.StrippedPartition) []uint64 {
	out := make([]uint64, 0, len(m))
	for x := range m {
		out = append(out, x)
	}
	slices.Sort(out)
	return out
}

// allSubsetsIn reports whether every direct subset of y is in m (none of
// them a key).
func allSubsetsIn(y uint64, m map[uint64]*validate.StrippedPartition) bool {
	for rest := y; rest != 0; rest &= rest - 1 {
		if _, ok := m[y&^(rest&-rest)]; !ok {
			return false
		}
	}
	return true
}

// measure returns the key y, p being its partition, with its strength.
func (ks *keySearch) measure(y uint64, p *validate.StrippedPartition, removals int, subsets map[uint64]*validate.StrippedPartition) foundKey {
	evp := ks.ev.Of(p)
	key := foundKey{removals: removals, score: evp.Score()}
	var rests []*validate.StrippedPartition
	var pdeps []float64
	for c := range ks.t.Columns {
		if y&(1<<c) == 0 {
			continue
		}
		key.cols = append(key.cols, c)
		rest := ks.root
		if y != 1<<c {
			rest = ks.ev.Of(subsets[y&^(1<<c)])
		}
		rests, pdeps = append(rests, rest), append(pdeps, ks.pdep[c])
	}
	key.strength = keyStrength(evp, rests, pdeps, ks.eps)
	return key
}

// keyStrength is the strength of a key, evp being its partition over the
// distinct records and rests and pdeps validate.KeyExpected's: 0 when the
// records chance would leave together are within the eps budget of the
// distinct records, since chance alone would then pass the key's eps test
// (a near-unique column with any other: ncvoter-100k's column 3, 90,780
// values in 100,000 records, with column 1 drawn at random leaves 1,219
// records together, within the budget of 5,000), validate.KeyStrength
// otherwise. An eps of 0 (Validate without one) has no budget.
func keyStrength(evp *validate.StrippedPartition, rests []*validate.StrippedPartition, pdeps []float64, eps float64) float64 {
	expected := validate.KeyExpected(rests, pdeps)
	if evp.N > 0 && expected <= float64(RemovalBudget(eps, evp.N)) && RemovalBudget(eps, evp.N) > 0 {
		return 0
	}
	return validate.KeyStrength(evp, expected)
}
