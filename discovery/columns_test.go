package discovery

import (
	"slices"
	"testing"
)

func TestDependencyColumns(t *testing.T) {
	for _, c := range []struct {
		d    Dependency
		want []string
	}{
		{Dependency{Kind: KindOFD, Context: []string{"a", "b"}, RHS: "c"}, []string{"a", "b", "c"}},
		{Dependency{Kind: KindOC, Context: []string{"a"}, Left: "b", Right: "c"}, []string{"a", "b", "c"}},
		{Dependency{Kind: KindOC, Left: "b", Right: "c"}, []string{"b", "c"}},
		{Dependency{Kind: KindListOD, LHSList: []string{"a"}, RHSList: []string{"b", "c"}}, []string{"a", "b", "c"}},
	} {
		got := c.d.Columns()
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: Columns() = %q, want %q", c.d, got, c.want)
		}
		if len(c.d.Context) > 0 {
			got[0] = "changed"
			if c.d.Context[0] == "changed" {
				t.Errorf("%v: Columns() shares the dependency's context", c.d)
			}
		}
	}
}
