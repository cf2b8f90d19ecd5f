package eval

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

func mustDep(t testing.TB, s string) discovery.Dependency {
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
			disc := DiscoveryOutcome{Complete: tc.complete, Levels: tc.levels}
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

// TestEncodeSnapshot: discovery's encoding with the gate's pause gives
// EncodeTyped's table, a pause's error stops it as it is, and an encoding
// error is the encode step's.
func TestEncodeSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const rows = 300
	gen := map[string]func() string{
		"num":  func() string { return strconv.Itoa(rng.IntN(50) - 10) },
		"ts":   func() string { return time.Unix(int64(rng.IntN(1e6)), 0).UTC().Format(time.RFC3339) },
		"size": func() string { return []string{"S", "M", "L"}[rng.IntN(3)] },
	}
	var cols []table.DictColumn
	for _, name := range []string{"num", "size", "ts"} {
		c := table.DictColumn{Name: name, Codes: make([]uint32, rows)}
		at := map[string]uint32{}
		for r := range rows {
			v := gen[name]()
			if _, ok := at[v]; !ok {
				c.Dict = append(c.Dict, v)
				at[v] = uint32(len(c.Dict))
			}
			c.Codes[r] = at[v]
		}
		cols = append(cols, c)
	}
	ty := table.Typing{Ordinal: map[string][]string{"size": {"S", "M", "L"}}}
	want, err := table.EncodeTyped(cols, ty)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, err := encodeSnapshot(context.Background(), cols, ty, func(context.Context) error { calls++; return nil })
	// Before each column and after typing and sorting it (these columns
	// are too short to pause while typed).
	if err != nil || !reflect.DeepEqual(got, want) || calls != 3*len(cols) {
		t.Fatalf("err %v, %d pauses for %d columns; equal to EncodeTyped: %v", err, calls, len(cols), reflect.DeepEqual(got, want))
	}
	errStop := errors.New("stop")
	_, err = encodeSnapshot(context.Background(), cols, ty, func(context.Context) error { return errStop })
	if err != errStop {
		t.Fatalf("err %v, want the pause's error as it is", err)
	}
	_, err = encodeSnapshot(context.Background(), cols, table.Typing{Ordinal: map[string][]string{"size": {"S", "M"}}}, nil)
	var se *StepError
	if !errors.As(err, &se) || !errors.Is(err, table.ErrOrdinal) {
		t.Fatalf("err %v, want the encode step's ErrOrdinal", err)
	}
}
