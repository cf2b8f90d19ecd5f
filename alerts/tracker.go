package alerts

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/odwatch/odwatch/discovery"
)

// Defaults for Config fields left zero.
const (
	DefaultRetireAfter         = 3
	defaultRetireViolatedAfter = 100
	defaultMaxTracked          = 1000
)

// AutoMargin, as Config.Margin, derives the margin of each window from its
// size: NoiseMargin(Epsilon, records).
const AutoMargin = -1.0

// marginZ is the number of standard errors NoiseMargin puts between eps and
// each edge of the band.
const marginZ = 3

// NoiseMargin is the margin that covers the sampling noise of a window of n
// records: marginZ standard errors of a proportion at eps,
// marginZ*sqrt(eps*(1-eps)/n), at most eps/2 so that a violated dependency
// can still be restored (at e <= eps - margin). A dependency whose true
// error is eps crosses eps+margin by chance in about 0.1% of windows. It is
// 0 for eps = 0 or an empty window.
func NoiseMargin(eps float64, n int) float64 {
	if n <= 0 || eps <= 0 {
		return 0
	}
	return min(marginZ*math.Sqrt(eps*(1-eps)/float64(n)), eps/2)
}

// State is the hysteresis state of a tracked dependency.
type State string

const (
	// StateHolding: the dependency held (e <= eps) when it was found or restored
	// and has not exceeded eps+margin for K consecutive windows since.
	StateHolding State = "holding"
	// StateViolated: a violated event was emitted and no restored event since.
	StateViolated State = "violated"
)

// Config configures a Tracker.
type Config struct {
	Stream  string
	Epsilon float64
	// Margin is the hysteresis half-width: a holding dependency is violated
	// above Epsilon+Margin, a violated one restored at or below
	// Epsilon-Margin. A negative Margin (AutoMargin) is NoiseMargin of each
	// window's size; NaN is taken as 0.
	Margin float64
	// K is the number of consecutive windows a condition must hold before the
	// transition fires; values below 1 mean 1.
	K int
	// RetireAfter is the number of consecutive windows an unpinned holding
	// dependency may hold without being minimal (a more general one replaced
	// it), or go unobserved, before it is retired. 0 means DefaultRetireAfter.
	RetireAfter int
	// RetireViolatedAfter is the number of consecutive windows, counted after
	// its violated event, an unpinned violated dependency may stay non-minimal
	// before it is retired (it is kept that long so that a restored event can
	// still be reported). 0 means 100 (defaultRetireViolatedAfter), negative
	// never.
	RetireViolatedAfter int
	// Pinned dependencies are tracked from the start and never retired.
	Pinned []discovery.Dependency
	// MaxTracked caps the tracked set (pinned ones included; they are never
	// dropped). 0 means 1000 (defaultMaxTracked). See Tracker.
	MaxTracked int
	// DiscoverAfter is the number of consecutive windows a dependency must
	// be minimal (and, when the caller filters, reliable) before it is
	// tracked and discovered; values below 1 mean 1 (at once). The monitor's
	// default is 2: a dependency that holds by chance in one window is no
	// news.
	DiscoverAfter int
}

func (c Config) normalized() Config {
	if c.K < 1 {
		c.K = 1
	}
	if math.IsNaN(c.Margin) {
		c.Margin = 0
	}
	if c.Margin < 0 {
		c.Margin = AutoMargin
	}
	if c.DiscoverAfter < 1 {
		c.DiscoverAfter = 1
	}
	if c.RetireAfter <= 0 {
		c.RetireAfter = DefaultRetireAfter
	}
	if c.RetireViolatedAfter == 0 {
		c.RetireViolatedAfter = defaultRetireViolatedAfter
	}
	if c.MaxTracked <= 0 {
		c.MaxTracked = defaultMaxTracked
	}
	return c
}

