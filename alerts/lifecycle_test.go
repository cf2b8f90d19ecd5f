package alerts

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// ob is one observation of a lifecycle step: error, minimality, strength
// (when rated or found), whether it was rated on the window, the rule that
// replaced it, and an FD's mapping ("k=v,k=v": classes of 10 records).
type ob struct {
	e     float64
	min   bool
	s     float64
	rated bool
	by    string
	back  bool
	mp    string
}

func (x ob) observation(d discovery.Dependency) Observation {
	r := int(x.e*testRecords + 0.5)
	o := Observation{Dependency: d, Removals: r, Error: float64(r) / testRecords, Minimal: x.min,
		Strength: x.s, Rated: x.rated, StepsBack: x.back}
	if x.by != "" {
		o.ReplacedBy = testDeps[x.by].String()
	}
	if x.mp != "" {
		o.Mapping = &Mapping{Records: testRecords}
		for _, kv := range strings.Split(x.mp, ",") {
			k, v, _ := strings.Cut(kv, "=")
			o.Mapping.Classes = append(o.Mapping.Classes, ClassValue{Key: []string{k}, Value: v, Rows: 10})
		}
	}
	return o
}

// lstep is one window of a lifecycle scenario: where it comes from, the
// observations by test dependency name, the events wanted ("type:name",
// with "+name" per related one and ">name" for replaced_by).
type lstep struct {
	src  Source
	obs  map[string]ob
	want []string
}

func (s lstep) observations() []Observation {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.obs {
			if !yield(n) {
				return
			}
		}
	})
	out := make([]Observation, 0, len(names))
	for _, n := range names {
		out = append(out, s.obs[n].observation(testDeps[n]))
	}
	return out
}

func lifecycleSummary(evs []Event) []string {
	out := summary(evs)
	for i, e := range evs {
		for n, d := range testDeps {
			if e.ReplacedBy != "" && e.ReplacedBy == d.String() {
				out[i] += ">" + n
			}
		}
	}
	return out
}

