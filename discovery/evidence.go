package discovery

import (
	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// ocCounts is the validate.OCCounter of A ~ B (pol) with the given validator's
// removals: both counts in one pass for the exact one, the iterative
// baseline's removals next to the shuffle otherwise.
func ocCounts(v *validate.Validator, a, b *table.Column, pol Polarity, validator ValidatorKind) validate.OCCounter {
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
	if distinct.First == nil {
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
		return &evidence{N: vs.t.Rows, Spanning: true}
	}
	return vs.evidence()
}

// evidence is the distinct records of a table (validate.Evidence).
type evidence = validate.Evidence

// newEvidence returns the distinct records of t, judged with the given
// tuning.
func newEvidence(t *table.Table, tune listingTuning) *evidence {
	return validate.NewEvidence(t, tune.minSupport)
}