// entry is the tracked state of one dependency. Field names are its
// persisted form (see Tracker.MarshalJSON).
type entry struct {
	ID         string               `json:"id"`
	Dependency discovery.Dependency `json:"dependency"`
	Pinned     bool                 `json:"pinned"`
	State      State                `json:"state"`
	// Streak counts consecutive windows beyond the band in the direction of
	// the next transition (above eps+margin when holding, at or below
	// eps-margin when violated).
	Streak int `json:"streak"`
	// ErrorBefore is the error of the last window before the streak began.
	ErrorBefore float64 `json:"error_before"`
	// LastError/LastRemovals are from the last window with an observation;
	// Measured says whether there was one.
	LastError    float64 `json:"last_error"`
	LastRemovals int     `json:"last_removals"`
	Measured     bool    `json:"measured"`
	// Strength is the one observed in the last window in which it held
	// (Observation.Strength): a breaking dependency's strength drops, and
	// the strongest of a group is judged as the rules were.
	Strength float64 `json:"strength"`
	// Score is Observation.Score in the same window as Strength.
	Score float64 `json:"score"`
	// Lead: its last violated transition carried the event (it was not
	// Related in another's); a restored group is led by such a one first.
	Lead bool `json:"lead"`
	// HeldNonMinimal counts consecutive windows it held (removals <=
	// floor(eps*n)) without being minimal, while holding.
	HeldNonMinimal int `json:"held_non_minimal"`
	// ViolatedWindows counts consecutive non-minimal windows after the
	// violated event, while violated.
	ViolatedWindows int `json:"violated_windows"`
	// Absent counts consecutive windows without an observation.
	Absent int `json:"absent"`
	// LastMinimalSeq/LastMinimalError: the last window it was minimal in.
	LastMinimalSeq   uint64  `json:"last_minimal_seq"`
	LastMinimalError float64 `json:"last_minimal_error"`
	// SinceSeq is the window tracking began in (0 for pinned ones).
	SinceSeq uint64 `json:"since_seq"`

	text string
}

// candidate is a newly minimal dependency not tracked yet: Streak
// consecutive windows minimal so far, out of Config.DiscoverAfter. Field
// names are its persisted form.
type candidate struct {
	ID         string               `json:"id"`
	Dependency discovery.Dependency `json:"dependency"`
	Streak     int                  `json:"streak"`
	// FirstError is the error of the first window of the streak.
	FirstError float64 `json:"first_error"`
}

