package discovery

import (
	"fmt"
	"slices"

	"github.com/odwatch/odwatch/discovery/internal/validate"
)

// Validating keys and equivalences (docs/DESIGN.md, "Keys, equivalences
// and implied rules"), on all records like every dependency.

// measureKey measures the key d: the rows to remove for its columns to
// identify every record (all but the first of each class of its
// partition), and its strength (keyStrength) on the distinct records.
func (vs *depValidator) measureKey(d Dependency, wantRows bool) (measure, error) {
	m, err := vs.keyRemovals(d, wantRows)
	if err != nil {
		return m, err
	}
	p, err := vs.partition(d.Set)
	if err != nil {
		return m, err
	}
	ev := vs.evidence()
	var rests []*validate.StrippedPartition
	var pdeps []float64
	for i, name := range d.Set {
		rest, err := vs.partition(append(slices.Clone(d.Set[:i]), d.Set[i+1:]...))
		if err != nil {
			return m, err
		}
		c, _ := vs.column(name)
		rests, pdeps = append(rests, ev.Of(rest)), append(pdeps, ev.Pdep(c))
	}
	m.strength = validate.KeyStrengthAt(ev.Of(p), rests, pdeps, vs.eps)
	return m, nil
}

// keyRemovals measures the key d's minimal removal set (every row of a
// class of its columns but the first), its rows when wantRows.
func (vs *depValidator) keyRemovals(d Dependency, wantRows bool) (measure, error) {
	var m measure
	if len(d.Set) == 0 {
		return m, fmt.Errorf("%w: a key needs at least one column", ErrBadDependency)
	}
	p, err := vs.partition(d.Set)
	if err != nil {
		return m, err
	}
	m.removals = p.Covered() - p.NumClasses()
	if wantRows {
		for i := 0; i < p.NumClasses(); i++ {
			for _, r := range p.Class(i)[1:] {
				m.rows = append(m.rows, int(r))
			}
		}
		slices.Sort(m.rows)
	}
	return m, nil
}

// measureEquivalence measures the equivalence d through the FDs between
// its first member and each other one, both ways, in its context: the
// largest removals (and their rows) and the smallest strength.
func (vs *depValidator) measureEquivalence(d Dependency, wantRows bool) (measure, error) {
	return vs.equivalenceRemovals(d, wantRows, true)
}

// equivalenceRemovals is measureEquivalence, without the strength (0)
// unless withStrength: the FD of the largest removals (the first of
// equal ones) gives the removals and their rows.
func (vs *depValidator) equivalenceRemovals(d Dependency, wantRows, withStrength bool) (measure, error) {
	var m measure
	if withStrength {
		m.strength = 1
	}
	if len(d.Set) < 2 {
		return m, fmt.Errorf("%w: an equivalence needs two columns", ErrBadDependency)
	}
	first := true
	for _, other := range d.Set[1:] {
		for _, fd := range [][2]string{{d.Set[0], other}, {other, d.Set[0]}} {
			ctx := append(slices.Clone(d.Context), fd[0])
			p, err := vs.partition(ctx)
			if err != nil {
				return m, err
			}
			var fm measure
			fdep := Dependency{Kind: KindOFD, Context: ctx, RHS: fd[1]}
			if withStrength {
				fm, err = vs.measureOFD(p, fdep, wantRows)
			} else {
				fm, err = vs.removalSet(fdep, wantRows)
			}
			if err != nil {
				return m, err
			}
			if first || fm.removals > m.removals {
				m.removals, m.rows = fm.removals, fm.rows
			}
			if withStrength {
				m.strength = min(m.strength, fm.strength)
			}
			first = false
		}
	}
	return m, nil
}

// scorePartition is the partition a dependency's score is taken from: a
// key's own columns', the context's (p) otherwise.
func (vs *depValidator) scorePartition(d Dependency, p *validate.StrippedPartition) (*validate.StrippedPartition, error) {
	if d.Kind == KindKey {
		return vs.partition(d.Set)
	}
	return p, nil
}
