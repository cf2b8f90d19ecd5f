package alerts

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
)

// Test dependencies, by short name.
var testDeps = map[string]discovery.Dependency{
	"A": {Kind: discovery.KindOC, Left: "salary", Right: "tax", Polarity: discovery.Asc},
	"B": {Kind: discovery.KindOFD, Context: []string{"zip"}, RHS: "city"},
	"C": {Kind: discovery.KindOFD, Context: []string{"position", "experience"}, RHS: "salary"},
	"D": {Kind: discovery.KindOC, Context: []string{"position"}, Left: "experience", Right: "salary", Polarity: discovery.Desc},
}

func depName(id string) string {
	for n, d := range testDeps {
		if DependencyID(d) == id {
			return n
		}
	}
	return "?" + id
}

// o is one observation in a test step: error and minimality. Windows have
// 100 records, so removals = error*100.
type o struct {
	e   float64
	min bool
}

const testRecords = 100

func testWindow(seq int) WindowInfo {
	end := int64(seq * testRecords)
	return WindowInfo{
		Stream:       "payroll",
		Topic:        "payroll",
		StartOffsets: map[int32]int64{0: end - testRecords + 1},
		EndOffsets:   map[int32]int64{0: end},
		StartTime:    time.Unix(int64(seq*60-60), 0).UTC(),
		EndTime:      time.Unix(int64(seq*60), 0).UTC(),
		Records:      testRecords,
		EndSeq:       uint64(end),
	}
}

func testObs(step map[string]o) []Observation {
	names := make([]string, 0, len(step))
	for n := range step {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]Observation, 0, len(step))
	for _, n := range names {
		s := step[n]
		r := int(s.e*testRecords + 0.5)
		out = append(out, Observation{
			Dependency: testDeps[n], Removals: r, Error: float64(r) / testRecords, Minimal: s.min,
			Samples: []Sample{{Topic: "payroll", Partition: 0, Offset: int64(r), Values: map[string]string{"salary": "1000"}}},
		})
	}
	return out
}

// summary renders events as "type:name" for comparison.
func summary(evs []Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		x := string(e.Type) + ":" + depName(e.DependencyID)
		for _, r := range e.Related {
			x += "+" + depName(r.DependencyID)
		}
		out = append(out, x)
	}
	return out
}

