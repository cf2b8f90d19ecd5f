package discovery

import (
	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// Evidence from distinct records (docs/DESIGN.md, "Strength"): a record
// that repeats another exactly, in every column, is the same fact seen
// again, not independent evidence for a rule. Strength, score and the
// reliable verdict are therefore judged on the distinct records, while
// errors, removals and the eps test stay on all records, as the paper
// defines them.

// A dependency that mentions every column of the table is the exception:
// its records are nothing but its own values, so a repeat is more of its
// evidence, not a record seen again (the afd-syn tables have two columns,
// and on their distinct records every genuine FD with noise would look
// like none). It is judged on all records, and the repeated support below
// does not apply to it: its classes of two distinct records are its
// violations.

// evidence says which rows of a table are distinct records: the first row
// of each class of identical rows. It is read-only once built, so the
// lattice's workers share it.
type evidence struct {
	// first[r] is true when row r is the first of its identical rows; nil
	// when every row is distinct, and then every partition is its own
	// evidence.
	first []bool
	// n is the number of distinct records.
	n int
	// spanning marks the evidence of the dependencies that mention every
	// column: all records, without the repeated-support test.
	spanning bool
	// minSupport is listingTuning's.
	minSupport float64
}

// newEvidence returns the distinct records of t (found once per table:
// table.Table.Distinct), judged with the given tuning.
func newEvidence(t *table.Table, tune listingTuning) *evidence {
	d := t.Distinct()
	return &evidence{first: d.First, n: d.N, minSupport: tune.minSupport}
}

// of returns p restricted to the distinct records: over e.n rows, each
// class keeping its first rows, and dropped when fewer than two remain.
// Row ids stay the table's, so columns index it as they index p.
func (e *evidence) of(p *validate.StrippedPartition) *validate.StrippedPartition {
	if e.first == nil {
		return p
	}
	q := &validate.StrippedPartition{N: e.n, Starts: []uint32{0}}
	for i := 0; i < p.NumClasses(); i++ {
		start := len(q.Rows)
		for _, r := range p.Class(i) {
			if e.first[r] {
				q.Rows = append(q.Rows, r)
			}
		}
		if len(q.Rows)-start < 2 {
			q.Rows = q.Rows[:start]
			continue
		}
		q.Starts = append(q.Starts, uint32(len(q.Rows)))
	}
	if len(q.Starts) == 1 {
		q.Starts = nil
	}
	q.SortBySize()
	return q
}

// supported reports whether the evidence partition p of a context has
// repeated support: at least minSupport of the distinct records in
// classes of two or more.
func (e *evidence) supported(p *validate.StrippedPartition) bool {
	return e.spanning || e.n > 0 && float64(p.Covered()) >= e.minSupport*float64(e.n)
}

// pdep is validate.ColumnPdep of c over the distinct records.
func (e *evidence) pdep(c *table.Column) float64 {
	if e.first == nil {
		return validate.ColumnPdep(c)
	}
	if e.n == 0 {
		return 1
	}
	counts := make([]uint64, c.Cardinality)
	for r, x := range c.Ranks {
		if e.first[r] {
			counts[x]++
		}
	}
	var sum float64
	for _, k := range counts {
		sum += float64(k * k)
	}
	return sum / (float64(e.n) * float64(e.n))
}

// ofdMeasure is the chance-corrected measure of X: [] -> A on the distinct
// records, ev being X's evidence partition and pdepA A's pdep there: 0
// without repeated support.
func (e *evidence) ofdMeasure(v *validate.Validator, ev *validate.StrippedPartition, a *table.Column, pdepA float64) float64 {
	if ev.N == 0 {
		return NoStrength
	}
	if !e.supported(ev) {
		return 0
	}
	return v.OFDStrength(ev, a, pdepA)
}

// ocMeasure is the chance-corrected measure of X: A ~ B (pol) on the
// distinct records, ev being X's evidence partition and removals those of
// all records, which are the distinct records' when every row is
// distinct (removals < 0: not known); counts counts in ev the shuffled
// removals and, when asked (exact), the removals. It is 0 without
// repeated support.
func (e *evidence) ocMeasure(ev *validate.StrippedPartition, removals int, counts ocCounter) float64 {
	if ev.N == 0 {
		return NoStrength
	}
	if !e.supported(ev) {
		return 0
	}
	exact := e.first != nil || removals < 0
	r, shuffled := counts(ev, exact)
	if exact {
		removals = r
	}
	return validate.OCStrengthOf(ev.N, removals, float64(shuffled))
}

// ocCounter counts in a partition what an OC's measure reads: its
// removals when exact (0 otherwise) and its shuffled removals
// (validate.OCShuffledRemovals).
type ocCounter func(p *validate.StrippedPartition, exact bool) (removals, shuffled int)

// ocCounts is the ocCounter of A ~ B (pol) with the given validator's
// removals: both counts in one pass for the exact one, the iterative
// baseline's removals next to the shuffle otherwise.
func ocCounts(v *validate.Validator, a, b *table.Column, pol Polarity, validator ValidatorKind) ocCounter {
	if validator == ValidatorIterative {
		return func(p *validate.StrippedPartition, exact bool) (removals, shuffled int) {
			if exact {
				removals = v.OCRemovalsIterative(p, a, b, pol, -1)
			}
			return removals, v.OCShuffledRemovals(p, a, b, pol)
		}
	}
	return func(p *validate.StrippedPartition, exact bool) (int, int) {
		return v.OCMeasureCounts(p, a, b, pol, exact)
	}
}

// evidence returns the distinct records of the validator's table, found
// once.
func (vs *depValidator) evidence() *evidence {
	if vs.ev == nil {
		vs.ev = newEvidence(vs.t, vs.tune)
	}
	return vs.ev
}

// rowEvidence is the evidence of all records, which the dependencies that
// mention every column are judged on, with the columns' pdep over them.
type rowEvidence struct {
	ev   evidence // every row counts: first is nil
	pdep []float64
}

// pdepOf is c's pdep over all records: distinct's when every row is
// distinct.
func (r *rowEvidence) pdepOf(distinct *evidence, pdep float64, c *table.Column) float64 {
	if distinct.first == nil {
		return pdep
	}
	return validate.ColumnPdep(c)
}

// evidenceFor returns the evidence a dependency with context n over the
// columns cols besides is judged on, n's partition in it and the columns'
// pdep there: all records when the dependency mentions every column, the
// distinct records otherwise.
func (l *lattice) evidenceFor(n *latNode, cols uint64) (*evidence, *validate.StrippedPartition, []float64) {
	if n.set|cols != l.all {
		return l.ev, l.evidOf(n), l.pdep
	}
	return &l.rows.ev, n.part, l.rows.pdep
}

// spansTable reports whether the named columns are every column of the
// validator's table (duplicates and unknown names aside).
func (vs *depValidator) spansTable(names ...[]string) bool {
	seen := map[int]bool{}
	for _, ns := range names {
		for _, name := range ns {
			if i, ok := vs.index[name]; ok {
				seen[i] = true
			}
		}
	}
	return len(seen) == len(vs.t.Columns)
}

// evidenceOf returns the evidence a dependency over the named columns is
// judged on: all records when they are every column of the table, the
// distinct records otherwise.
func (vs *depValidator) evidenceOf(names ...[]string) *evidence {
	if vs.spansTable(names...) {
		return &evidence{n: vs.t.Rows, spanning: true}
	}
	return vs.evidence()
}
