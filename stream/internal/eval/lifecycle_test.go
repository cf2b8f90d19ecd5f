package eval

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/window"
)

func TestMergeAt(t *testing.T) {
	// 1999: a discover-every after the first full window, whose discovery
	// was merged at 1249.
	for _, end := range []uint64{1499, 1999, 500} {
		if start, ok := MergedAt(end, 1000, 250, 1000); ok {
			t.Errorf("MergedAt(%d) = %d: the check merges no discovery, want none", end, start)
		}
	}
	for _, tc := range []struct {
		end, want uint64
	}{
		{999, 1249},  // the first full window's: the next check
		{1999, 2999}, // the others: discover-every later
		{2999, 3999},
	} {
		if got := MergeAt(tc.end, 1000, 250, 1000); got != tc.want {
			t.Errorf("MergeAt(%d) = %d, want %d", tc.end, got, tc.want)
		}
		if got, ok := MergedAt(tc.want, 1000, 250, 1000); !ok || got != tc.end {
			t.Errorf("MergedAt(%d) = %d, %v, want %d", tc.want, got, ok, tc.end)
		}
	}
}

func TestTracksAndDiscoveryFacts(t *testing.T) {
	res := func(s string, reliable bool, score float64, by ...string) discovery.Result {
		return discovery.Result{Dependency: mustDep(t, s), Reliable: reliable, Score: score, Strength: 0.9, ImpliedBy: by}
	}
	disc := &DiscoveryOutcome{Complete: true}
	disc.setResults([]discovery.Result{
		res("{}: salary ~ tax (asc)", false, 1, "{}: salary <-> tax"), // an order of equals: tracked
		res("{}: salary <-> tax", true, 1),
		res("{perc}: [] -> tax_group", false, 0.3, "{}: tax_group <-> perc"), // steps back
		res("key(id)", true, 0.001),                                          // a key: whatever its score
		res("{id}: [] -> tax", false, 0.001),
		res("{a}: [] -> b", true, 0.5),
		{Dependency: mustDep(t, "{a}: [] -> c"), Score: 0.5, Strength: 0.8, StatedIn: "{a}: [] -> b"}, // said with {a} -> b: tracked
		res("{city}: state <-> county", true, 0.5),                                                    // a mirror pair, said once
		res("{city,state}: [] -> county", false, 0.5, "{city}: state <-> county"),
		res("{city,county}: [] -> state", false, 0.5, "{city}: state <-> county"),
	})
	var tracked []string
	for _, r := range disc.Results {
		if tracks(r, 0.01) {
			tracked = append(tracked, r.Dependency.String())
		}
	}
	if want := []string{"{}: salary ~ tax (asc)", "{}: salary <-> tax", "key(id)", "{a}: [] -> b", "{a}: [] -> c", "{city}: state <-> county"}; !slices.Equal(tracked, want) {
		t.Errorf("tracked %v, want %v", tracked, want)
	}
	for _, tc := range []struct {
		dep      string
		minimal  bool
		back     bool
		replaced string
	}{
		{"{}: salary ~ tax (asc)", true, false, ""},
		{"{perc}: [] -> tax_group", true, true, "{}: tax_group <-> perc"},
		{"{a,c}: [] -> b", false, false, "{a}: [] -> b"},
		{"{a,d}: [] -> c", false, false, "{a}: [] -> c"}, // a rule stated with another replaces too
		{"{city,state}: [] -> county", true, true, "{city}: state <-> county"},
		{"{x}: [] -> y", false, false, ""},
	} {
		o := alerts.Observation{Dependency: mustDep(t, tc.dep)}
		discoveryFacts(&o, disc)
		if o.Minimal != tc.minimal || o.StepsBack != tc.back || o.ReplacedBy != tc.replaced {
			t.Errorf("%s: minimal %v, steps back %v, replaced by %q; want %v, %v, %q", tc.dep, o.Minimal, o.StepsBack, o.ReplacedBy, tc.minimal, tc.back, tc.replaced)
		}
	}
}