func TestTrackerHysteresis(t *testing.T) {
	const eps = 0.1
	type step struct {
		obs  map[string]o
		want []string
	}
	ok := o{0.0, true}       // minimal, holds
	held := o{0.05, false}   // holds, not minimal (a more general one exists)
	bad := o{0.2, false}     // violated beyond any margin
	band := o{0.11, false}   // above eps, inside a 0.02 margin
	lowBand := o{0.09, true} // below eps, inside a 0.02 margin
	restore := o{0.05, true} // below eps - 0.02
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "K=1 margin 0: discovered, violated, restored",
			cfg:  Config{Epsilon: eps, K: 1},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": ok}, nil},
				{map[string]o{"A": bad}, []string{"violated:A"}},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": o{0.1, true}}, []string{"restored:A"}}, // e <= eps restores at margin 0
				{map[string]o{"A": ok}, nil},
			},
		},
		{
			name: "K=1 margin 0.02: flapping inside the band emits nothing",
			cfg:  Config{Epsilon: eps, Margin: 0.02, K: 1},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": band}, nil},
				{map[string]o{"A": lowBand}, nil},
				{map[string]o{"A": band}, nil},
				{map[string]o{"A": lowBand}, nil},
				{map[string]o{"A": o{0.13, false}}, []string{"violated:A"}},
				{map[string]o{"A": lowBand}, nil},
				{map[string]o{"A": band}, nil},
				{map[string]o{"A": lowBand}, nil},
				{map[string]o{"A": restore}, []string{"restored:A"}},
				{map[string]o{"A": band}, nil},
			},
		},
		{
			name: "K=3: violated after three consecutive windows, interrupted streaks reset",
			cfg:  Config{Epsilon: eps, Margin: 0.02, K: 3},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": band}, nil}, // in band: streak resets
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, []string{"violated:A"}},
				{map[string]o{"A": restore}, nil},
				{map[string]o{"A": restore}, nil},
				{map[string]o{"A": lowBand}, nil}, // in band: streak resets
				{map[string]o{"A": restore}, nil},
				{map[string]o{"A": restore}, nil},
				{map[string]o{"A": restore}, []string{"restored:A"}},
			},
		},
		{
			name: "retired after RetireAfter windows held but not minimal, then rediscovered",
			cfg:  Config{Epsilon: eps, K: 1, RetireAfter: 3},
			steps: []step{
				{map[string]o{"A": ok, "B": ok}, []string{"discovered:A", "discovered:B"}},
				{map[string]o{"A": held, "B": ok}, nil},
				{map[string]o{"A": held, "B": ok}, nil},
				{map[string]o{"A": held, "B": ok}, []string{"retired:A"}},
				{map[string]o{"B": ok}, nil}, // A no longer tracked: not re-validated
				{map[string]o{"A": ok, "B": ok}, []string{"discovered:A"}},
			},
		},
		{
			name: "minimal window resets the retirement count",
			cfg:  Config{Epsilon: eps, K: 1, RetireAfter: 3},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": held}, nil},
				{map[string]o{"A": held}, nil},
				{map[string]o{"A": ok}, nil},
				{map[string]o{"A": held}, nil},
				{map[string]o{"A": held}, nil},
				{map[string]o{"A": held}, []string{"retired:A"}},
			},
		},
		{
			name: "a breaking dependency is violated, not retired, even when K > RetireAfter",
			cfg:  Config{Epsilon: eps, K: 5, RetireAfter: 2},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, []string{"violated:A"}},
			},
		},
		{
			name: "violated retires after RetireViolatedAfter non-minimal windows",
			cfg:  Config{Epsilon: eps, K: 1, RetireViolatedAfter: 3},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": bad}, []string{"violated:A"}},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, []string{"retired:A"}},
			},
		},
		{
			name: "violated is kept by default long enough to be restored",
			cfg:  Config{Epsilon: eps, K: 1},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": bad}, []string{"violated:A"}},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": restore}, []string{"restored:A"}},
			},
		},
		{
			name: "unobserved for RetireAfter windows retires",
			cfg:  Config{Epsilon: eps, K: 1, RetireAfter: 2},
			steps: []step{
				{map[string]o{"A": ok, "B": ok}, []string{"discovered:A", "discovered:B"}},
				{map[string]o{"B": ok}, nil},
				{map[string]o{"B": ok}, []string{"retired:A"}},
			},
		},
		{
			name: "pinned: never discovered nor retired, still violated and restored",
			cfg:  Config{Epsilon: eps, K: 1, RetireAfter: 1, RetireViolatedAfter: 1, Pinned: []discovery.Dependency{testDeps["A"]}},
			steps: []step{
				{map[string]o{"A": ok}, nil},
				{map[string]o{"A": held}, nil},
				{map[string]o{"A": held}, nil},
				{nil, nil},
				{nil, nil},
				{map[string]o{"A": bad}, []string{"violated:A"}},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": bad}, nil},
				{map[string]o{"A": ok}, []string{"restored:A"}},
			},
		},
		{
			name: "DiscoverAfter 2: discovered on the second consecutive minimal window",
			cfg:  Config{Epsilon: eps, K: 1, DiscoverAfter: 2},
			steps: []step{
				{map[string]o{"A": ok, "B": ok}, nil},
				{map[string]o{"A": ok, "B": held}, []string{"discovered:A"}}, // B's streak breaks
				{map[string]o{"A": ok, "B": ok}, nil},
				{map[string]o{"A": ok, "B": ok}, []string{"discovered:B"}},
				{map[string]o{"A": ok, "B": ok, "C": ok}, nil}, // an unobserved candidate...
				{map[string]o{"A": ok, "B": ok}, nil},          // ...is dropped
				{map[string]o{"A": ok, "B": ok, "C": ok}, nil},
				{map[string]o{"A": ok, "B": ok, "C": ok}, []string{"discovered:C"}},
			},
		},
		{
			name: "one cause, one alert: violated and restored grouped by shared columns, the most general leads",
			cfg:  Config{Epsilon: eps, K: 1},
			steps: []step{
				{map[string]o{"A": ok, "B": ok, "C": ok, "D": ok}, []string{"discovered:A", "discovered:B", "discovered:C", "discovered:D"}},
				// A, C, D share salary: one event for A (fewest columns); B is apart.
				{map[string]o{"A": bad, "B": bad, "C": bad, "D": bad}, []string{"violated:B", "violated:A+C+D"}}, // by id
				{map[string]o{"A": restore, "B": bad, "C": restore, "D": bad}, []string{"restored:A+C"}},
				{map[string]o{"A": ok, "B": ok, "C": ok, "D": ok}, []string{"restored:B", "restored:D"}},
			},
		},
		{
			name: "AutoMargin: 3 standard errors at eps for 100 records, capped at eps/2",
			cfg:  Config{Epsilon: eps, K: 1, Margin: AutoMargin},
			steps: []step{
				{map[string]o{"A": ok}, []string{"discovered:A"}},
				{map[string]o{"A": o{0.15, false}}, nil}, // margin 0.05: in band
				{map[string]o{"A": o{0.16, false}}, []string{"violated:A"}},
				{map[string]o{"A": o{0.06, true}}, nil},
				{map[string]o{"A": o{0.05, true}}, []string{"restored:A"}},
			},
		},
		{
			name: "MaxTracked evicts the longest non-minimal one; no room means no event",
			cfg:  Config{Epsilon: eps, K: 1, MaxTracked: 2},
			steps: []step{
				{map[string]o{"A": ok, "B": ok}, []string{"discovered:A", "discovered:B"}},
				{map[string]o{"A": held, "B": ok}, nil},
				{map[string]o{"A": held, "B": ok, "C": ok}, []string{"retired:A", "discovered:C"}},
				{map[string]o{"B": ok, "C": ok, "D": ok}, nil},
				{map[string]o{"B": ok, "C": held, "D": ok}, []string{"retired:C", "discovered:D"}},
			},
		},
	}
	schema := eventSchemaT(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.cfg)
			for i, s := range tc.steps {
				evs := tr.Observe(testWindow(i+1), testObs(s.obs))
				validateEvents(t, schema, evs)
				got := summary(evs)
				if !slices.Equal(got, s.want) && !(len(got) == 0 && len(s.want) == 0) {
					t.Fatalf("window %d: events %v, want %v", i+1, got, s.want)
				}
			}
		})
	}
}