// Tracker turns successive windows' observations of one stream into events.
// It is safe for concurrent use (the metrics scrape may read it while the
// stream observes).
//
// Rules, per dependency, evaluated once per window in Observe (eps =
// Epsilon, m = Margin, or NoiseMargin(eps, n) for AutoMargin with n the
// window's records, e = the observed error):
//
//   - candidate: an observation is Minimal and the dependency is not tracked
//     (first time, or again after being retired). It becomes tracked only
//     when it is Minimal in DiscoverAfter consecutive windows; a window in
//     which it is not Minimal (or not observed) drops the candidate, and it
//     starts again from one. Candidates are not re-validated (Tracked does
//     not list them) and raise no other event.
//   - discovered: a candidate reaches DiscoverAfter windows (at once when
//     DiscoverAfter is 1). It starts in state holding; ErrorBefore is the
//     error of the first window of the streak, ErrorNow this window's; the
//     observation's samples are carried. Pinned dependencies are tracked
//     from NewTracker on and never produce discovered.
//   - violated: a holding dependency with e > eps+m in K consecutive
//     windows. ErrorBefore is the error of the window before the first of
//     them; samples are the last window's.
//   - restored: a violated dependency with e <= eps-m (so m = 0 means e <=
//     eps) in K consecutive windows. ErrorBefore as for violated.
//     An error inside the band, or a window without an observation, resets
//     the count: flapping around eps within the band emits nothing.
//   - one cause, one alert: the dependencies that turn violated in the same
//     window are grouped, two being in one group when they share a column
//     (transitively). Each group gives one violated event, for its strongest
//     dependency (highest Strength in the last window it held, to 0.01, then
//     highest Score, then fewest columns, then the largest rise in error,
//     then lowest id); the others
//     are in the event's Related list with their own errors and removals,
//     and they are in state violated like it. Restored transitions are
//     grouped the same way, led first by a dependency that led its violated
//     event. So a consumer learns every state change: from the events'
//     dependency and from their Related entries, which change to the
//     event's type; the odwatch_dependency_violated gauge follows each one.
//   - retired (unpinned only), the dependency is dropped from tracking:
//     (a) holding, and held (removals <= floor(eps*n), n = window records)
//     without being minimal for RetireAfter consecutive windows: a more
//     general dependency replaced it; windows where it does not hold reset
//     this count, so a breaking dependency is reported as violated, not
//     retired;
//     (b) violated and not minimal for RetireViolatedAfter consecutive
//     windows after its violated event;
//     (c) no observation for RetireAfter consecutive windows (its columns
//     left the stream);
//     (d) evicted by the MaxTracked cap: when a newly discovered dependency
//     would exceed the cap, the unpinned dependency that has been non-minimal
//     longest (oldest last-minimal window, then lowest id) and is not minimal
//     in this window is retired to make room; if there is none, the newcomer
//     is not tracked (no event) and stays a candidate for the next window.
//     ErrorBefore of a retired event is the error when it was last minimal,
//     ErrorNow and Removals the last observed ones.
//
// Observations are matched to tracked dependencies by DependencyID; a second
// observation of the same dependency in one window is ignored. Events come in
// a deterministic order: events of tracked dependencies by the id of their
// dependency, then discovered (with any eviction just before it) in
// observation order.
// A window whose EndSeq is not greater than the last observed one is a replay
// of a window this state already includes: Observe ignores it and returns
// nil (it does not count twice towards K). Callers must therefore persist
// the events together with the tracker (an outbox) or deliver them before
// persisting it; replaying from an older persisted state re-emits the same
// events with the same ids.
type Tracker struct {
	mu       sync.Mutex
	cfg      Config
	entries  map[string]*entry
	pending  map[string]*candidate
	observed bool
	lastSeq  uint64
	// lastMargin is the margin of the last observed window.
	lastMargin float64
}

// NewTracker returns a tracker holding the pinned dependencies of cfg.
func NewTracker(cfg Config) *Tracker {
	t := &Tracker{cfg: cfg.normalized(), entries: make(map[string]*entry), pending: make(map[string]*candidate)}
	t.addPinned()
	return t
}

// init makes a zero Tracker usable (as NewTracker(Config{}) would).
func (t *Tracker) init() {
	if t.entries == nil {
		t.cfg = t.cfg.normalized()
		t.entries = make(map[string]*entry)
		t.pending = make(map[string]*candidate)
	}
}

func (t *Tracker) addPinned() {
	pinned := make(map[string]bool, len(t.cfg.Pinned))
	for _, d := range t.cfg.Pinned {
		id := DependencyID(d)
		pinned[id] = true
		if _, ok := t.entries[id]; !ok {
			t.entries[id] = newEntry(id, d, 0)
		}
	}
	for id, e := range t.entries {
		e.Pinned = pinned[id]
	}
}

func newEntry(id string, d discovery.Dependency, seq uint64) *entry {
	d = canonical(d)
	return &entry{ID: id, Dependency: d, State: StateHolding, SinceSeq: seq, text: d.String()}
}

// canonical returns a copy of d that shares no slices with the caller and
// has the empty lists a JSON round trip yields (non-nil), so that events of
// a tracker restored from its JSON equal those of an uninterrupted one.
func canonical(d discovery.Dependency) discovery.Dependency {
	clone := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return slices.Clone(s)
	}
	switch d.Kind {
	case discovery.KindOFD, discovery.KindOC:
		d.Context = clone(d.Context)
	case discovery.KindListOD:
		d.LHSList, d.RHSList = clone(d.LHSList), clone(d.RHSList)
	}
	return d
}

