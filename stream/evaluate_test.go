package stream

import (
	"slices"
	"testing"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

func mustDep(t *testing.T, s string) discovery.Dependency {
	t.Helper()
	d, err := discovery.ParseDependency(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestObservations reads the observation rules of observations one by one:
// which dependencies are observed, with which numbers, in which order, and
// which are minimal.
func TestObservations(t *testing.T) {
	ab := mustDep(t, "{}: a ~ b (asc)")
	cd := mustDep(t, "{c}: [] -> d")
	ef := mustDep(t, "{x,y}: e ~ f (desc)") // level 4
	gone := mustDep(t, "{}: [] -> z")       // its column left the window
	neu := mustDep(t, "{}: [] -> n")
	low := mustDep(t, "{k}: [] -> m")
	id := alerts.DependencyID
	res := func(d discovery.Dependency, removals int, score float64) discovery.Result {
		return discovery.Result{Dependency: d, Removals: removals, Error: float64(removals) / 100, Score: score, Strength: 0.8, Reliable: true}
	}
	chance := func(r discovery.Result) discovery.Result { r.Strength, r.Reliable = 0.1, false; return r }
	type want struct {
		dep      discovery.Dependency
		removals int
		minimal  bool
	}
	cases := []struct {
		name     string
		tracked  []discovery.Dependency
		checked  []discovery.Result
		disc     []discovery.Result
		complete bool
		levels   int
		minScore float64
		want     []want
	}{{
		name:     "tracked measured by discovery or the check path, then new ones by score order",
		tracked:  []discovery.Dependency{ab, cd, gone},
		checked:  []discovery.Result{res(cd, 7, 0)},
		disc:     []discovery.Result{res(neu, 1, 0.9), res(ab, 2, 0.5)},
		complete: true, levels: 2,
		want: []want{{ab, 2, true}, {cd, 7, false}, {neu, 1, true}},
	}, {
		name:     "a new dependency below min score is not observed; a tracked one is",
		tracked:  []discovery.Dependency{ab},
		disc:     []discovery.Result{res(ab, 0, 0.001), res(low, 0, 0.001), res(neu, 0, 0.5)},
		minScore: 0.01, complete: true, levels: 2,
		want: []want{{ab, 0, true}, {neu, 0, true}},
	}, {
		name:     "a new dependency that looks like chance is not observed; a tracked one is",
		tracked:  []discovery.Dependency{ab},
		disc:     []discovery.Result{chance(res(ab, 0, 0.5)), chance(res(low, 0, 0.5)), res(neu, 0, 0.5)},
		complete: true, levels: 2,
		want: []want{{ab, 0, true}, {neu, 0, true}},
	}, {
		name:    "incomplete discovery: above the levels searched counts as minimal",
		tracked: []discovery.Dependency{ab, ef},
		checked: []discovery.Result{res(ab, 3, 0), res(ef, 4, 0)},
		levels:  3,
		want:    []want{{ab, 3, false}, {ef, 4, true}},
	}, {
		name:     "complete discovery: not found is not minimal at any level",
		tracked:  []discovery.Dependency{ab, ef},
		checked:  []discovery.Result{res(ab, 3, 0), res(ef, 4, 0)},
		complete: true, levels: 3,
		want: []want{{ab, 3, false}, {ef, 4, false}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checked := map[string]discovery.Result{}
			for _, r := range tc.checked {
				checked[id(r.Dependency)] = r
			}
			disc := discoveryOutcome{complete: tc.complete, levels: tc.levels}
			disc.setResults(tc.disc)
			got := observations(tc.tracked, checked, disc, tc.minScore)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d observations %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if id(g.Dependency) != id(w.dep) || g.Removals != w.removals || g.Minimal != w.minimal {
					t.Errorf("observation %d: %s removals %d minimal %v, want %s removals %d minimal %v",
						i, g.Dependency, g.Removals, g.Minimal, w.dep, w.removals, w.minimal)
				}
			}
		})
	}
}

// TestToCheck: the check path skips what discovery measured and what
// mentions a column the window lacks.
func TestToCheck(t *testing.T) {
	ab := mustDep(t, "{}: a ~ b (asc)")
	ca := mustDep(t, "{c}: [] -> a")
	bz := mustDep(t, "{z}: [] -> b")
	table := &table.Table{Columns: []table.Column{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	found := map[string]discovery.Result{alerts.DependencyID(ab): {}}
	got := toCheck([]discovery.Dependency{ab, ca, bz}, found, table)
	if !slices.EqualFunc(got, []discovery.Dependency{ca}, func(x, y discovery.Dependency) bool { return x.String() == y.String() }) {
		t.Errorf("toCheck = %v, want [%s]", got, ca)
	}
}
