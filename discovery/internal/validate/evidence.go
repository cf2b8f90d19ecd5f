package validate

import "github.com/odwatch/odwatch/discovery/table"

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

// Evidence says which rows of a table are distinct records: the first row
// of each class of identical rows. It is read-only once built, so the
// lattice's workers share it.
type Evidence struct {
	// First[r] is true when row r is the first of its identical rows; nil
	// when every row is distinct, and then every partition is its own
	// evidence.
	First []bool
	// N is the number of distinct records.
	N int
	// Spanning marks the evidence of the dependencies that mention every
	// column: all records, without the repeated-support test.
	Spanning bool
	// MinSupport is the repeated support a context needs (discovery's
	// listingTuning.minSupport).
	MinSupport float64
}

// NewEvidence returns the distinct records of t (found once per table:
// table.Table.Distinct), contexts needing minSupport of them repeated.
func NewEvidence(t *table.Table, minSupport float64) *Evidence {
	d := t.Distinct()
	return &Evidence{First: d.First, N: d.N, MinSupport: minSupport}
}

// Of returns p restricted to the distinct records: over e.N rows, each
// class keeping its first rows, and dropped when fewer than two remain.
// Row ids stay the table's, so columns index it as they index p.
func (e *Evidence) Of(p *StrippedPartition) *StrippedPartition {
	if e.First == nil {
		return p
	}
	q := &StrippedPartition{N: e.N, Starts: []uint32{0}}
	for i := 0; i < p.NumClasses(); i++ {
		start := len(q.Rows)
		for _, r := range p.Class(i) {
			if e.First[r] {
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

// Supported reports whether the evidence partition p of a context has
// repeated support: at least minSupport of the distinct records in
// classes of two or more.
func (e *Evidence) Supported(p *StrippedPartition) bool {
	return e.Spanning || e.N > 0 && float64(p.Covered()) >= e.MinSupport*float64(e.N)
}

// Pdep is ColumnPdep of c over the distinct records.
func (e *Evidence) Pdep(c *table.Column) float64 {
	if e.First == nil {
		return ColumnPdep(c)
	}
	if e.N == 0 {
		return 1
	}
	counts := make([]uint64, c.Cardinality)
	for r, x := range c.Ranks {
		if e.First[r] {
			counts[x]++
		}
	}
	var sum float64
	for _, k := range counts {
		sum += float64(k * k)
	}
	return sum / (float64(e.N) * float64(e.N))
}

// OFDMeasure is the chance-corrected measure of X: [] -> A on the distinct
// records, ev being X's evidence partition and pdepA A's pdep there: 0
// without repeated support.
func (e *Evidence) OFDMeasure(v *Validator, ev *StrippedPartition, a *table.Column, pdepA float64) float64 {
	if ev.N == 0 {
		return NoStrength
	}
	if !e.Supported(ev) {
		return 0
	}
	return v.OFDStrength(ev, a, pdepA)
}

// OCMeasure is the chance-corrected measure of X: A ~ B (pol) on the
// distinct records, ev being X's evidence partition and removals those of
// all records, which are the distinct records' when every row is
// distinct (removals < 0: not known); counts counts in ev the shuffled
// removals and, when asked (exact), the removals. It is 0 without
// repeated support.
func (e *Evidence) OCMeasure(ev *StrippedPartition, removals int, counts OCCounter) float64 {
	if ev.N == 0 {
		return NoStrength
	}
	if !e.Supported(ev) {
		return 0
	}
	exact := e.First != nil || removals < 0
	r, shuffled := counts(ev, exact)
	if exact {
		removals = r
	}
	return OCStrengthOf(ev.N, removals, float64(shuffled))
}

// OCCounter counts in a partition what an OC's measure reads: its
// removals when exact (0 otherwise) and its shuffled removals
// (OCShuffledRemovals).
type OCCounter func(p *StrippedPartition, exact bool) (removals, shuffled int)

// Measurements returns the measurements of t, e its distinct records: its
// numeric and temporal columns with at least share distinct values per
// distinct record (a weight, a coordinate, a time stamp; docs/DESIGN.md,
// "Keys, equivalences and implied rules").
func (e *Evidence) Measurements(t *table.Table, share float64) uint64 {
	var measured uint64
	for c := range t.Columns {
		col := &t.Columns[c]
		if col.Type != table.Numeric && col.Type != table.Temporal {
			continue
		}
		// Every value of a row is in the first of its identical rows too:
		// the distinct records hold all Cardinality values.
		if float64(col.Cardinality) >= share*float64(e.N) {
			measured |= 1 << c
		}
	}
	return measured
}