// TestTrackerLifecycle: confirmation by checks, honest discovered events,
// strength hysteresis, replaced and changed rules (docs/DESIGN.md,
// "Streaming semantics"; the rules of Tracker).
func TestTrackerLifecycle(t *testing.T) {
	const eps = 0.1
	found := ob{e: 0.01, min: true, s: 0.9} // a merged discovery found it; its strength
	ok := ob{e: 0.01, s: 0.9, rated: true}  // holds, rated reliable on the window
	bad := ob{e: 0.3}
	judged := Config{Epsilon: eps, K: 1, DiscoverAfter: 2, MinStrength: 0.5, RetireAfter: 2}
	tests := []struct {
		name  string
		cfg   Config
		steps []lstep
	}{
		{"a merged discovery's rule is discovered at that check: its window and the check's make two", judged, []lstep{
			{Merged, map[string]ob{"A": {e: 0.02, min: true, s: 0.9, rated: true}}, []string{"discovered:A"}},
		}},
		{"a due candidate not rated on the window waits for a rated check", judged, []lstep{
			{Merged, map[string]ob{"A": found}, nil},
			{Checked, map[string]ob{"A": {e: 0.02}}, nil},
			{Checked, map[string]ob{"A": ok}, []string{"discovered:A"}},
		}},
		{"not reliable on its own window: dropped, not discovered", judged, []lstep{
			{Merged, map[string]ob{"A": {e: 0.01, min: true, s: 0.3, rated: true}}, nil},
			{Checked, map[string]ob{"A": ok}, nil},
		}},
		{"broken on its own window: dropped, not discovered (the older snapshot held)", judged, []lstep{
			{Merged, map[string]ob{"A": {e: 0.2, min: true, s: 0.9, rated: true}}, nil},
			{Checked, map[string]ob{"A": ok}, nil},
		}},
		{"a candidate a later merged discovery does not find is dropped", Config{Epsilon: eps, K: 1, DiscoverAfter: 3}, []lstep{
			{Merged, map[string]ob{"A": found}, nil},
			{Merged, map[string]ob{"A": {e: 0.01}}, nil},
			{Checked, map[string]ob{"A": ok}, nil},
		}},
		{"DiscoverAfter 3 after a discovery on the window: two checks more", Config{Epsilon: eps, K: 1, DiscoverAfter: 3, MinStrength: 0.5}, []lstep{
			{Discovered, map[string]ob{"A": found}, nil},
			{Checked, map[string]ob{"A": ok}, nil},
			{Checked, map[string]ob{"A": ok}, []string{"discovered:A"}},
		}},
		{"strength hysteresis: weak only below the band for RetireAfter rated windows", judged, []lstep{
			{Merged, map[string]ob{"A": {e: 0.01, min: true, s: 0.9, rated: true}}, []string{"discovered:A"}},
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.45}}, nil}, // below 0.5, above the band
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.45}}, nil},
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.45}}, nil},
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.35}}, nil},
			{Checked, map[string]ob{"A": {e: 0.01}}, nil}, // not rated: no count
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.6}}, nil},
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.35}}, nil},
			{Discovered, map[string]ob{"A": {e: 0.01, min: true, s: 0.35}}, []string{"retired:A"}},
		}},
		{"weak as a merged discovery measures it: retired after RetireAfter merges", judged, []lstep{
			{Discovered, map[string]ob{"A": found}, nil},
			{Checked, map[string]ob{"A": ok}, []string{"discovered:A"}},
			{Merged, map[string]ob{"A": {e: 0.01, min: true, s: 0.3}}, nil},
			{Checked, map[string]ob{"A": {e: 0.01}}, nil},
			{Merged, map[string]ob{"A": {e: 0.01, min: true, s: 0.3}}, []string{"retired:A"}},
		}},
		{"holding and reliable: never retired, though a more general rule was found", judged, []lstep{
			{Discovered, map[string]ob{"C": found}, nil},
			{Checked, map[string]ob{"C": ok}, []string{"discovered:C"}},
			{Merged, map[string]ob{"C": {e: 0.01, s: 0.8, rated: true, by: "A"}}, nil},
			{Merged, map[string]ob{"C": {e: 0.01, s: 0.8, rated: true, by: "A"}}, nil},
			{Merged, map[string]ob{"C": {e: 0.01, s: 0.8, rated: true, by: "A"}}, nil},
		}},
		{"replaced: retired once not reliable, naming the rule that replaced it", judged, []lstep{
			{Discovered, map[string]ob{"C": found}, nil},
			{Checked, map[string]ob{"C": ok}, []string{"discovered:C"}},
			{Merged, map[string]ob{"C": {e: 0.01, s: 0.2, rated: true, by: "A"}}, nil},
			{Merged, map[string]ob{"C": {e: 0.01, s: 0.2, rated: true, by: "A"}}, []string{"retired:C>A"}},
		}},
		{"steps back: retired after RetireAfter discoveries, naming what states it", judged, []lstep{
			{Discovered, map[string]ob{"B": found}, nil},
			{Checked, map[string]ob{"B": ok}, []string{"discovered:B"}},
			{Merged, map[string]ob{"B": {e: 0.01, min: true, s: 0.9, by: "A", back: true}}, nil},
			{Merged, map[string]ob{"B": {e: 0.01, min: true, s: 0.9, by: "A", back: true}}, []string{"retired:B>A"}},
		}},
		{"changed: an FD back under eps with other values; restored when back with its own", Config{Epsilon: eps, K: 1}, []lstep{
			{Discovered, map[string]ob{"B": {e: 0, min: true, mp: "z1=a,z2=b,z3=c"}}, []string{"discovered:B"}},
			{Checked, map[string]ob{"B": bad}, []string{"violated:B"}},
			{Checked, map[string]ob{"B": {e: 0, mp: "z1=x,z2=y,z3=c"}}, []string{"changed:B"}}, // 20 of 100 records moved
			{Checked, map[string]ob{"B": {e: 0.01}}, nil},
			{Checked, map[string]ob{"B": bad}, []string{"violated:B"}},
			{Checked, map[string]ob{"B": {e: 0, mp: "z1=x,z2=y,z3=q"}}, []string{"restored:B"}}, // 10 of 100 moved: not more than eps
		}},
		{"restored without a mapping to compare with", Config{Epsilon: eps, K: 1}, []lstep{
			{Discovered, map[string]ob{"B": {e: 0, min: true}}, []string{"discovered:B"}},
			{Checked, map[string]ob{"B": bad}, []string{"violated:B"}},
			{Checked, map[string]ob{"B": {e: 0, mp: "z1=x,z2=y,z3=q"}}, []string{"restored:B"}},
		}},
	}
	schema := eventSchemaT(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tc.cfg)
			for i, s := range tc.steps {
				var evs []Event
				switch s.src {
				case Discovered:
					evs = tr.Observe(testWindow(i+1), s.observations())
				case Merged:
					evs = tr.ObserveMerge(testWindow(i+1), s.observations())
				default:
					evs = tr.ObserveCheck(testWindow(i+1), s.observations())
				}
				validateEvents(t, schema, evs)
				if got := lifecycleSummary(evs); !slices.Equal(got, s.want) && !(len(got) == 0 && len(s.want) == 0) {
					t.Fatalf("window %d: events %v, want %v", i+1, got, s.want)
				}
			}
		})
	}
}