func TestTrackerEventFields(t *testing.T) {
	tr := NewTracker(Config{Stream: "payroll", Epsilon: 0.1, Margin: 0.01, K: 2})
	steps := []map[string]o{
		{"A": {0.01, true}},
		{"A": {0.03, true}},
		{"A": {0.2, false}},
		{"A": {0.3, false}},
	}
	var last []Event
	for i, s := range steps {
		last = tr.Observe(testWindow(i+1), testObs(s))
	}
	if len(last) != 1 {
		t.Fatalf("events %v, want one violated", summary(last))
	}
	e := last[0]
	w := testWindow(4)
	want := Event{
		ID: EventID("payroll", DependencyID(testDeps["A"]), w.EndSeq, EventViolated), Type: EventViolated,
		Stream: "payroll", Time: w.EndTime, DependencyID: DependencyID(testDeps["A"]), Dependency: canonical(testDeps["A"]),
		DependencyText: "{}: salary ~ tax (asc)", ErrorBefore: 0.03, ErrorNow: 0.3, Epsilon: 0.1, Margin: 0.01,
		Removals: 30, Window: w,
		Samples: []Sample{{Topic: "payroll", Partition: 0, Offset: 30, Values: map[string]string{"salary": "1000"}}},
	}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("event\n%+v\nwant\n%+v", e, want)
	}
	errs := tr.Errors()
	if len(errs) != 1 || errs[0].Error != 0.3 || errs[0].State != StateViolated || !errs[0].Measured {
		t.Fatalf("Errors() = %+v", errs)
	}
	if got := tr.States(); got["violated"] != 1 || got["holding"] != 0 || got["pinned"] != 0 {
		t.Fatalf("States() = %v", got)
	}
}

