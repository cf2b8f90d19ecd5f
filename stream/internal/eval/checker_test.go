package eval

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/window"
)

// TestCheckerBehindWindow: the checker applies its jobs behind the window
// that made them (the evaluator lags the consumer), so a job may carry a
// window code that the window has since freed and reused for another value
// while the checker's engine still holds rows with the old one. Jobs made
// over several slides and applied only then give every dependency the
// removals a full validation of the window gives, whether the window
// keeps columns in dictionaries or near-unique (codes that are row
// positions, strings over its arena; forced), or switches between the two.
func TestCheckerBehindWindow(t *testing.T) {
	t.Parallel()
	for _, tu := range []struct {
		name string
		t    window.Tuning
	}{
		{"default", window.DefaultTuning()},
		{"unique", window.Tuning{UniqueRatio: 0, UniqueMinRows: 1, DecideEvery: 1}},
		{"flip", window.Tuning{UniqueRatio: 0, UniqueMinRows: 1, DictRatio: 2, DecideEvery: 7}},
	} {
		t.Run(tu.name, func(t *testing.T) {
			t.Parallel()
			checkerBehindWindow(t, tu.t)
		})
	}
}

// checkerBehindWindow is one run of TestCheckerBehindWindow, the window
// tuned by tune.
func checkerBehindWindow(t *testing.T, tune window.Tuning) {
	const size, every, lag = 40, 5, 6 // jobs applied lag at a time
	deps := []discovery.Dependency{
		mustDep(t, "{}: [] -> a"), mustDep(t, "{k}: [] -> a"), mustDep(t, "{a}: [] -> k"),
		mustDep(t, "{}: a ~ b (asc)"), mustDep(t, "{k}: b ~ a (desc)"),
	}
	r := rand.New(rand.NewPCG(11, 12))
	w := window.NewWindow(size, 0)
	w.SetTuning(tune)
	var feed Cursor
	c := &Checker{}
	var jobs []*Delta
	reused := 0
	seen := map[string]map[uint32]string{} // column → window code → the value it stood for
	var rec decode.FlatRecord
	for seq := uint64(0); seq < 1500; seq++ {
		rec.Reset()
		// Values from a range that drifts: each leaves the window for
		// good, and its code goes to a newcomer.
		base := int(seq) / 10
		rec.AddString("a", strconv.Itoa(base+r.IntN(8)))
		rec.AddString("b", strconv.Itoa(base+r.IntN(8)))
		rec.AddString("k", "k"+strconv.Itoa(base+r.IntN(4)))
		w.Append(window.RowMeta{Partition: 0, Offset: int64(seq), Seq: seq}, &rec)
		if (seq+1)%every != 0 {
			continue
		}
		job := feed.Delta(w, !feed.fed)
		for i, name := range job.names {
			if seen[name] == nil {
				seen[name] = map[uint32]string{}
			}
			for k, code := range job.codes[i] {
				if old, ok := seen[name][code]; ok && old != job.values[i][k] {
					reused++
				}
				seen[name][code] = job.values[i][k]
			}
		}
		jobs = append(jobs, job)
		if len(jobs) < lag {
			continue
		}
		for _, job := range jobs {
			if !c.Apply(job, true) { // exact: every count recounted
				t.Fatalf("window %d: delta does not fit the checker", seq)
			}
		}
		jobs = jobs[:0]
		if err := c.eng.SetDependencies(deps); err != nil {
			t.Fatal(err)
		}
		got := c.eng.Check(nil)
		table, err := table.EncodeTyped(w.Snapshot().Columns(), table.Typing{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := discovery.ValidateAll(context.Background(), table, deps, discovery.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range deps {
			if !got[i].Exact || got[i].Removals != want[i].Removals {
				t.Fatalf("window %d: %s: %d removals, full validation %d", seq, deps[i], got[i].Removals, want[i].Removals)
			}
		}
	}
	if reused < 100 {
		t.Fatalf("only %d window codes reused for another value: the lag is not tested", reused)
	}
}

// TestCheckMergeMinScore: a check merging a discovery admits the newly
// minimal dependencies as a full evaluation does: reliable ones whose
// score reaches min-score, auto (nearKeyScore of the window) included.
func TestCheckMergeMinScore(t *testing.T) {
	for _, minScore := range []float64{-1, 0.2} { // -1: auto
		cfg := &Config{Name: "ms", Topic: "ms", Every: 10, DiscoverEvery: 20, Epsilon: 0.01, MinScore: minScore, Sample: 5}
		env := Env{Name: "ms", Cfg: cfg, Log: testkit.Logger(t), Tracker: alerts.NewTracker(alerts.Config{Stream: "ms", Epsilon: 0.01, K: 1})}
		names := []string{"a", "b", "k"}
		codes, values := make([][]uint32, 3), make([][]string, 3)
		for c := range names {
			codes[c], values[c] = make([]uint32, 100), make([]string, 100)
		}
		for r := range 100 {
			values[0][r], values[1][r], values[2][r] = strconv.Itoa(r%5), strconv.Itoa(r%5), strconv.Itoa(r)
			codes[0][r], codes[1][r], codes[2][r] = uint32(1+r%5), uint32(1+r%5), uint32(1+r)
		}
		c := &Checker{}
		if err := c.build(names, codes, values, false); err != nil {
			t.Fatal(err)
		}
		c.metas = make([]window.RowMeta, 100)
		merge := &DiscoveryOutcome{Complete: true}
		merge.setResults([]discovery.Result{
			{Dependency: mustDep(t, "{b}: [] -> a"), Reliable: true, Score: 0.25},
			{Dependency: mustDep(t, "{k}: [] -> a"), Reliable: true, Score: nearKeyScore(100) / 2},
		})
		out, err := env.CheckWindow(context.Background(), c, alerts.WindowInfo{Stream: "ms", Records: 100, EndSeq: 99}, merge, nil)
		if err != nil {
			t.Fatal(err)
		}
		var discovered []string
		for _, e := range out.Events {
			if e.Type == alerts.EventDiscovered {
				discovered = append(discovered, e.DependencyText)
			}
		}
		if !slices.Equal(discovered, []string{"{b}: [] -> a"}) {
			t.Errorf("min-score %v: discovered %v, want {b}: [] -> a only", minScore, discovered)
		}
	}
}

// TestSampledColumns: the dependencies sampled with events (before
// delivery) are the events' own, for the event types that carry samples,
// each once; those sampled for the status history (after delivery) are
// their related ones with removals, each once; each time only their
// columns are copied from the checker and encoded.
func TestSampledColumns(t *testing.T) {
	dep := func(s string) discovery.Dependency {
		d, err := discovery.ParseDependency(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	eng, err := incremental.New(nil, incremental.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "ts"} {
		eng.Column(n)
	}
	events := []alerts.Event{
		{Type: alerts.EventViolated, Removals: 3, Dependency: dep("{a}: [] -> b"),
			Related: []alerts.Related{{Dependency: dep("{}: c ~ d"), Removals: 2}, {Dependency: dep("{}: [] -> f")}}},
		{Type: alerts.EventRestored, Removals: 1, Dependency: dep("{}: [] -> e"), // carries no sample
			Related: []alerts.Related{{Dependency: dep("{}: [] -> g"), Removals: 1}}},
		{Type: alerts.EventViolated, Removals: 0, Dependency: dep("{}: [] -> ts")}, // nothing to sample
		{Type: alerts.EventViolated, Removals: 1, Dependency: dep("{}: [] -> a"),
			Related: []alerts.Related{{Dependency: dep("{}: c ~ d"), Removals: 1}}}, // sampled once
		{Type: alerts.EventDiscovered, Removals: 1, Dependency: dep("{a}: [] -> b")}, // sampled once
	}
	for _, tc := range []struct {
		name        string
		list        func([]alerts.Event) ([]discovery.Dependency, map[string]int)
		deps, names []string
	}{
		{"own", func(evs []alerts.Event) ([]discovery.Dependency, map[string]int) { return ownDependencies(evs, false) },
			[]string{dep("{a}: [] -> b").String(), dep("{}: [] -> a").String()}, []string{"a", "b"}},
		{"own unexplained", func(evs []alerts.Event) ([]discovery.Dependency, map[string]int) {
			evs = slices.Clone(evs)
			for i := range evs {
				if evs[i].Type == alerts.EventViolated {
					evs[i].Explanation = &alerts.Explanation{} // explained: its samples are the explanation's
				}
			}
			return ownDependencies(evs, true)
		}, []string{dep("{a}: [] -> b").String()}, []string{"a", "b"}},
		{"related", RelatedDependencies, []string{dep("{}: c ~ d").String()}, []string{"c", "d"}},
	} {
		deps, at := tc.list(events)
		var ids []string
		for i, d := range deps {
			ids = append(ids, d.String())
			if at[alerts.DependencyID(d)] != i {
				t.Errorf("%s: index of %s: %d, want %d", tc.name, d, at[alerts.DependencyID(d)], i)
			}
		}
		if !slices.Equal(ids, tc.deps) {
			t.Fatalf("%s: sampled dependencies %v, want %v", tc.name, ids, tc.deps)
		}
		var got []string
		for _, c := range eng.DictColumns(sampledColumns(deps)...) {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, tc.names) {
			t.Fatalf("%s: sampled columns %v, want %v", tc.name, got, tc.names)
		}
	}
	if got := sampledColumns(nil); len(got) != 0 {
		t.Fatalf("no dependencies: sampled columns %v, want none", got)
	}
}

// TestCheckSamplerKeepsColumns: a check's sampler copies and encodes each
// column once: the related rules' samples, taken on the columns the
// events' own left encoded (the fast path), are those a sampler of their
// own takes (the oracle), and only the columns not encoded yet are added.
func TestCheckSamplerKeepsColumns(t *testing.T) {
	cfg := &Config{Name: "ks", Topic: "ks", Every: 100, DiscoverEvery: 100, Epsilon: 0.01, Sample: 5}
	env := Env{Name: "ks", Cfg: cfg, Log: testkit.Logger(t)}
	names := []string{"a", "b", "c", "d"}
	codes, values := make([][]uint32, len(names)), make([][]string, len(names))
	for c := range names {
		codes[c], values[c] = make([]uint32, 100), make([]string, 100)
	}
	for r := range 100 {
		// b and c follow a but for every 7th row; d is a key.
		v := [4]int{r % 5, r % 5, r % 5, r}
		if r%7 == 0 {
			v[1], v[2] = 9, 8
		}
		for c := range names {
			values[c][r], codes[c][r] = strconv.Itoa(v[c]), uint32(1+v[c])
		}
	}
	c := &Checker{}
	if err := c.build(names, codes, values, false); err != nil {
		t.Fatal(err)
	}
	c.metas = make([]window.RowMeta, 100)
	for r := range c.metas {
		c.metas[r] = window.RowMeta{Partition: int32(r % 3), Offset: int64(r)}
	}
	own := []discovery.Dependency{mustDep(t, "{a}: [] -> b")}
	related := []discovery.Dependency{mustDep(t, "{a}: [] -> c"), mustDep(t, "{d}: [] -> b")}
	s := newCheckSampler(c)
	if smp := env.checkerSamples(context.Background(), s, own); len(smp) != 1 || len(smp[0]) == 0 {
		t.Fatalf("own samples %v, want one non-empty", smp)
	}
	got := env.checkerSamples(context.Background(), s, related)
	want := env.checkerSamples(context.Background(), newCheckSampler(c), related)
	if len(got[0]) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("related samples on the kept columns %v, want %v (a sampler of their own)", got, want)
	}
	var held []string
	for _, col := range s.cols {
		held = append(held, col.Name)
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(held, want) || len(s.table.Columns) != len(want) {
		t.Fatalf("sampler holds %v (%d encoded), want %v each once", held, len(s.table.Columns), want)
	}
}
