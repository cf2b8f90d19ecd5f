package discovery

import (
	"slices"
	"strings"
)

// Rules stated together (docs/DESIGN.md, "Keys, equivalences and implied
// rules"): the reliable FDs of one left-hand side are one entry, "Name
// determines Origin and Cylinders", as a canonical cover unites the right
// sides of one left side; and an FD X, B: [] -> A with the OC X: B ~ A is
// the paper's order dependency "within each X, sorting by B sorts A"
// (Szlichta et al.: [X,B] -> [X,A] holds iff X,B -> A and X: B ~ A), one
// entry. The entry is the group's strongest FD; it names the others in
// With, and each of them names it in StatedIn and is not listed on its own
// (Reliable false), keeping its measures. Nothing implies such a part: it
// is said by the entry, and the stream checks it as a rule of its own.

// stateTogether groups the reliable OFDs by left-hand side, with the
// reliable OCs that make one of them an order dependency, and states each
// group of more than one rule as its strongest FD.
func (s *summary) stateTogether() {
	groups := map[uint64][]int{}
	var order []uint64
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind != KindOFD || !r.Reliable || r.StatedIn != "" {
			continue
		}
		ctx := s.set(r.Context...)
		if _, ok := groups[ctx]; !ok {
			order = append(order, ctx)
		}
		groups[ctx] = append(groups[ctx], i)
	}
	for _, ctx := range order {
		fds := groups[ctx]
		slices.SortStableFunc(fds, func(i, j int) int { return s.stronger(i, j) })
		members := slices.Clone(fds)
		for _, i := range fds {
			members = append(members, s.sortingOCs(&s.d.Dependencies[i], members)...)
		}
		if len(members) < 2 {
			continue
		}
		head := &s.d.Dependencies[members[0]]
		for _, i := range members[1:] {
			part := &s.d.Dependencies[i]
			part.Reliable = false
			part.StatedIn = head.String()
			head.With = append(head.With, part.String())
		}
	}
}

// stronger orders two entries by strength, highest first, then by text.
func (s *summary) stronger(i, j int) int {
	a, b := &s.d.Dependencies[i], &s.d.Dependencies[j]
	if a.Strength != b.Strength {
		if a.Strength > b.Strength {
			return -1
		}
		return 1
	}
	return strings.Compare(a.String(), b.String())
}

// sortingOCs returns the reliable OCs, not yet in taken or stated with
// another entry, that make the OFD fd an order dependency: X: B ~ A for
// fd X,B: [] -> A.
func (s *summary) sortingOCs(fd *Result, taken []int) []int {
	ctx := s.set(fd.Context...)
	var out []int
	for i := range s.d.Dependencies {
		r := &s.d.Dependencies[i]
		if r.Kind != KindOC || !r.Reliable || r.StatedIn != "" || slices.Contains(taken, i) {
			continue
		}
		var b string
		switch fd.RHS {
		case r.Left:
			b = r.Right
		case r.Right:
			b = r.Left
		default:
			continue
		}
		if bit := s.set(b); ctx&bit != 0 && s.set(r.Context...) == ctx&^bit {
			out = append(out, i)
		}
	}
	return out
}

// orderOf returns, for an OC X: B ~ A stated with an FD onto A, the OC with
// A on the right: sorting by B sorts A.
func orderOf(oc Dependency, a string) Dependency {
	if oc.Left == a {
		oc.Left, oc.Right = oc.Right, oc.Left
	}
	return oc
}

// describeTogether is the plain words of an entry and the rules it states
// with it (With): the FDs no order states, then the orders, "Name
// determines Origin and Cylinders", "sorting by Displacement sorts
// Cylinders" (an order dependency determines what it sorts).
func describeTogether(r *Result) string {
	var rhs, orders []string
	var sorted []string
	for _, text := range r.With {
		d, err := ParseDependency(text)
		if err != nil || d.Kind != KindOC {
			continue
		}
		// B, the side that sorts, is in the entry's left side; A is not.
		a := d.Right
		if !slices.Contains(r.Context, d.Left) {
			a = d.Left
		}
		sorted = append(sorted, a)
		orders = append(orders, Describe(orderOf(d, a)))
	}
	for _, text := range append([]string{r.String()}, r.With...) {
		d, err := ParseDependency(text)
		if err == nil && d.Kind == KindOFD && !slices.Contains(sorted, d.RHS) {
			rhs = append(rhs, d.RHS)
		}
	}
	var parts []string
	if len(rhs) > 0 {
		parts = append(parts, Describe(Dependency{Kind: KindOFD, Context: r.Context, RHS: andList(rhs)}))
	}
	return strings.Join(append(parts, orders...), "; ")
}