func TestTrackerReplayAndDuplicates(t *testing.T) {
	tr := NewTracker(Config{Epsilon: 0.1, K: 1})
	obs := testObs(map[string]o{"A": {0, true}})
	obs = append(obs, obs[0]) // the same dependency twice
	if got := summary(tr.Observe(testWindow(1), obs)); !slices.Equal(got, []string{"discovered:A"}) {
		t.Fatalf("events %v", got)
	}
	if got := tr.Observe(testWindow(1), testObs(map[string]o{"A": {0.5, false}})); got != nil {
		t.Fatalf("replayed window produced %v", summary(got))
	}
	if got := summary(tr.Observe(testWindow(2), testObs(map[string]o{"A": {0.5, false}}))); !slices.Equal(got, []string{"violated:A"}) {
		t.Fatalf("events %v", got)
	}
}

func TestTrackedOrder(t *testing.T) {
	tr := NewTracker(Config{Epsilon: 0.1, Pinned: []discovery.Dependency{testDeps["D"]}})
	tr.Observe(testWindow(1), testObs(map[string]o{"A": {0, true}, "B": {0, true}, "C": {0, true}}))
	got := tr.Tracked()
	if len(got) != 4 {
		t.Fatalf("Tracked() = %v", got)
	}
	for i := 1; i < len(got); i++ {
		if DependencyID(got[i-1]) >= DependencyID(got[i]) {
			t.Fatalf("Tracked() not ordered by id: %v", got)
		}
	}
	if s := tr.States(); s["holding"] != 4 || s["pinned"] != 1 {
		t.Fatalf("States() = %v", s)
	}
}

// randomSteps is a reproducible sequence of windows over all test
// dependencies, with errors around eps so every transition happens.
func randomSteps(seed uint64, n int) []map[string]o {
	r := rand.New(rand.NewPCG(seed, 1))
	errs := []float64{0, 0.02, 0.08, 0.1, 0.11, 0.12, 0.2, 0.5}
	steps := make([]map[string]o, n)
	for i := range steps {
		s := map[string]o{}
		for name := range testDeps {
			if r.IntN(8) == 0 {
				continue // not observed
			}
			e := errs[r.IntN(len(errs))]
			s[name] = o{e, e <= 0.1 && r.IntN(3) > 0}
		}
		steps[i] = s
	}
	return steps
}

func TestTrackerDeterministicAcrossRestore(t *testing.T) {
	base := Config{Stream: "s", Epsilon: 0.1, Margin: 0.01, K: 2, RetireAfter: 2, RetireViolatedAfter: 4,
		Pinned: []discovery.Dependency{testDeps["D"]}, MaxTracked: 3}
	auto := base
	auto.Margin, auto.DiscoverAfter, auto.K = AutoMargin, 2, 1
	for ci, cfg := range []Config{base, auto} {
		testDeterministicAcrossRestore(t, cfg, ci == 0)
	}
}

// restoredRun feeds a tracker of cfg n windows (step(tr, i) observes the
// i-th), saving and restoring it from its JSON before every restoreEvery-th
// one (0: never), and returns the events and the final state.
func restoredRun(t *testing.T, cfg Config, n, restoreEvery int, step func(tr *Tracker, i int) []Event) ([]Event, []byte) {
	t.Helper()
	tr := NewTracker(cfg)
	var all []Event
	for i := range n {
		if restoreEvery > 0 && i%restoreEvery == 0 {
			b, err := tr.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			tr = NewTracker(cfg)
			if err := tr.UnmarshalJSON(b); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, step(tr, i)...)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return all, b
}

func testDeterministicAcrossRestore(t *testing.T, cfg Config, allTypes bool) {
	schema := eventSchemaT(t)
	for seed := uint64(1); seed <= 20; seed++ {
		steps := randomSteps(seed, 60)
		run := func(restoreEvery int) ([]Event, []byte) {
			return restoredRun(t, cfg, len(steps), restoreEvery, func(tr *Tracker, i int) []Event {
				return tr.Observe(testWindow(i+1), testObs(steps[i]))
			})
		}
		want, wantState := run(0)
		validateEvents(t, schema, want)
		again, againState := run(0)
		if !reflect.DeepEqual(want, again) || string(wantState) != string(againState) {
			t.Fatalf("seed %d: two identical runs differ", seed)
		}
		types := map[EventType]bool{}
		for _, e := range want {
			types[e.Type] = true
		}
		for _, restoreEvery := range []int{1, 3, 7} {
			got, gotState := run(restoreEvery)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d restore every %d: events differ:\n%v\nwant\n%v", seed, restoreEvery, summary(got), summary(want))
			}
			if string(gotState) != string(wantState) {
				t.Fatalf("seed %d restore every %d: final state differs:\n%s\nwant\n%s", seed, restoreEvery, gotState, wantState)
			}
		}
		if allTypes && seed == 1 && len(types) != 4 {
			t.Fatalf("random sequence should exercise all event types, got %v", types)
		}
	}
}

