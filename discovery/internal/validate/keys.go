package validate

import (
	"context"
	"math"
	"math/bits"
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// keySearch finds the reliable minimal keys of one table: the column sets
// X whose partition leaves at most the eps budget of rows to remove for X
// to identify every record (n - |dom X| <= floor(eps n), on all records),
// no proper subset of which does, with a strength of at least
// KeyOptions.MinStrength. It is used by one goroutine.
//
// A set is a key by its number of distinct values alone, and that number
// is bounded from above without reading a row: a set Y has at most
// |dom S| * |dom C| values for each direct subset S = Y \ {C}. The search
// keeps that bound (or the count, where it was made) for every set that
// is no key, and counts a candidate only when its bound reaches n minus
// the budget. A key of the largest size searched is found only to be
// listed, as no larger set reads it, so a candidate there that chance
// alone would pass (chanceBound, from its subsets' counts) is not counted
// at all; below that size such a key is counted, for minimality, but not
// measured. Partitions are made only for the sets a count or a strength
// reads, each from the set without its highest column, as the search
// without the bounds made them.
type keySearch struct {
	t      *table.Table
	opts   KeyOptions
	ev     *Evidence
	budget int
	v      *Validator
	pdep   []float64 // of each column over the distinct records
	root   *StrippedPartition
	// cols are the columns' partitions, each made once (colPartition);
	// seen and mark say which of a column's values a class holds, and
	// times how often (within).
	cols  []*StrippedPartition
	seen  []uint32
	times []uint32
	mark  uint32
	// sets holds every set found no key so far, by its columns, and the
	// empty set.
	sets map[uint64]*keySet
}

// keySet is a column set that is no key.
type keySet struct {
	// distinct is at least the set's number of distinct values over all
	// rows: the count when one was made (counted), the bound otherwise.
	distinct int
	// pairs is, when counted, the number of pairs of rows that agree on
	// the set (chanceBound reads it).
	pairs   uint64
	counted bool
	// part is its partition, nil until partition makes it.
	part *StrippedPartition
}

// KeyOptions say which keys FindKeys looks for.
type KeyOptions struct {
	// Eps is the keys' approximation threshold.
	Eps float64
	// MaxColumns bounds a key's columns.
	MaxColumns int
	// MinStrength is the least strength of a key returned.
	MinStrength float64
	// NoBound counts every candidate and measures every key, without the
	// bounds of keySearch: for the tests that compare.
	NoBound bool
	// Pause, when not nil, is passed before each candidate
	// (discovery.Options.Pause); its error is returned as it is.
	Pause func(context.Context) error
}

// FoundKey is one minimal key with its measures.
type FoundKey struct {
	Cols     []int
	Removals int
	Score    float64
	Strength float64
}

// FindKeys returns the minimal keys of t that opts asks for (keySearch),
// in the order found (by size, then by columns), their strengths judged
// on ev, t's distinct records. A candidate is a key or not by its
// removals alone (within), which need no partition of its own.
func FindKeys(ctx context.Context, t *table.Table, ev *Evidence, opts KeyOptions) ([]FoundKey, error) {
	ks := &keySearch{t: t, opts: opts, ev: ev, budget: RemovalBudget(opts.Eps, t.Rows), v: NewValidator(),
		cols: make([]*StrippedPartition, len(t.Columns)), sets: map[uint64]*keySet{0: {distinct: min(t.Rows, 1), part: FullPartition(t.Rows)}}}
	for i := range t.Columns {
		ks.pdep = append(ks.pdep, ks.ev.Pdep(&t.Columns[i]))
	}
	ks.root = ks.ev.Of(FullPartition(t.Rows))
	var keys []FoundKey
	prev := []uint64{0}
	for k := 1; k <= opts.MaxColumns && len(prev) > 0; k++ {
		var next []uint64
		for _, x := range prev {
			for c := len(t.Columns) - 1; c >= 0 && x&(1<<c) == 0; c-- {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if opts.Pause != nil {
					if err := opts.Pause(ctx); err != nil {
						return nil, err
					}
				}
				y := x | 1<<c
				if !ks.allSubsetsIn(y) {
					continue
				}
				// A key chance alone passes has strength 0: at the last
				// size it need not be counted, below it only measured.
				last, byChance := k == opts.MaxColumns, !opts.NoBound && opts.MinStrength > 0
				if last && byChance && ks.chanceBound(y) {
					continue
				}
				set, removals, key := ks.count(y, x, c, last)
				if !key {
					if !last {
						ks.sets[y] = &set
						next = append(next, y)
					}
					continue
				}
				if !last && byChance && ks.chanceBound(y) {
					continue
				}
				if found := ks.measure(y, removals); found.Strength >= opts.MinStrength {
					keys = append(keys, found)
				}
			}
		}
		slices.Sort(next)
		prev = next
	}
	return keys, nil
}

// count decides whether y = x with column c is a key, returning its
// removals when it is. When it is not, set.distinct is at least its
// number of distinct values: its bound when that is below n minus the
// budget, else its count within x's classes (when last, no larger set
// reads it, and the count stops once past the budget, leaving a bound).
func (ks *keySearch) count(y, x uint64, c int, last bool) (set keySet, removals int, key bool) {
	n := ks.t.Rows
	bound := ks.distinctBound(y)
	if !ks.opts.NoBound && bound < n-ks.budget {
		return keySet{distinct: bound}, 0, false
	}
	budget := -1
	if last {
		budget = ks.budget
	}
	removals, pairs, ok := ks.within(ks.partition(x), &ks.t.Columns[c], budget)
	return keySet{distinct: n - removals, pairs: pairs, counted: ok}, removals, ok && removals <= ks.budget
}

// distinctBound is the least of |dom S| * |dom C| over y's direct
// subsets S = y \ {C} (each in ks.sets), at most the rows.
func (ks *keySearch) distinctBound(y uint64) int {
	bound := ks.t.Rows
	for rest := y; rest != 0; rest &= rest - 1 {
		c := bits.TrailingZeros64(rest)
		s := ks.sets[y&^(1<<c)]
		if s.distinct <= bound/max(ks.t.Columns[c].Cardinality, 1) {
			bound = min(bound, s.distinct*ks.t.Columns[c].Cardinality)
		}
	}
	return bound
}

// partition returns the partition of y, a set in ks.sets, made on first
// use from the set without its highest column.
func (ks *keySearch) partition(y uint64) *StrippedPartition {
	s := ks.sets[y]
	if s.part == nil {
		s.part = ks.product(y)
	}
	return s.part
}

// product makes the partition of y from that of y without its highest
// column.
func (ks *keySearch) product(y uint64) *StrippedPartition {
	top := 63 - bits.LeadingZeros64(y)
	return ks.v.Product(ks.partition(y&^(1<<top)), ks.colPartition(top))
}

// colPartition is column c's partition, made on first use (a column is
// multiplied into many candidates).
func (ks *keySearch) colPartition(c int) *StrippedPartition {
	if ks.cols[c] == nil {
		ks.cols[c] = ColumnPartition(&ks.t.Columns[c])
	}
	return ks.cols[c]
}

// within returns the removals of p's context with column c (per class of
// p, its records beyond the first of each value of c) and its pairs of
// rows that agree on both. With budget >= 0 it stops reading p's classes
// once the removals pass it, and then returns what it counted so far with
// ok false; with budget < 0 it returns the counts.
func (ks *keySearch) within(p *StrippedPartition, c *table.Column, budget int) (removals int, pairs uint64, ok bool) {
	if len(ks.seen) < c.Cardinality {
		ks.seen, ks.times = make([]uint32, c.Cardinality), make([]uint32, c.Cardinality)
		ks.mark = 0
	}
	for i := 0; i < p.NumClasses(); i++ {
		ks.nextMark()
		cls := p.Class(i)
		values := 0
		for _, r := range cls {
			v := c.Ranks[r]
			if ks.seen[v] != ks.mark {
				ks.seen[v], ks.times[v] = ks.mark, 1
				values++
			} else {
				pairs += uint64(ks.times[v])
				ks.times[v]++
			}
		}
		if removals += len(cls) - values; budget >= 0 && removals > budget {
			return removals, pairs, false
		}
	}
	return removals, pairs, true
}

// nextMark starts a new count of values in within: seen[v] == mark says
// value v was seen in the class being counted.
func (ks *keySearch) nextMark() {
	if ks.mark++; ks.mark == 0 {
		clear(ks.seen)
		ks.mark = 1
	}
}

// allSubsetsIn reports whether every direct subset of y is in ks.sets
// (none of them a key).
func (ks *keySearch) allSubsetsIn(y uint64) bool {
	for rest := y; rest != 0; rest &= rest - 1 {
		if _, ok := ks.sets[y&^(rest&-rest)]; !ok {
			return false
		}
	}
	return true
}

// measure returns the key y of the given removals with its strength;
// its partition is made only when the strength needs it: a key chance
// alone would pass (KeyStrengthAt's 0) has strength 0, and its score is
// left 0 (no caller lists such a key: Summarize adds the reliable ones).
func (ks *keySearch) measure(y uint64, removals int) FoundKey {
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
			rest = ks.ev.Of(ks.partition(y &^ (1 << c)))
		}
		rests, pdeps = append(rests, rest), append(pdeps, ks.pdep[c])
	}
	expected := KeyExpected(rests, pdeps)
	if chanceWithin(expected, ks.ev.N, ks.opts.Eps) {
		return key
	}
	evp := ks.ev.Of(ks.product(y))
	key.Score, key.Strength = evp.Score(), KeyStrength(evp, expected)
	return key
}