// TestTrackerDiscoveredIsItsWindows: a discovered event's error, removals
// and strength are the confirming window's, not the proposing discovery's.
func TestTrackerDiscoveredIsItsWindows(t *testing.T) {
	tr := NewTracker(Config{Epsilon: 0.1, K: 1, DiscoverAfter: 2, MinStrength: 0.5})
	tr.Observe(testWindow(1), []Observation{ob{e: 0.01, min: true, s: 0.9}.observation(testDeps["A"])})
	evs := tr.ObserveCheck(testWindow(2), []Observation{ob{e: 0.04, s: 0.7, rated: true}.observation(testDeps["A"])})
	if len(evs) != 1 {
		t.Fatalf("events %v, want one discovered", summary(evs))
	}
	if e := evs[0]; e.ErrorBefore != 0.01 || e.ErrorNow != 0.04 || e.Removals != 4 || e.Strength != 0.7 {
		t.Fatalf("discovered %+v: want error 0.01 -> 0.04, 4 removals, strength 0.7", e)
	}
}

// TestTrackerObserveFound: a discovery merged on the window observed last
// (it ended after that window's check) proposes its new rules there and
// discovers them when due; the tracked rules and the other candidates,
// observed on that window already, do not move, and any other window is
// ignored.
func TestTrackerObserveFound(t *testing.T) {
	tr := NewTracker(Config{Epsilon: 0.1, K: 1, DiscoverAfter: 2, MinStrength: 0.5})
	a, b, c := testDeps["A"], testDeps["B"], testDeps["C"]
	tr.Observe(testWindow(1), []Observation{ob{e: 0, min: true, s: 0.9}.observation(a), ob{e: 0.01, min: true, s: 0.9}.observation(c)})
	evs := tr.ObserveCheck(testWindow(2), []Observation{ob{e: 0.3}.observation(a), ob{e: 0.01, s: 0.3, rated: true}.observation(c)})
	if got := summary(evs); len(got) != 0 {
		t.Fatalf("window 2: %v, want none (A broke, C weak)", got)
	}
	if got := summary(tr.ObserveFound(testWindow(3), []Observation{ob{e: 0, min: true, s: 0.9, rated: true}.observation(b)})); len(got) != 0 {
		t.Fatalf("a window not observed: %v, want it ignored", got)
	}
	// Window 2 again: B is new, rated reliable there, so discovered (the
	// discovery's window and this one); A and C, dropped there, are
	// proposed again and fail on the same measures.
	found := []Observation{ob{e: 0.3, min: true, s: 0.9}.observation(a), ob{e: 0, min: true, s: 0.9, rated: true}.observation(b),
		ob{e: 0.01, min: true, s: 0.3, rated: true}.observation(c)} // window 2's measures
	if got := summary(tr.ObserveFound(testWindow(2), found)); !slices.Equal(got, []string{"discovered:B"}) {
		t.Fatalf("found on window 2: %v, want discovered:B", got)
	}
	if tracked := tr.Tracked(); len(tracked) != 1 || DependencyID(tracked[0]) != DependencyID(b) {
		t.Fatalf("tracked %v, want B only (A and C candidates dropped at window 2)", tracked)
	}
	// Found again: B is tracked now, nothing happens.
	if got := summary(tr.ObserveFound(testWindow(2), found)); len(got) != 0 {
		t.Fatalf("found twice: %v, want none", got)
	}
}