func TestTrackerUnmarshalErrors(t *testing.T) {
	for _, in := range []string{
		`{`,
		`{"version":2}`,
		`{"version":1,"dependencies":[{"dependency":{"kind":"zz"},"state":"holding"}]}`,
		`{"version":1,"dependencies":[{"dependency":{"kind":"ofd","rhs":"a"},"state":"weird"}]}`,
	} {
		tr := NewTracker(Config{Epsilon: 0.1})
		if err := tr.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("UnmarshalJSON(%s) succeeded", in)
		}
	}
}

func TestTrackerUnmarshalFollowsConfigPins(t *testing.T) {
	a := NewTracker(Config{Epsilon: 0.1, Pinned: []discovery.Dependency{testDeps["A"]}})
	b, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	c := NewTracker(Config{Epsilon: 0.1, Pinned: []discovery.Dependency{testDeps["B"]}})
	if err := c.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range c.Errors() {
		got = append(got, fmt.Sprintf("%s pinned=%v", depName(e.ID), e.Pinned))
	}
	slices.Sort(got)
	if want := "A pinned=false,B pinned=true"; strings.Join(got, ",") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestZeroTracker(t *testing.T) {
	var tr Tracker
	if got := summary(tr.Observe(testWindow(1), testObs(map[string]o{"A": {0, true}}))); !slices.Equal(got, []string{"discovered:A"}) {
		t.Fatalf("events %v", got)
	}
	var tr2 Tracker
	b, _ := tr.MarshalJSON()
	if err := tr2.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if len(tr2.Tracked()) != 1 {
		t.Fatal("restored zero tracker lost its dependency")
	}
}

// FuzzTrackerUnmarshal: a damaged persisted state is an error, never a
// panic, and a tracker that accepted it keeps working.
func FuzzTrackerUnmarshal(f *testing.F) {
	tr := NewTracker(Config{Epsilon: 0.1, K: 2, Pinned: []discovery.Dependency{testDeps["D"]}})
	for i, s := range randomSteps(3, 10) {
		tr.Observe(testWindow(i+1), testObs(s))
	}
	good, err := tr.MarshalJSON()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"dependencies":[null]}`))
	f.Add([]byte(`{"version":1,"dependencies":[{"dependency":{"kind":"od","lhs":["a"],"rhs":["b"]},"state":"violated","streak":-5}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := NewTracker(Config{Epsilon: 0.1, K: 2, RetireAfter: 1, MaxTracked: 2})
		if err := tr.UnmarshalJSON(b); err != nil {
			return
		}
		for i, s := range randomSteps(5, 4) {
			tr.Observe(testWindow(1000+i), testObs(s))
		}
		if _, err := tr.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
		_ = tr.States()
		_ = tr.Errors()
	})
}

func FuzzEventUnmarshal(f *testing.F) {
	b, err := json.Marshal(sampleEvent())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"dependency":{"kind":"od","lhs":[],"rhs":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return
		}
		if _, err := json.Marshal(e); err != nil {
			// A decoded event must encode again (the outbox re-sends it).
			t.Fatalf("decoded event does not encode: %v", err)
		}
		_ = e.Text()
	})
}