func (t *Tracker) sortedIDs() []string {
	ids := make([]string, 0, len(t.entries))
	for id := range t.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Tracked returns the dependencies to re-validate on the next window
// (tracked and pinned), ordered by DependencyID.
func (t *Tracker) Tracked() []discovery.Dependency {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := t.sortedIDs()
	out := make([]discovery.Dependency, len(ids))
	for i, id := range ids {
		out[i] = t.entries[id].Dependency
	}
	return out
}

// holds reports whether the observation is valid at eps: removals <=
// floor(eps*n), or e <= eps when the window size is unknown.
func (t *Tracker) holds(o Observation, n int) bool {
	if n > 0 {
		return float64(o.Removals) <= math.Floor(t.cfg.Epsilon*float64(n))
	}
	return o.Error <= t.cfg.Epsilon
}

// margin is the margin of a window of n records.
func (t *Tracker) margin(n int) float64 {
	if t.cfg.Margin < 0 {
		return NoiseMargin(t.cfg.Epsilon, n)
	}
	return t.cfg.Margin
}

// transition is a violated or restored change of one tracked dependency in
// the window being observed, before grouping (see Tracker).
type transition struct {
	typ     EventType
	e       *entry
	before  float64
	o       Observation
	samples []Sample
}

// strength is the dependency's strength when it last held.
func (c transition) strength() float64 { return c.e.Strength }

// Observe feeds one window's observations (the re-validated tracked
// dependencies and the newly minimal ones) and returns the events.
func (t *Tracker) Observe(w WindowInfo, obs []Observation) []Event {
	return t.observe(w, obs, true)
}

// ObserveCheck feeds one window's re-checked tracked dependencies without
// a discovery run (the check cadence of a stream that discovers less
// often): the rules above apply to their errors, while what only discovery
// knows is left as it was: minimality (the counts towards retirement (a)
// and (b), the last-minimal window), candidates and their streaks, and the
// dependencies' strength and score. Observations' Minimal is ignored.
func (t *Tracker) ObserveCheck(w WindowInfo, obs []Observation) []Event {
	return t.observe(w, obs, false)
}

func (t *Tracker) observe(w WindowInfo, obs []Observation, discovery bool) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if t.observed && w.EndSeq <= t.lastSeq {
		return nil
	}
	t.observed, t.lastSeq = true, w.EndSeq

	ids, byID := indexObservations(obs)
	m := t.margin(w.Records)
	t.lastMargin = m
	var events []Event
	var changes []transition
	for _, id := range t.sortedIDs() {
		e := t.entries[id]
		i, ok := byID[id]
		var retire bool
		if !ok {
			retire = t.absent(e)
		} else {
			var change *transition
			change, retire = t.step(e, obs[i], w.EndSeq, w.Records, m, discovery)
			if change != nil {
				changes = append(changes, *change)
			}
		}
		if retire {
			events = append(events, t.retire(e, w, m))
		}
	}
	events = append(events, t.grouped(changes, w, m)...)
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.DependencyID, b.DependencyID) })
	if !discovery {
		return events
	}
	return append(events, t.admit(w, m, obs, ids, byID)...)
}

// indexObservations gives each observation's dependency id and, per id, the
// first observation of it.
func indexObservations(obs []Observation) (ids []string, byID map[string]int) {
	byID = make(map[string]int, len(obs))
	ids = make([]string, len(obs))
	for i, o := range obs {
		id := DependencyID(o.Dependency)
		ids[i] = id
		if _, dup := byID[id]; !dup {
			byID[id] = i
		}
	}
	return ids, byID
}

// absent counts a window without an observation of e; it reports whether
// e is to be retired (rule (a)).
func (t *Tracker) absent(e *entry) bool {
	e.Absent++
	e.Streak = 0
	return !e.Pinned && e.Absent >= t.cfg.RetireAfter
}