// TestCheckWindowKey: a key the merged discovery found is counted by the
// check (the engine does not count keys), rated on the whole window and
// discovered there; records sent twice raise its error to a violated
// event.
func TestCheckWindowKey(t *testing.T) {
	cfg := &Config{Name: "k", Topic: "k", Every: 100, DiscoverEvery: 200, Epsilon: 0.05, MinStrength: 0.5, MinScore: -1, Sample: 5}
	env := Env{Name: "k", Cfg: cfg, Log: testkit.Logger(t),
		Tracker: alerts.NewTracker(alerts.Config{Stream: "k", Epsilon: 0.05, K: 1, DiscoverAfter: 2, MinStrength: 0.5})}
	checker := func(ids []int) *Checker {
		names := []string{"a", "id"}
		codes, values := make([][]uint32, 2), make([][]string, 2)
		for _, id := range ids {
			values[0], values[1] = append(values[0], strconv.Itoa(id%5)), append(values[1], strconv.Itoa(id))
			codes[0], codes[1] = append(codes[0], uint32(1+id%5)), append(codes[1], uint32(1+id))
		}
		c := &Checker{}
		if err := c.build(names, codes, values, false); err != nil {
			t.Fatal(err)
		}
		c.metas = make([]window.RowMeta, len(ids))
		return c
	}
	key := mustDep(t, "key(id)")
	merge := &DiscoveryOutcome{Complete: true}
	merge.setResults([]discovery.Result{{Dependency: key, Reliable: true, Score: 0.01, Strength: 0.99}})
	unique := make([]int, 100)
	for i := range unique {
		unique[i] = i
	}
	out, err := env.CheckWindow(context.Background(), checker(unique), alerts.WindowInfo{Stream: "k", Records: 100, EndSeq: 99}, merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Events) != 1 || out.Events[0].Type != alerts.EventDiscovered || out.Events[0].Strength < 0.5 {
		t.Fatalf("events %+v, want key(id) discovered, rated reliable", out.Events)
	}
	twice := append(slices.Clone(unique[:80]), unique[60:80]...) // 20 of 100 records sent twice
	out, err = env.CheckWindow(context.Background(), checker(twice), alerts.WindowInfo{Stream: "k", Records: 100, EndSeq: 199}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Events) != 1 || out.Events[0].Type != alerts.EventViolated || out.Events[0].Removals != 20 {
		t.Fatalf("events %+v, want key(id) violated with 20 removals", out.Events)
	}
}