// TestTrackerStrongestLeads: in a group, the strongest dependency carries
// the event whatever its size; the others are related, with their own
// errors, and are violated too (no second event when they stay broken).
func TestTrackerStrongestLeads(t *testing.T) {
	tr := NewTracker(Config{Epsilon: 0.1, K: 1})
	a, c := testDeps["A"], testDeps["C"]
	obs := func(e float64, min bool) []Observation {
		r := int(e * testRecords)
		return []Observation{
			{Dependency: a, Removals: r, Error: e, Minimal: min, Strength: 0.6},
			{Dependency: c, Removals: r + 1, Error: e + 0.01, Minimal: min, Strength: 0.9},
		}
	}
	tr.Observe(testWindow(1), obs(0, true))
	evs := tr.Observe(testWindow(2), obs(0.3, false))
	if got := summary(evs); !slices.Equal(got, []string{"violated:C+A"}) {
		t.Fatalf("events %v, want [violated:C+A]", got)
	}
	r := evs[0].Related[0]
	if r.DependencyText != a.String() || r.ErrorBefore != 0 || r.ErrorNow != 0.3 || r.Removals != 30 {
		t.Errorf("related %+v, want A 0 -> 0.3 with 30 removals", r)
	}
	if st := tr.States(); st["violated"] != 2 {
		t.Errorf("states %v, want both violated", st)
	}
	if evs := tr.Observe(testWindow(3), obs(0.3, false)); len(evs) != 0 {
		t.Errorf("still broken: events %v, want none", summary(evs))
	}
}

func TestNoiseMargin(t *testing.T) {
	for _, tc := range []struct {
		eps  float64
		n    int
		want float64
	}{
		{0.05, 10000, 3 * 0.0021794494717703367},
		{0.01, 100, 0.005}, // capped at eps/2
		{0, 10000, 0},
		{0.05, 0, 0},
	} {
		if got := NoiseMargin(tc.eps, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("NoiseMargin(%v, %d) = %v, want %v", tc.eps, tc.n, got, tc.want)
		}
	}
}

// TestTrackerObserveCheck: check windows (no discovery) drive violated and
// restored like any window, and confirm candidates (counted by the
// checker: Watched), but neither count towards retirement for want of
// minimality nor make candidates.
func TestTrackerObserveCheck(t *testing.T) {
	tr := NewTracker(Config{Stream: "payroll", Epsilon: 0.05, RetireAfter: 2, DiscoverAfter: 2})
	seq := 0
	step := func(discovery bool, m map[string]o) []string {
		seq++
		if discovery {
			return summary(tr.Observe(testWindow(seq), testObs(m)))
		}
		return summary(tr.ObserveCheck(testWindow(seq), testObs(m)))
	}
	if got := step(true, map[string]o{"A": {0.01, true}}); len(got) != 0 {
		t.Fatalf("first minimal window: %v, want none (DiscoverAfter 2)", got)
	}
	if w := tr.Watched(); len(w) != 1 || len(tr.Tracked()) != 0 {
		t.Fatalf("Watched() = %v, Tracked() = %v: want the candidate watched, not tracked", w, tr.Tracked())
	}
	// A check that does not observe the candidate leaves it; a discovery
	// that does not drops it.
	step(false, map[string]o{})
	step(true, map[string]o{})
	if got := step(false, map[string]o{"A": {0.01, false}}); len(got) != 0 {
		t.Fatalf("check after the candidate was dropped: %v, want none", got)
	}
	step(true, map[string]o{"A": {0.01, true}})
	step(false, map[string]o{})
	// The check observing it confirms it.
	if got := step(false, map[string]o{"A": {0.01, false}}); !slices.Equal(got, []string{"discovered:A"}) {
		t.Fatalf("check holding the candidate: %v, want discovered:A", got)
	}
	// Held and not minimal once: one more discovery window would retire it
	// (RetireAfter 2); any number of check windows do not.
	step(true, map[string]o{"A": {0.01, false}})
	for i := 0; i < 5; i++ {
		if got := step(false, map[string]o{"A": {0.02, false}}); len(got) != 0 {
			t.Fatalf("check window %d: %v, want none", i, got)
		}
	}
	if got := step(false, map[string]o{"A": {0.2, false}}); !slices.Equal(got, []string{"violated:A"}) {
		t.Fatalf("check window above eps: %v, want violated:A", got)
	}
	if got := step(false, map[string]o{"A": {0.01, false}}); !slices.Equal(got, []string{"restored:A"}) {
		t.Fatalf("check window back under eps: %v, want restored:A", got)
	}
	// The transition reset the count: two discovery windows retire it.
	step(true, map[string]o{"A": {0.01, false}})
	if got := step(true, map[string]o{"A": {0.01, false}}); !slices.Equal(got, []string{"retired:A"}) {
		t.Fatalf("discovery windows, held and not minimal: %v, want retired:A", got)
	}
}
