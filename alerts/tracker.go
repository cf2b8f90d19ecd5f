package alerts

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/odwatch/odwatch/discovery"
)

// Defaults for Config fields left zero.
const (
	DefaultRetireAfter         = 3
	DefaultRetireViolatedAfter = 100
	DefaultMaxTracked          = 1000
)

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
	// Epsilon-Margin. Negative is taken as 0.
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
	// still be reported). 0 means DefaultRetireViolatedAfter, negative never.
	RetireViolatedAfter int
	// Pinned dependencies are tracked from the start and never retired.
	Pinned []discovery.Dependency
	// MaxTracked caps the tracked set (pinned ones included; they are never
	// dropped). 0 means DefaultMaxTracked. See Tracker.
	MaxTracked int
}

func (c Config) normalized() Config {
	if c.K < 1 {
		c.K = 1
	}
	if c.Margin < 0 || math.IsNaN(c.Margin) {
		c.Margin = 0
	}
	if c.RetireAfter <= 0 {
		c.RetireAfter = DefaultRetireAfter
	}
	if c.RetireViolatedAfter == 0 {
		c.RetireViolatedAfter = DefaultRetireViolatedAfter
	}
	if c.MaxTracked <= 0 {
		c.MaxTracked = DefaultMaxTracked
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

// Tracker turns successive windows' observations of one stream into events.
// It is safe for concurrent use (the metrics scrape may read it while the
// stream observes).
//
// Rules, per dependency, evaluated once per window in Observe (eps =
// Epsilon, m = Margin, e = the observed error):
//
//   - discovered: an observation is Minimal and the dependency is not
//     tracked (first time, or again after being retired). It starts in state
//     holding; ErrorBefore = ErrorNow = e; the observation's samples are
//     carried. Pinned dependencies are tracked from NewTracker on and never
//     produce discovered.
//   - violated: a holding dependency with e > eps+m in K consecutive
//     windows. ErrorBefore is the error of the window before the first of
//     them; samples are the last window's.
//   - restored: a violated dependency with e <= eps-m (so m = 0 means e <=
//     eps) in K consecutive windows. ErrorBefore as for violated.
//     An error inside the band, or a window without an observation, resets
//     the count: flapping around eps within the band emits nothing.
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
//     (d) evicted by the MaxTracked cap: when a newly minimal dependency
//     would exceed the cap, the unpinned dependency that has been non-minimal
//     longest (oldest last-minimal window, then lowest id) and is not minimal
//     in this window is retired to make room; if there is none, the newcomer
//     is not tracked (no event) and will be offered again by the next window.
//     ErrorBefore of a retired event is the error when it was last minimal,
//     ErrorNow and Removals the last observed ones.
//
// Observations are matched to tracked dependencies by DependencyID; a second
// observation of the same dependency in one window is ignored. Events come in
// a deterministic order: transitions of tracked dependencies by id, then
// discovered (with any eviction just before it) in observation order.
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
	observed bool
	lastSeq  uint64
}

// NewTracker returns a tracker holding the pinned dependencies of cfg.
func NewTracker(cfg Config) *Tracker {
	t := &Tracker{cfg: cfg.normalized(), entries: make(map[string]*entry)}
	t.addPinned()
	return t
}

// init makes a zero Tracker usable (as NewTracker(Config{}) would).
func (t *Tracker) init() {
	if t.entries == nil {
		t.cfg = t.cfg.normalized()
		t.entries = make(map[string]*entry)
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

// Observe feeds one window's observations (the re-validated tracked
// dependencies and the newly minimal ones) and returns the events.
func (t *Tracker) Observe(w WindowInfo, obs []Observation) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if t.observed && w.EndSeq <= t.lastSeq {
		return nil
	}
	t.observed, t.lastSeq = true, w.EndSeq

	byID := make(map[string]int, len(obs))
	ids := make([]string, len(obs))
	for i, o := range obs {
		id := DependencyID(o.Dependency)
		ids[i] = id
		if _, dup := byID[id]; !dup {
			byID[id] = i
		}
	}

	eps, m, k := t.cfg.Epsilon, t.cfg.Margin, t.cfg.K
	var events []Event
	for _, id := range t.sortedIDs() {
		e := t.entries[id]
		i, ok := byID[id]
		if !ok {
			e.Absent++
			e.Streak = 0
			if !e.Pinned && e.Absent >= t.cfg.RetireAfter {
				events = append(events, t.retire(e, w))
			}
			continue
		}
		o := obs[i]
		e.Absent = 0
		if o.Minimal {
			e.LastMinimalSeq, e.LastMinimalError = w.EndSeq, o.Error
		}
		prev := o.Error
		if e.Measured {
			prev = e.LastError
		}
		e.LastError, e.LastRemovals, e.Measured = o.Error, o.Removals, true
		switch e.State {
		case StateHolding:
			if o.Error > eps+m {
				if e.Streak == 0 {
					e.ErrorBefore = prev
				}
				e.Streak++
				if e.Streak >= k {
					events = append(events, t.event(EventViolated, e, w, e.ErrorBefore, o, o.Samples))
					e.State, e.Streak, e.HeldNonMinimal, e.ViolatedWindows = StateViolated, 0, 0, 0
					continue
				}
			} else {
				e.Streak = 0
			}
			if t.holds(o, w.Records) && !o.Minimal {
				e.HeldNonMinimal++
			} else {
				e.HeldNonMinimal = 0
			}
			if !e.Pinned && e.HeldNonMinimal >= t.cfg.RetireAfter {
				events = append(events, t.retire(e, w))
			}
		case StateViolated:
			if o.Error <= eps-m {
				if e.Streak == 0 {
					e.ErrorBefore = prev
				}
				e.Streak++
				if e.Streak >= k {
					events = append(events, t.event(EventRestored, e, w, e.ErrorBefore, o, nil))
					e.State, e.Streak, e.HeldNonMinimal, e.ViolatedWindows = StateHolding, 0, 0, 0
					continue
				}
			} else {
				e.Streak = 0
			}
			if o.Minimal {
				e.ViolatedWindows = 0
			} else {
				e.ViolatedWindows++
			}
			if !e.Pinned && t.cfg.RetireViolatedAfter > 0 && e.ViolatedWindows >= t.cfg.RetireViolatedAfter {
				events = append(events, t.retire(e, w))
			}
		}
	}

	for i, o := range obs {
		id := ids[i]
		if !o.Minimal || byID[id] != i {
			continue
		}
		if _, ok := t.entries[id]; ok {
			continue
		}
		if len(t.entries) >= t.cfg.MaxTracked {
			victim := t.evictionCandidate(w.EndSeq)
			if victim == nil {
				continue
			}
			events = append(events, t.retire(victim, w))
		}
		e := newEntry(id, o.Dependency, w.EndSeq)
		e.LastError, e.LastRemovals, e.Measured = o.Error, o.Removals, true
		e.LastMinimalSeq, e.LastMinimalError = w.EndSeq, o.Error
		e.ErrorBefore = o.Error
		t.entries[id] = e
		events = append(events, t.event(EventDiscovered, e, w, o.Error, o, o.Samples))
	}
	return events
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

func (t *Tracker) retire(e *entry, w WindowInfo) Event {
	delete(t.entries, e.ID)
	ev := t.event(EventRetired, e, w, e.LastMinimalError, Observation{Error: e.LastError, Removals: e.LastRemovals}, nil)
	return ev
}

func (t *Tracker) event(typ EventType, e *entry, w WindowInfo, before float64, o Observation, samples []Sample) Event {
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
		Margin:         t.cfg.Margin,
		Removals:       o.Removals,
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
			Error: e.LastError, Removals: e.LastRemovals, Measured: e.Measured})
	}
	return out
}

const trackerVersion = 1

type trackerJSON struct {
	Version      int      `json:"version"`
	Observed     bool     `json:"observed"`
	LastSeq      uint64   `json:"last_seq"`
	Dependencies []*entry `json:"dependencies"`
}

// MarshalJSON encodes the tracked state (not the configuration): every
// tracked dependency with its hysteresis counters, ordered by id, and the
// last observed window. The stream persists it after every evaluation.
func (t *Tracker) MarshalJSON() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := trackerJSON{Version: trackerVersion, Observed: t.observed, LastSeq: t.lastSeq}
	for _, id := range t.sortedIDs() {
		j.Dependencies = append(j.Dependencies, t.entries[id])
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
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	t.entries, t.observed, t.lastSeq = entries, j.Observed, j.LastSeq
	t.addPinned()
	return nil
}
