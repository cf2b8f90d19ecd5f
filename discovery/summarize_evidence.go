package discovery

// The entries of a discovery that step back before equivalences and
// implied rules are judged (docs/DESIGN.md, "Keys, equivalences and
// implied rules"), so that none of them is kept for a class or used as a
// premise: orders of records by a key, rules onto a column that is empty
// within eps, and rules whose context holds a measurement.

// stepBackKeyOrders steps back every reliable OC X: A ~ B one of whose
// sides, with X, holds a listed key, naming the key: within each class of
// X that side tells the records apart, so the OC sorts the records by an
// identifier, the order in which they were numbered or written (ncvoter's
// voter_id is the row number), not one value by another.
func (s *summary) stepBackKeyOrders() {
	var keys []Result
	for _, r := range s.d.Dependencies {
		if r.Kind == KindKey && r.Reliable {
			keys = append(keys, r)
		}
	}
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind != KindOC || !r.Reliable {
			continue
		}
		ctx := s.set(r.Context...)
		for _, k := range keys {
			if s.holdsKey(ctx|s.set(r.Left), k) || s.holdsKey(ctx|s.set(r.Right), k) {
				stepBack(r, k.String())
				break
			}
		}
	}
}

// stepBackEmptySides steps back every reliable OFD onto, and OC with a
// side, a column that is empty (NULL) in all but at most floor(eps n)
// records, naming `{}: [] -> A`, which holds then: nothing was recorded in
// A, and the rule is about the few records that have a value, which the
// eps test itself may remove (ncvoter's name_prefix, empty in 97%).
func (s *summary) stepBackEmptySides() {
	budget := RemovalBudget(s.opts.Epsilon, s.t.Rows)
	empty := func(name string) bool {
		return s.t.Rows-s.t.Columns[s.index[name]].EmptyRows() <= budget
	}
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if !r.Reliable {
			continue
		}
		var sides []string
		switch r.Kind {
		case KindOFD:
			sides = []string{r.RHS}
		case KindOC:
			sides = []string{r.Left, r.Right}
		}
		for _, a := range sides {
			if empty(a) {
				stepBack(r, Dependency{Kind: KindOFD, Context: []string{}, RHS: a}.String())
				break
			}
		}
	}
}

// stepBackMeasurements marks not reliable every reliable OFD and OC whose
// context holds a measurement (validate.Evidence.Measurements). Nothing implies such a
// rule; its context is a near key for a person, though its repeats pass
// the support test (adult's fnlwgt). The lattice searches no candidate of
// the listing alone there (lattice.unlisted), so the ones it steps back
// are of the paper's minimal set.
func (s *summary) stepBackMeasurements() {
	measured := newEvidence(s.t, s.opts.listing()).Measurements(s.t, s.opts.listing().measurementShare)
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Reliable && (r.Kind == KindOFD || r.Kind == KindOC) && s.set(r.Context...)&measured != 0 {
			r.Reliable = false
		}
	}
}