// step applies one observation to its entry: measurements, strength, then
// the entry's state rules. It returns the state change, if any, and whether
// the entry is to be retired.
func (t *Tracker) step(e *entry, o Observation, endSeq uint64, records int, m float64, discovery bool) (*transition, bool) {
	e.Absent = 0
	if discovery && o.Minimal {
		e.LastMinimalSeq, e.LastMinimalError = endSeq, o.Error
	}
	prev := o.Error
	if e.Measured {
		prev = e.LastError
	}
	e.LastError, e.LastRemovals, e.Measured = o.Error, o.Removals, true
	if discovery && t.holds(o, records) {
		e.Strength, e.Score = o.Strength, o.Score
	}
	switch e.State {
	case StateHolding:
		if t.crossed(e, o.Error > t.cfg.Epsilon+m, prev) {
			e.State, e.Streak, e.HeldNonMinimal, e.ViolatedWindows = StateViolated, 0, 0, 0
			return &transition{EventViolated, e, e.ErrorBefore, o, o.Samples}, false
		}
		switch {
		case !discovery:
		case t.holds(o, records) && !o.Minimal:
			e.HeldNonMinimal++
		default:
			e.HeldNonMinimal = 0
		}
		return nil, !e.Pinned && e.HeldNonMinimal >= t.cfg.RetireAfter
	case StateViolated:
		if t.crossed(e, o.Error <= t.cfg.Epsilon-m, prev) {
			e.State, e.Streak, e.HeldNonMinimal, e.ViolatedWindows = StateHolding, 0, 0, 0
			return &transition{EventRestored, e, e.ErrorBefore, o, nil}, false
		}
		switch {
		case !discovery:
		case o.Minimal:
			e.ViolatedWindows = 0
		default:
			e.ViolatedWindows++
		}
		return nil, !e.Pinned && t.cfg.RetireViolatedAfter > 0 && e.ViolatedWindows >= t.cfg.RetireViolatedAfter
	}
	return nil, false
}

// crossed counts a window beyond the state's threshold towards the K in a
// row that change the state, remembering the error before the first of
// them; a window within it resets the count. It reports whether the state
// changes now.
func (t *Tracker) crossed(e *entry, beyond bool, prev float64) bool {
	if !beyond {
		e.Streak = 0
		return false
	}
	if e.Streak == 0 {
		e.ErrorBefore = prev
	}
	e.Streak++
	return e.Streak >= t.cfg.K
}

// admit moves newly minimal dependencies through candidacy: one minimal in
// DiscoverAfter windows in a row is tracked (evicting one when MaxTracked
// is reached) with a discovered event; a candidate not minimal in this
// window starts over.
func (t *Tracker) admit(w WindowInfo, m float64, obs []Observation, ids []string, byID map[string]int) []Event {
	var events []Event
	seen := make(map[string]bool, len(obs))
	for i, o := range obs {
		id := ids[i]
		if !o.Minimal || byID[id] != i {
			continue
		}
		if _, ok := t.entries[id]; ok {
			continue
		}
		seen[id] = true
		c := t.pending[id]
		if c == nil {
			c = &candidate{ID: id, Dependency: canonical(o.Dependency), FirstError: o.Error}
			t.pending[id] = c
		}
		c.Streak++
		if c.Streak < t.cfg.DiscoverAfter {
			continue
		}
		if len(t.entries) >= t.cfg.MaxTracked {
			victim := t.evictionCandidate(w.EndSeq)
			if victim == nil {
				continue
			}
			events = append(events, t.retire(victim, w, m))
		}
		delete(t.pending, id)
		e := newEntry(id, o.Dependency, w.EndSeq)
		e.LastError, e.LastRemovals, e.Measured, e.Strength, e.Score = o.Error, o.Removals, true, o.Strength, o.Score
		e.LastMinimalSeq, e.LastMinimalError = w.EndSeq, o.Error
		e.ErrorBefore = o.Error
		t.entries[id] = e
		events = append(events, t.event(EventDiscovered, e, w, m, c.FirstError, o, o.Samples))
	}
	for id := range t.pending {
		if !seen[id] {
			delete(t.pending, id)
		}
	}
	return events
}