// chanceBound reports whether chance alone is known to pass the key y's
// eps test (chanceWithin of KeyExpected) from the counts of its direct
// subsets, with no partition made: for each column C whose rest S = y \
// {C} was counted, or is one column, chanceCollisions over S's classes on
// the distinct records is at most both S's removals over all records and
// C's pdep times S's pairs of agreeing rows (a class of the distinct
// records is part of one of all records). On a monitor's window 94 of 96
// keys are decided so.
func (ks *keySearch) chanceBound(y uint64) bool {
	budget := RemovalBudget(ks.opts.Eps, ks.ev.N)
	if ks.ev.N == 0 || budget == 0 {
		return false
	}
	for rest := y; rest != 0; rest &= rest - 1 {
		c := bits.TrailingZeros64(rest)
		var removals int
		var pairs uint64
		switch s := ks.sets[y&^(1<<c)]; {
		case s.counted:
			removals, pairs = ks.t.Rows-s.distinct, s.pairs
		case bits.OnesCount64(y) == 2:
			p := ks.colPartition(bits.TrailingZeros64(y &^ (1 << c)))
			removals, pairs = p.Covered()-p.NumClasses(), agreeingPairs(p)
		default:
			continue
		}
		// The slack keeps a bound that floating sums put at the budget
		// on the side of the exact computation.
		if bound := min(float64(removals), float64(pairs)*ks.pdep[c]); bound*(1+1e-9) < float64(budget) {
			return true
		}
	}
	return false
}

// agreeingPairs returns the pairs of rows in one class of p.
func agreeingPairs(p *StrippedPartition) (pairs uint64) {
	for i := 0; i < p.NumClasses(); i++ {
		m := uint64(p.Starts[i+1] - p.Starts[i])
		pairs += m * (m - 1) / 2
	}
	return pairs
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