// TestTrackerChangedEvent: the changed event's Change, its JSON and text.
func TestTrackerChangedEvent(t *testing.T) {
	tr := NewTracker(Config{Stream: "flights", Epsilon: 0.05, K: 1})
	b := testDeps["B"]
	tr.Observe(testWindow(1), []Observation{ob{e: 0, min: true, mp: "z1=2475,z2=606"}.observation(b)})
	tr.ObserveCheck(testWindow(2), []Observation{ob{e: 0.3}.observation(b)})
	evs := tr.ObserveCheck(testWindow(3), []Observation{ob{e: 0, mp: "z1=3982,z2=975,z9=1"}.observation(b)})
	if got := summary(evs); !slices.Equal(got, []string{"changed:B"}) {
		t.Fatalf("events %v, want changed:B", got)
	}
	c := evs[0].Change
	if c == nil || c.Share != 0.2 || c.Moved != 2 || c.Compared != 2 || len(c.Examples) != 2 ||
		c.Examples[0].Class["zip"] != "z1" || c.Examples[0].Before != "2475" || c.Examples[0].After != "3982" {
		t.Fatalf("change %+v", c)
	}
	want := "city changed in 2 of the 2 zip classes compared (20% of the window's records): z1 2475 -> 3982; z2 606 -> 975"
	if got := c.Text(b); got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	var back Event
	data, err := evs[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := back.UnmarshalJSON(data); err != nil || back.Change == nil || back.Change.Examples[1].After != "975" {
		t.Fatalf("round trip: %v %+v", err, back.Change)
	}
	if n := len(tr.Tracked()); n != 1 {
		t.Fatalf("tracked %d, want the rule still watched", n)
	}
}

// TestTrackerNeeds: what the tracker asks the caller to measure.
func TestTrackerNeeds(t *testing.T) {
	tr := NewTracker(Config{Epsilon: 0.1, K: 1, DiscoverAfter: 2, MinStrength: 0.5})
	a, b, c := testDeps["A"], testDeps["B"], testDeps["C"]
	render := func(ns []Need) []string {
		var out []string
		for _, n := range ns {
			s := depName(DependencyID(n.Dependency)) + ":"
			if n.Rate {
				s += "rate"
			}
			if n.Map {
				s += "map"
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return out
	}
	// A merged discovery's new rules that hold: rated, an FD mapped (it may be discovered now).
	obs := []Observation{ob{e: 0.01, min: true, s: 0.9}.observation(a), ob{e: 0.01, min: true, s: 0.9}.observation(b),
		ob{e: 0.5, min: true, s: 0.9}.observation(c)}
	if got, want := render(tr.Needs(testWindow(1), obs, Merged)), []string{"A:rate", "B:ratemap"}; !slices.Equal(got, want) {
		t.Fatalf("merge with new rules: %v, want %v", got, want)
	}
	// In a window discovery ran on, strengths are known: only the mapping.
	if got, want := render(tr.Needs(testWindow(1), obs, Discovered)), []string(nil); !slices.Equal(got, want) {
		t.Fatalf("discovery window: %v, want %v (DiscoverAfter 2: not due)", got, want)
	}
	obs[0].Rated, obs[1].Rated = true, true
	tr.ObserveMerge(testWindow(1), obs) // A and B discovered
	// Violated B coming back: mapped; A, tracked and holding, not found by a merge: rated.
	tr.ObserveCheck(testWindow(2), []Observation{ob{e: 0.01}.observation(a), ob{e: 0.5}.observation(b)})
	obs = []Observation{ob{e: 0.01}.observation(a), ob{e: 0.01}.observation(b)}
	if got, want := render(tr.Needs(testWindow(3), obs, Merged)), []string{"A:rate", "B:map"}; !slices.Equal(got, want) {
		t.Fatalf("merge: %v, want %v", got, want)
	}
	if got, want := render(tr.Needs(testWindow(3), obs, Checked)), []string{"B:map"}; !slices.Equal(got, want) {
		t.Fatalf("check: %v, want %v", got, want)
	}
}

func TestReplacedBy(t *testing.T) {
	dep := func(s string) discovery.Dependency {
		d, err := discovery.ParseDependency(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	res := func(s string, reliable bool) discovery.Result {
		return discovery.Result{Dependency: dep(s), Reliable: reliable}
	}
	for _, tc := range []struct {
		d       string
		results []discovery.Result
		want    string
	}{
		{"{a,b}: [] -> c", []discovery.Result{res("{a}: [] -> c", false), res("{b}: [] -> c", true)}, "{b}: [] -> c"},
		{"{a}: [] -> c", []discovery.Result{res("{a}: [] -> c", true), res("{a,b}: [] -> c", true)}, ""},
		{"{a,b}: [] -> c", []discovery.Result{res("key(a)", true)}, "key(a)"},
		{"{a}: x ~ y (asc)", []discovery.Result{res("{}: y ~ x (asc)", true)}, "{}: y ~ x (asc)"},
		{"{a}: x ~ y (asc)", []discovery.Result{res("{}: x ~ y (desc)", true)}, ""},
		{"{a}: x ~ y (asc)", []discovery.Result{res("{a}: [] -> y", true)}, "{a}: [] -> y"},
	} {
		if got := ReplacedBy(dep(tc.d), tc.results); got != tc.want {
			t.Errorf("ReplacedBy(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestMappingOf(t *testing.T) {
	// zip: 1 1 1 2 3 3; city: a a b c d d (codes from 1; 0 is NULL).
	tab, err := table.Encode([]table.DictColumn{
		{Name: "zip", Dict: []string{"1", "2", "3"}, Codes: []uint32{1, 1, 1, 2, 3, 3}},
		{Name: "city", Dict: []string{"a", "b", "c", "d"}, Codes: []uint32{1, 1, 2, 3, 4, 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := MappingOf(tab, testDeps["B"], 2)
	want := &Mapping{Records: 6, Classes: []ClassValue{{Key: []string{"1"}, Value: "a", Rows: 3}, {Key: []string{"3"}, Value: "d", Rows: 2}}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("MappingOf = %+v, want %+v", m, want)
	}
	if MappingOf(tab, testDeps["A"], 0) != nil {
		t.Fatal("MappingOf an OC is not nil")
	}
}

// randomLifecycle is a reproducible sequence of windows of every source,
// with strengths around the threshold, ratings, replacements and the
// mappings of B (two values per class, so that B changes and restores).
func randomLifecycle(seed uint64, n int) []lstep {
	r := rand.New(rand.NewPCG(seed, 7))
	errs := []float64{0, 0.02, 0.08, 0.1, 0.11, 0.2, 0.5}
	strengths := []float64{0.2, 0.35, 0.45, 0.55, 0.9}
	maps := []string{"z1=a,z2=b,z3=c", "z1=x,z2=y,z3=c", "z1=a,z2=b,z3=q"}
	steps := make([]lstep, n)
	for i := range steps {
		s := lstep{src: Source(r.IntN(3)), obs: map[string]ob{}}
		for name := range testDeps {
			if r.IntN(8) == 0 {
				continue
			}
			x := ob{e: errs[r.IntN(len(errs))], s: strengths[r.IntN(len(strengths))], rated: r.IntN(2) == 0}
			x.min = x.e <= 0.1 && r.IntN(3) > 0
			if !x.min && r.IntN(2) == 0 {
				x.by = "A"
			}
			if name == "B" && r.IntN(2) == 0 {
				x.mp = maps[r.IntN(len(maps))]
			}
			s.obs[name] = x
		}
		steps[i] = s
	}
	return steps
}

func observeStep(tr *Tracker, w WindowInfo, s lstep) []Event {
	switch s.src {
	case Discovered:
		return tr.Observe(w, s.observations())
	case Merged:
		return tr.ObserveMerge(w, s.observations())
	}
	return tr.ObserveCheck(w, s.observations())
}

// TestLifecycleDeterministicAcrossRestore: a tracker saved and restored
// between any two windows (candidates, mappings, weakness and replacement
// counts included) gives the events and state of one that never stopped.
func TestLifecycleDeterministicAcrossRestore(t *testing.T) {
	cfg := Config{Stream: "s", Epsilon: 0.1, K: 1, RetireAfter: 2, DiscoverAfter: 2, MinStrength: 0.5, MaxTracked: 3}
	schema := eventSchemaT(t)
	types := map[EventType]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		steps := randomLifecycle(seed, 80)
		run := func(restoreEvery int) ([]Event, string) {
			evs, state := restoredRun(t, cfg, len(steps), restoreEvery, func(tr *Tracker, i int) []Event {
				return observeStep(tr, testWindow(i+1), steps[i])
			})
			return evs, string(state)
		}
		want, wantState := run(0)
		validateEvents(t, schema, want)
		for _, e := range want {
			types[e.Type] = true
		}
		for _, every := range []int{1, 3} {
			got, gotState := run(every)
			if !reflect.DeepEqual(got, want) || gotState != wantState {
				t.Fatalf("seed %d, restored every %d windows: events %v\nwant %v", seed, every, summary(got), summary(want))
			}
		}
	}
	if len(types) != len(EventTypes) {
		t.Fatalf("the random sequences gave the types %v, want all of %v", types, EventTypes)
	}
}