// grouped turns the window's transitions into events, one per group of
// same-type transitions whose dependencies share columns (see Tracker).
func (t *Tracker) grouped(changes []transition, w WindowInfo, m float64) []Event {
	var events []Event
	for _, typ := range []EventType{EventViolated, EventRestored} {
		var group []transition
		for _, c := range changes {
			if c.typ == typ {
				group = append(group, c)
			}
		}
		for _, g := range components(group) {
			slices.SortFunc(g, strongestFirst)
			if typ == EventRestored {
				slices.SortStableFunc(g, func(a, b transition) int { return cmp.Compare(b2i(b.e.Lead), b2i(a.e.Lead)) })
			}
			head := g[0]
			for _, c := range g {
				c.e.Lead = typ == EventViolated && c.e == head.e
			}
			ev := t.event(typ, head.e, w, m, head.before, head.o, head.samples)
			for _, r := range g[1:] {
				ev.Related = append(ev.Related, Related{
					DependencyID: r.e.ID, Dependency: r.e.Dependency, DependencyText: r.e.text,
					ErrorBefore: r.before, ErrorNow: r.o.Error, Removals: r.o.Removals,
				})
			}
			slices.SortFunc(ev.Related, func(a, b Related) int { return cmp.Compare(a.DependencyID, b.DependencyID) })
			events = append(events, ev)
		}
	}
	return events
}

// components splits transitions into the groups of dependencies linked by
// shared columns (transitively), each group in input order.
func components(ts []transition) [][]transition {
	parent := make([]int, len(ts))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := map[string]int{} // column → first transition mentioning it
	for i, c := range ts {
		for _, col := range c.e.Dependency.Columns() {
			if j, ok := owner[col]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[col] = i
			}
		}
	}
	var out [][]transition
	index := map[int]int{}
	for i, c := range ts {
		r := find(i)
		g, ok := index[r]
		if !ok {
			g = len(out)
			index[r] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], c)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// strengthGrain is the precision strengths are compared at: closer ones
// are equally strong (an exact rule's strength varies in its third digit
// with the window's values).
const strengthGrain = 0.01

// strongestFirst orders a group's transitions: highest strength (when it
// last held, to strengthGrain), then highest score (the rule that
// constrains the most pairs of records), then fewest columns, then the
// largest change in error, then lowest id.
func strongestFirst(a, b transition) int {
	grain := func(x float64) float64 { return math.Round(x / strengthGrain) }
	return cmp.Or(
		cmp.Compare(grain(b.strength()), grain(a.strength())),
		cmp.Compare(b.e.Score, a.e.Score),
		cmp.Compare(len(a.e.Dependency.Columns()), len(b.e.Dependency.Columns())),
		cmp.Compare(math.Abs(b.o.Error-b.before), math.Abs(a.o.Error-a.before)),
		cmp.Compare(a.e.ID, b.e.ID),
	)
}

// evictionCandidate returns the unpinned dependency not minimal in the
// window seq that has been non-minimal longest, or nil.
func (t *Tracker) evictionCandidate(seq uint64) *entry {
	var best *entry
	for _, e := range t.entries {
		if e.Pinned || e.LastMinimalSeq == seq {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(e.LastMinimalSeq, best.LastMinimalSeq), cmp.Compare(e.ID, best.ID)) < 0 {
			best = e
		}
	}
	return best
}

func (t *Tracker) retire(e *entry, w WindowInfo, m float64) Event {
	delete(t.entries, e.ID)
	return t.event(EventRetired, e, w, m, e.LastMinimalError, Observation{Error: e.LastError, Removals: e.LastRemovals}, nil)
}

func (t *Tracker) event(typ EventType, e *entry, w WindowInfo, m float64, before float64, o Observation, samples []Sample) Event {
	stream := t.cfg.Stream
	if stream == "" {
		stream = w.Stream
	}
	return Event{
		ID:             EventID(stream, e.ID, w.EndSeq, typ),
		Type:           typ,
		Stream:         stream,
		Time:           w.EndTime,
		DependencyID:   e.ID,
		Dependency:     e.Dependency,
		DependencyText: e.text,
		ErrorBefore:    before,
		ErrorNow:       o.Error,
		Epsilon:        t.cfg.Epsilon,
		Margin:         m,
		Removals:       o.Removals,
		Strength:       e.Strength,
		Window:         w,
		Samples:        samples,
	}
}

