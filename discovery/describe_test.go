package discovery

import "testing"

func TestDescribe(t *testing.T) {
	oc := func(ctx []string, l, r string, p Polarity) Dependency {
		return Dependency{Kind: KindOC, Context: ctx, Left: l, Right: r, Polarity: p}
	}
	ofd := func(ctx []string, rhs string) Dependency {
		return Dependency{Kind: KindOFD, Context: ctx, RHS: rhs}
	}
	for _, c := range []struct {
		dep  Dependency
		want string
	}{
		{oc(nil, "Cylinders", "Displacement", Asc), "sorting by Cylinders sorts Displacement"},
		{oc(nil, "a", "b", Desc), "sorting by a sorts b in reverse"},
		{oc([]string{"tax_group"}, "salary", "tax", Asc), "within each tax_group, sorting by salary sorts tax"},
		{oc([]string{"a", "b"}, "c", "d", Asc), "within each combination of a and b, sorting by c sorts d"},
		{oc([]string{"a", "b", "c"}, "d", "e", Desc), "within each combination of a, b and c, sorting by d sorts e in reverse"},
		{ofd([]string{"zip_code"}, "city"), "zip_code determines city"},
		{ofd([]string{"a", "b"}, "c"), "a and b together determine c"},
		{ofd(nil, "c"), "c is the same in every row"},
		{Dependency{Kind: KindListOD, LHSList: []string{"a", "b"}, RHSList: []string{"c"}}, "sorting by a, then b sorts c"},
		// Names are written as they are, even those the notation quotes.
		{ofd([]string{"a:b"}, "c d"), "a:b determines c d"},
	} {
		if got := Describe(c.dep); got != c.want {
			t.Errorf("Describe(%s) = %q, want %q", c.dep, got, c.want)
		}
	}
}

func TestDescribeResult(t *testing.T) {
	dep := Dependency{Kind: KindOC, Left: "Cylinders", Right: "Displacement"}
	for _, c := range []struct {
		removals int
		err      float64
		want     string
	}{
		{0, 0, "sorting by Cylinders sorts Displacement"},
		{1, 1.0 / 406, "sorting by Cylinders sorts Displacement, except 1 row (0.25%)"},
		{10, 10.0 / 406, "sorting by Cylinders sorts Displacement, except 10 rows (2.5%)"},
		{203, 0.5, "sorting by Cylinders sorts Displacement, except 203 rows (50%)"},
		{3, 3.0 / 3e6, "sorting by Cylinders sorts Displacement, except 3 rows (<0.01%)"},
		{300, percentSmall, "sorting by Cylinders sorts Displacement, except 300 rows (0.01%)"},
	} {
		r := Result{Dependency: dep, Removals: c.removals, Error: c.err}
		if got := DescribeResult(r); got != c.want {
			t.Errorf("DescribeResult(removals %d) = %q, want %q", c.removals, got, c.want)
		}
	}
}