// TestDistinctColumnsRateAsTheWindow: rules rated on the columns
// distinctColumns takes (theirs, marked distinct, or with a key's with no
// removal) have the
// strength, score and removals they have on every column of the window,
// on random windows: an id unique or not (records sent twice, or ids on
// other records), rules over the id and over every column taken alone,
// two columns only.
func TestDistinctColumnsRateAsTheWindow(t *testing.T) {
	env := Env{Name: "d", Cfg: &Config{Name: "d", Epsilon: 0.05, MinStrength: 0.5}, Log: testkit.Logger(t)}
	rules := []string{
		"{a}: [] -> b", "{b}: [] -> a", "{}: a ~ b (asc)", "{a}: b ~ c (desc)", "{a,b}: [] -> c",
		"{}: a ~ id (asc)", "{a}: [] -> id", "{id}: [] -> a", "key(a,b)", "key(id)", "{c}: [] -> b",
		// u is a near key (about 5% of the records in pairs), m random
		// but sorting with id within u's pairs: on a table of its columns
		// alone the rule is judged without the repeated-support test
		// (strength above 0), on more its support is too low (0).
		"{u}: m ~ id (asc)",
	}
	for seed := uint64(0); seed < 60; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		names := []string{"a", "b", "c", "id", "m", "u"}
		if seed%5 == 0 {
			names = []string{"a", "id"} // a rule over both mentions every column
		}
		n := 20 + r.IntN(200)
		codes, values := make([][]uint32, len(names)), make([][]string, len(names))
		var last []int
		for i := 0; i < n; i++ {
			row := []int{r.IntN(4), r.IntN(3), r.IntN(6), i, r.IntN(1000), i}
			if i > 0 && r.IntN(25) == 0 {
				row[4], row[5] = last[4]+1, last[5]
			}
			switch {
			case seed%3 == 0 && i > 0 && r.IntN(4) == 0: // a record sent twice: the id repeats
				row = slices.Clone(last)
			case seed%3 == 1 && i > 0 && r.IntN(4) == 0: // the id repeats, the rest differs
				row[0], row[3] = last[0], last[3]
			}
			last = slices.Clone(row)
			if len(names) == 2 {
				row = []int{row[0], row[3]}
			}
			for c, v := range row {
				values[c], codes[c] = append(values[c], strconv.Itoa(v)), append(codes[c], uint32(1+v))
			}
		}
		var deps []discovery.Dependency
		for _, s := range rules {
			d := mustDep(t, s)
			if !slices.ContainsFunc(d.Columns(), func(c string) bool { return !slices.Contains(names, c) }) && r.IntN(2) == 0 {
				deps = append(deps, d)
			}
		}
		if len(deps) == 0 {
			continue
		}
		c := &Checker{}
		if err := c.build(names, codes, values, false); err != nil {
			t.Fatal(err)
		}
		c.eng.Check(nil)
		rate := func(deps, keys []discovery.Dependency) []discovery.Result {
			tab := env.samplerTable(newCheckSampler(c), keys)(deps, true)
			res, errs := env.validate(context.Background(), tab, deps)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("seed %d: %s: %v", seed, deps[i], err)
				}
			}
			return res
		}
		// The rules together, each alone (whose columns and the key's may
		// be all the table has) and each pair (whose columns may leave
		// the key out, the table then marked distinct).
		sets := [][]discovery.Dependency{deps}
		for i, d := range deps {
			sets = append(sets, []discovery.Dependency{d})
			for _, e := range deps[i+1:] {
				sets = append(sets, []discovery.Dependency{d, e})
			}
		}
		for _, set := range sets {
			got, want := rate(set, []discovery.Dependency{mustDep(t, "key(id)")}), rate(set, nil)
			for i, d := range set {
				g, w := got[i], want[i]
				if g.Strength != w.Strength || g.Score != w.Score || g.Removals != w.Removals || g.Reliable != w.Reliable {
					t.Fatalf("seed %d (%d records): %s on its and the key's columns: strength %v score %v removals %d; on the window: %v %v %d",
						seed, n, d, g.Strength, g.Score, g.Removals, w.Strength, w.Score, w.Removals)
				}
			}
		}
	}
}

// TestValidateQuietWhenTheRunEnds: a check's validation that stops because
// the run's context ended, cancelled (Ctrl-C) or past its deadline (demo
// --duration), is the run's end, not something to warn about.
func TestValidateQuietWhenTheRunEnds(t *testing.T) {
	var logs testkit.SyncBuffer
	env := Env{Name: "d", Cfg: &Config{Name: "d", Epsilon: 0.05}, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	cols := []table.DictColumn{{Name: "a", Dict: []string{"1", "2", "3"}}, {Name: "b", Dict: []string{"4", "5", "6"}}}
	for i := range 300 {
		cols[0].Codes = append(cols[0].Codes, uint32(1+i%3))
		cols[1].Codes = append(cols[1].Codes, uint32(1+(i/7)%3))
	}
	tab, err := table.Encode(cols)
	if err != nil {
		t.Fatal(err)
	}
	deps := []discovery.Dependency{mustDep(t, "{}: a ~ b (asc)"), mustDep(t, "{a}: [] -> b")}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, stop := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer stop()
	for _, ctx := range []context.Context{cancelled, expired} {
		if results, _ := env.validate(ctx, tab, deps); results != nil {
			t.Errorf("validate on an ended context (%v) gave results", ctx.Err())
		}
	}
	if logs.String() != "" {
		t.Errorf("the run's end was logged:\n%s", logs.String())
	}
}