// States counts tracked dependencies by state, for the
// odwatch_dependencies{state} gauge. Keys "holding" and "violated" partition
// the tracked set (pinned ones included); "pinned" counts the pinned ones
// again, whatever their state. All three keys are always present.
func (t *Tracker) States() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{string(StateHolding): 0, string(StateViolated): 0, "pinned": 0}
	for _, e := range t.entries {
		out[string(e.State)]++
		if e.Pinned {
			out["pinned"]++
		}
	}
	return out
}

// DependencyError is the current error of one tracked dependency.
type DependencyError struct {
	ID       string
	Text     string
	State    State
	Pinned   bool
	Error    float64
	Removals int
	// Measured is false until the dependency was observed in a window
	// (a pinned dependency before the first evaluation).
	Measured bool
	// Strength is the strength of the last window in which it held.
	Strength float64
}

// Errors returns the last observed error of every tracked dependency,
// ordered by id, for the odwatch_dependency_error gauge.
func (t *Tracker) Errors() []DependencyError {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]DependencyError, 0, len(t.entries))
	for _, id := range t.sortedIDs() {
		e := t.entries[id]
		out = append(out, DependencyError{ID: id, Text: e.text, State: e.State, Pinned: e.Pinned,
			Error: e.LastError, Removals: e.LastRemovals, Measured: e.Measured, Strength: e.Strength})
	}
	return out
}

const trackerVersion = 1

type trackerJSON struct {
	Version      int      `json:"version"`
	Observed     bool     `json:"observed"`
	LastSeq      uint64   `json:"last_seq"`
	Dependencies []*entry `json:"dependencies"`
	// Pending: the candidates (absent from states written before they
	// existed, which then had none).
	Pending []*candidate `json:"pending,omitempty"`
}

// MarshalJSON encodes the tracked state (not the configuration): every
// tracked dependency with its hysteresis counters, ordered by id, the
// candidates, and the last observed window. The stream persists it after every evaluation.
func (t *Tracker) MarshalJSON() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := trackerJSON{Version: trackerVersion, Observed: t.observed, LastSeq: t.lastSeq}
	for _, id := range t.sortedIDs() {
		j.Dependencies = append(j.Dependencies, t.entries[id])
	}
	for _, id := range slices.Sorted(maps.Keys(t.pending)) {
		j.Pending = append(j.Pending, t.pending[id])
	}
	return json.Marshal(j)
}

// UnmarshalJSON replaces the tracked state with a persisted one. Use it on a
// tracker made by NewTracker: the configuration stays, pinned-ness follows
// the configuration (pinned dependencies missing from the state are added,
// ones no longer pinned become ordinary tracked ones).
func (t *Tracker) UnmarshalJSON(b []byte) error {
	var j trackerJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("alerts: decode tracker state: %w", err)
	}
	if j.Version != trackerVersion {
		return fmt.Errorf("alerts: tracker state version %d, want %d", j.Version, trackerVersion)
	}
	entries := make(map[string]*entry, len(j.Dependencies))
	for _, e := range j.Dependencies {
		if e == nil {
			continue
		}
		if e.State != StateHolding && e.State != StateViolated {
			return fmt.Errorf("alerts: tracker state: dependency %s has unknown state %q", e.ID, e.State)
		}
		e.text, e.ID = e.Dependency.String(), DependencyID(e.Dependency)
		entries[e.ID] = e
	}
	pending := make(map[string]*candidate, len(j.Pending))
	for _, c := range j.Pending {
		if c == nil {
			continue
		}
		c.Dependency = canonical(c.Dependency)
		c.ID = DependencyID(c.Dependency)
		pending[c.ID] = c
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	t.entries, t.pending, t.observed, t.lastSeq = entries, pending, j.Observed, j.LastSeq
	t.addPinned()
	return nil
}
