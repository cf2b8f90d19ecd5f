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
	defaultStrengthBand        = 0.1
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
	// DiscoverAfter is the number of consecutive windows a candidate (a
	// rule a discovery found and that is not tracked) must hold in, and be
	// reliable in, before it is tracked and discovered: the window of the
	// discovery that proposed it, then the checked windows after it (see
	// Tracker). Values below 1 mean 1 (at once). The monitor's default is
	// 2: a dependency that holds by chance in one window is no news.
	DiscoverAfter int
	// MinStrength is the reliable threshold (discovery.Options.MinStrength).
	// Above 0, a candidate is discovered only when the window confirming it
	// measured its strength at or above it, and a tracked rule that holds
	// and is reliable is never retired: one a more general reliable rule
	// replaced is retired once it is no longer reliable itself, one that
	// grew weak only after RetireAfter rated windows below MinStrength -
	// StrengthBand. 0 judges no strength (the paper's listing: a rule that
	// is no longer minimal is retired after RetireAfter discoveries).
	MinStrength float64
	// StrengthBand is the hysteresis of strength (see MinStrength). 0 means
	// defaultStrengthBand, a negative value none.
	StrengthBand float64
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
	switch {
	case c.StrengthBand == 0 || math.IsNaN(c.StrengthBand):
		c.StrengthBand = defaultStrengthBand
	case c.StrengthBand < 0:
		c.StrengthBand = 0
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
	// Weak counts consecutive rated windows it held in with a strength
	// below MinStrength - StrengthBand, while holding.
	Weak int `json:"weak,omitempty"`
	// ReplacedBy is the more general rule the last discovery found in its
	// place, while HeldNonMinimal counts.
	ReplacedBy string `json:"replaced_by,omitempty"`
	// Mapping (FDs) is the one of the last window it held in for which the
	// caller measured one (see Tracker.Needs).
	Mapping *Mapping `json:"mapping,omitempty"`
	// Equivalents and ImpliedBy are the last discovery's (Summarize).
	Equivalents []string `json:"equivalents,omitempty"`
	ImpliedBy   []string `json:"implied_by,omitempty"`

	text string
}

// candidate is a rule a discovery found that is not tracked yet: Streak
// consecutive windows held so far, out of Config.DiscoverAfter. Field
// names are its persisted form.
type candidate struct {
	ID         string               `json:"id"`
	Dependency discovery.Dependency `json:"dependency"`
	Streak     int                  `json:"streak"`
	// FirstError is the error of the first window of the streak.
	FirstError float64 `json:"first_error"`
	// Equivalents and ImpliedBy are the proposing discovery's.
	Equivalents []string `json:"equivalents,omitempty"`
	ImpliedBy   []string `json:"implied_by,omitempty"`
}

// Tracker turns successive windows' observations of one stream into events.
// It is safe for concurrent use (the metrics scrape may read it while the
// stream observes).
//
// A window comes in one of three ways (Source): Observe, a window discovery
// ran on (every observation's strength is this window's); ObserveMerge, a
// check that merges the discovery of an earlier window (Minimal, and the
// strengths of the rules it found, are that discovery's; an observation the
// caller rated says so, Observation.Rated); ObserveCheck, a check without
// discovery. ObserveFound adds to the window observed last the new rules
// of a discovery that ended after its check (see it). Before observing a check, the caller asks Needs what to
// measure besides the counts: the strength of candidates and of tracked
// rules a merged discovery did not find, the mapping of FDs that may come
// back. Watched lists what to count: the tracked rules and the candidates.
//
// Rules, per dependency, evaluated once per window (eps = Epsilon, m =
// Margin, or NoiseMargin(eps, n) for AutoMargin with n the window's
// records, e = the observed error, "holds" = removals <= floor(eps*n),
// "reliable" = strength >= MinStrength, always true when MinStrength is 0,
// "rated" = its strength was measured on this window):
//
//   - candidate: a discovery (Observe or ObserveMerge) finds a dependency
//     Minimal that is not tracked. The discovery's window counts as its
//     first window held (a merged one's: the window before this one, which
//     then counts too). From then on every window that observes it must
//     observe it holding, reliable when rated, and every discovery must
//     find it Minimal; a window that does not, or a discovery that does not
//     observe it, drops it, and a later discovery proposes it again from
//     one (a check that does not observe it leaves it as it was).
//     Candidates raise no other event.
//   - discovered: a candidate has held in DiscoverAfter consecutive
//     windows and this window holds it and rated it reliable (with
//     MinStrength 0 no rating is needed; a candidate that is due but not
//     rated waits). So the event's error, removals and strength are of the
//     window it names. It starts in state holding; ErrorBefore is the error
//     of the first window of the streak. Pinned dependencies are tracked
//     from NewTracker on and never produce discovered.
//   - violated: a holding dependency with e > eps+m in K consecutive
//     windows. ErrorBefore is the error of the window before the first of
//     them; samples are the last window's.
//   - restored: a violated dependency with e <= eps-m (so m = 0 means e <=
//     eps) in K consecutive windows, with the mapping it had: for an FD
//     whose mapping is known from a window it held in (Mapping) and
//     measured in this window, the classes both keep whose value of the
//     right-hand side moved cover at most eps of the window's records.
//     ErrorBefore as for violated. An error inside the band, or a window
//     without an observation, resets the count: flapping around eps within
//     the band emits nothing.
//   - changed: as restored, but the classes whose value moved cover more
//     than eps of the window (a unit change, a recoding): the event carries
//     the Change with examples, the rule is holding again and its mapping
//     is the new one, watched as any.
//   - one cause, one alert: the dependencies that turn violated in the same
//     window are grouped, two being in one group when they share a column
//     (transitively). Each group gives one violated event, for its strongest
//     dependency (highest Strength in the last window it held, to 0.01, then
//     highest Score, then fewest columns, then the largest rise in error,
//     then lowest id); the others are in the event's Related list with
//     their own errors and removals, and they are in state violated like
//     it. Restored and changed transitions are grouped the same way (each
//     type apart), led first by a dependency that led its violated event.
//     So a consumer learns every state change: from the events' dependency
//     and from their Related entries, which change to the event's type; the
//     odwatch_dependency_violated gauge follows each one.
//   - retired (unpinned only), the dependency is dropped from tracking:
//     (a) replaced: holding, held in RetireAfter consecutive discoveries
//     without being minimal, with a more general reliable rule found in its
//     place (Observation.ReplacedBy, which the event names) and itself
//     rated not reliable, or found but stepping back for what ReplacedBy
//     names (Observation.StepsBack: a key, an equivalence or implying rules
//     state it); with MinStrength 0, held without being minimal (the
//     paper's listing). Windows where it does not hold reset this
//     count, so a breaking dependency is reported as violated, not retired;
//     a rule that holds and is reliable is never retired;
//     (w) weak (MinStrength above 0): holding, held with a strength below
//     MinStrength - StrengthBand in RetireAfter consecutive windows that
//     measured it (rated, or a merged discovery that found it; one at or
//     above resets the count): strength has hysteresis, discovered at
//     MinStrength, retired below the band;
//     (b) violated and not minimal for RetireViolatedAfter consecutive
//     discoveries after its violated event;
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
// of a window this state already includes: the tracker ignores it and
// returns nil (it does not count twice towards K). Callers must therefore
// persist the events together with the tracker (an outbox) or deliver them
// before persisting it; replaying from an older persisted state re-emits the
// same events with the same ids.
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

// Source is what a window observed by the tracker holds besides the counts
// (see Tracker).
type Source int

const (
	// Checked: a check without discovery; Minimal is ignored, and only a
	// Rated observation's strength counts.
	Checked Source = iota
	// Merged: a check merging the discovery of an earlier window: Minimal is
	// that discovery's verdict, and the Strength and Score of the rules it
	// found are its measures; a Rated observation's are this window's.
	Merged
	// Discovered: discovery ran on this very window; every observation's
	// Strength and Score are this window's.
	Discovered
)

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

// Tracked returns the tracked dependencies (pinned ones included), ordered
// by DependencyID.
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

// Watched returns the dependencies to count on the next window: the
// tracked ones and the candidates, ordered by DependencyID.
func (t *Tracker) Watched() []discovery.Dependency {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, 0, len(t.entries)+len(t.pending))
	for id := range t.entries {
		ids = append(ids, id)
	}
	for id := range t.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the keys are the dependencies' ids
	out := make([]discovery.Dependency, len(ids))
	for i, id := range ids {
		if e, ok := t.entries[id]; ok {
			out[i] = e.Dependency
		} else {
			out[i] = t.pending[id].Dependency
		}
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

// judged reports whether strength is judged (MinStrength above 0).
func (t *Tracker) judged() bool { return t.cfg.MinStrength > 0 }

// rated reports whether o's strength is this window's.
func rated(o Observation, src Source) bool { return src == Discovered || o.Rated }

// margin is the margin of a window of n records.
func (t *Tracker) margin(n int) float64 {
	if t.cfg.Margin < 0 {
		return NoiseMargin(t.cfg.Epsilon, n)
	}
	return t.cfg.Margin
}

// transition is a violated, restored or changed change of one tracked
// dependency in the window being observed, before grouping (see Tracker).
type transition struct {
	typ     EventType
	e       *entry
	before  float64
	o       Observation
	samples []Sample
	change  *Change
}

// strength is the dependency's strength when it last held.
func (c transition) strength() float64 { return c.e.Strength }

// Observe feeds the observations of a window discovery ran on (the
// tracked dependencies re-validated and the ones discovery found, with
// this window's strengths) and returns the events.
func (t *Tracker) Observe(w WindowInfo, obs []Observation) []Event {
	return t.observe(w, obs, Discovered)
}

// ObserveMerge feeds a check that merges the discovery of an earlier
// window (Source Merged): the watched dependencies' counts and the ones
// the discovery found, with Minimal and the found ones' strengths from
// it, and what the caller measured on this window as Needs asked
// (Observation.Rated, Mapping).
func (t *Tracker) ObserveMerge(w WindowInfo, obs []Observation) []Event {
	return t.observe(w, obs, Merged)
}

// ObserveCheck feeds one window's counts of the watched dependencies
// without a discovery (the check cadence of a stream that discovers less
// often): the rules apply to their errors and to what the caller measured
// (Needs), while what only discovery knows is left as it was: minimality
// (the counts towards retirement (a) and (b), the last-minimal window) and
// new candidates. Observations' Minimal is ignored.
func (t *Tracker) ObserveCheck(w WindowInfo, obs []Observation) []Event {
	return t.observe(w, obs, Checked)
}

// ObserveFound feeds, for the window observed last (w.EndSeq is its),
// the rules a discovery newly proposes when that discovery ended after
// the check that was to merge it and no check came since: the rules
// neither tracked nor candidates, counted on that window, with Minimal and
// strengths as for ObserveMerge. They become candidates as at a merge
// (the discovery's window and this one held) and are discovered here when
// due, so a finished discovery's rules are tracked without waiting for
// the next record. Nothing else changes: the tracked rules and the other
// candidates were observed on this window already (nothing counts twice),
// and the next check merges the discovery as usual (ObserveMerge: what it
// says of the tracked rules). Any other window, and every other
// observation, is ignored.
func (t *Tracker) ObserveFound(w WindowInfo, obs []Observation) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if !t.observed || w.EndSeq != t.lastSeq {
		return nil
	}
	fresh := make([]Observation, 0, len(obs))
	for _, o := range obs {
		id := DependencyID(o.Dependency)
		if t.entries[id] == nil && t.pending[id] == nil {
			fresh = append(fresh, o)
		}
	}
	ids, byID := indexObservations(fresh)
	events, _ := t.advanceAll(w, t.lastMargin, fresh, ids, byID, Merged)
	return events
}

// Need is what the tracker asks the caller to measure on a window besides
// a watched dependency's count (see Needs).
type Need struct {
	Dependency discovery.Dependency
	// Rate: its strength and score (Observation.Rated).
	Rate bool
	// Map: an FD's mapping (Observation.Mapping, MappingOf).
	Map bool
}

// Needs lists what the tracker needs measured on the window w (its Records
// set) to observe obs, the window's counts (with Minimal set for a merge)
// from src, in DependencyID order: the strength of every candidate that
// holds (a new one's too, found by a merged discovery) and, at a merge, of
// every holding tracked rule it did not find that holds (with MinStrength
// 0, none: strength is not judged; from Observe, none: every strength is
// this window's); the mapping of every FD that may restore now (violated,
// e <= eps-m, the K-th window), of a candidate FD that may be discovered
// now, and of a holding FD that holds and has none (one tracked before
// mappings were kept, a pinned one). While an FD holds its classes keep
// their values (beyond eps of the records it would break), so the mapping
// taken when it was discovered, restored or changed stands for the last
// window it held in, and is not taken again at every window. It changes
// nothing.
func (t *Tracker) Needs(w WindowInfo, obs []Observation, src Source) []Need {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	ids, byID := indexObservations(obs)
	m := t.margin(w.Records)
	var out []Need
	for i, o := range obs {
		id := ids[i]
		if byID[id] != i {
			continue
		}
		n := Need{Dependency: o.Dependency}
		holds, fd := t.holds(o, w.Records), o.Dependency.Kind == discovery.KindOFD
		if e, ok := t.entries[id]; ok {
			switch e.State {
			case StateViolated:
				n.Map = fd && o.Error <= t.cfg.Epsilon-m && e.Streak+1 >= t.cfg.K
			case StateHolding:
				n.Map = fd && holds && e.Mapping == nil
				n.Rate = t.judged() && src == Merged && !o.Minimal && holds
			}
		} else if c := t.pending[id]; holds && (c != nil || (src != Checked && o.Minimal)) {
			streak := 1
			if c != nil {
				streak = c.Streak + 1
			} else if src == Merged {
				streak = 2
			}
			n.Rate = t.judged() && src != Discovered
			n.Map = fd && streak >= t.cfg.DiscoverAfter
		}
		if n.Rate || n.Map {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b Need) int { return cmp.Compare(DependencyID(a.Dependency), DependencyID(b.Dependency)) })
	return out
}

func (t *Tracker) observe(w WindowInfo, obs []Observation, src Source) []Event {
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
		why := keep
		if !ok {
			why = t.absent(e)
		} else {
			var change *transition
			change, why = t.step(e, obs[i], w, m, src)
			if change != nil {
				changes = append(changes, *change)
			}
		}
		if why != keep {
			events = append(events, t.retire(e, w, m, why))
		}
	}
	events = append(events, t.grouped(changes, w, m)...)
	slices.SortStableFunc(events, func(a, b Event) int { return cmp.Compare(a.DependencyID, b.DependencyID) })
	return append(events, t.admit(w, m, obs, ids, byID, src)...)
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

// reason is why an entry is retired in this window (keep: it is not).
type reason int

const (
	keep reason = iota
	retireReplaced
	retireWeak
	retireViolated
	retireAbsent
	retireEvicted
)

// absent counts a window without an observation of e; it reports whether
// e is to be retired (rule (c)).
func (t *Tracker) absent(e *entry) reason {
	e.Absent++
	e.Streak = 0
	if !e.Pinned && e.Absent >= t.cfg.RetireAfter {
		return retireAbsent
	}
	return keep
}

// step applies one observation to its entry: measurements, strength, then
// the entry's state rules. It returns the state change, if any, and
// whether the entry is to be retired.
func (t *Tracker) step(e *entry, o Observation, w WindowInfo, m float64, src Source) (*transition, reason) {
	e.Absent = 0
	minimal := src != Checked && o.Minimal
	if minimal {
		e.LastMinimalSeq, e.LastMinimalError = w.EndSeq, o.Error
		e.Equivalents, e.ImpliedBy = slices.Clone(o.Equivalents), slices.Clone(o.ImpliedBy)
	}
	prev := o.Error
	if e.Measured {
		prev = e.LastError
	}
	e.LastError, e.LastRemovals, e.Measured = o.Error, o.Removals, true
	holds := t.holds(o, w.Records)
	if holds && (rated(o, src) || minimal) {
		e.Strength, e.Score = o.Strength, o.Score
	}
	switch e.State {
	case StateHolding:
		if t.crossed(e, o.Error > t.cfg.Epsilon+m, prev) {
			e.State, e.Streak, e.HeldNonMinimal, e.ViolatedWindows, e.Weak = StateViolated, 0, 0, 0, 0
			return &transition{typ: EventViolated, e: e, before: e.ErrorBefore, o: o, samples: o.Samples}, keep
		}
		if holds && o.Mapping != nil {
			e.Mapping = o.Mapping
		}
		return nil, t.holdingRetirement(e, o, holds, rated(o, src) || minimal, src)
	case StateViolated:
		if t.crossed(e, o.Error <= t.cfg.Epsilon-m, prev) {
			return t.comeBack(e, o), keep
		}
		switch {
		case src == Checked:
		case minimal:
			e.ViolatedWindows = 0
		default:
			e.ViolatedWindows++
		}
		if !e.Pinned && t.cfg.RetireViolatedAfter > 0 && e.ViolatedWindows >= t.cfg.RetireViolatedAfter {
			return nil, retireViolated
		}
	}
	return nil, keep
}

// comeBack is the transition of a violated entry back under eps-m:
// restored, or changed when its FD's classes moved over more than eps of
// the window (rules restored and changed). The entry holds again, with
// the new mapping.
func (t *Tracker) comeBack(e *entry, o Observation) *transition {
	tr := &transition{typ: EventRestored, e: e, before: e.ErrorBefore, o: o}
	if e.Mapping != nil && o.Mapping != nil {
		if c := compareMappings(e.Dependency, e.Mapping, o.Mapping); c.Share > t.cfg.Epsilon {
			tr.typ, tr.change = EventChanged, &c
		}
	}
	if o.Mapping != nil {
		e.Mapping = o.Mapping
	}
	e.State, e.Streak, e.HeldNonMinimal, e.ViolatedWindows, e.Weak = StateHolding, 0, 0, 0, 0
	return tr
}

// holdingRetirement applies retirement rules (a) and (w) to a holding
// entry that stayed holding in this window; measured says o's strength is
// known (this window's, or the merged discovery's that found it).
func (t *Tracker) holdingRetirement(e *entry, o Observation, holds, measured bool, src Source) reason {
	if !holds {
		e.HeldNonMinimal, e.Weak = 0, 0
		return keep
	}
	if t.judged() && measured {
		if o.Strength < t.cfg.MinStrength-t.cfg.StrengthBand {
			e.Weak++
		} else {
			e.Weak = 0
		}
	}
	if src != Checked {
		replaced := !o.Minimal || o.StepsBack
		if t.judged() {
			replaced = replaced && o.ReplacedBy != "" && (o.StepsBack || (measured && o.Strength < t.cfg.MinStrength))
		}
		if replaced {
			e.HeldNonMinimal++
			e.ReplacedBy = o.ReplacedBy
		} else {
			e.HeldNonMinimal, e.ReplacedBy = 0, ""
		}
	}
	switch {
	case e.Pinned:
	case e.HeldNonMinimal >= t.cfg.RetireAfter:
		return retireReplaced
	case e.Weak >= t.cfg.RetireAfter:
		return retireWeak
	}
	return keep
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

// admit moves candidates on (rules candidate and discovered): a rule a
// discovery found and not tracked becomes one, a candidate that held (and
// was reliable, when rated) in DiscoverAfter windows in a row and is rated
// reliable in this one is tracked (evicting one when MaxTracked is
// reached) with a discovered event; one that fails a window is dropped.
func (t *Tracker) admit(w WindowInfo, m float64, obs []Observation, ids []string, byID map[string]int, src Source) []Event {
	events, seen := t.advanceAll(w, m, obs, ids, byID, src)
	if src == Checked {
		return events // a check that did not count a candidate leaves it
	}
	for id := range t.pending {
		if !seen[id] {
			delete(t.pending, id)
		}
	}
	return events
}

// advanceAll is admit's part per observation: it moves each observed
// candidate on (a new one when a discovery found it), and returns the
// events and the candidates kept.
func (t *Tracker) advanceAll(w WindowInfo, m float64, obs []Observation, ids []string, byID map[string]int, src Source) ([]Event, map[string]bool) {
	var events []Event
	seen := make(map[string]bool, len(obs))
	for i, o := range obs {
		id := ids[i]
		if byID[id] != i {
			continue
		}
		if _, ok := t.entries[id]; ok {
			continue
		}
		c := t.candidateFor(id, o, src)
		if c == nil {
			continue
		}
		if !t.advance(c, o, w.Records, src) {
			delete(t.pending, id)
			continue
		}
		seen[id] = true
		if c.Streak < t.cfg.DiscoverAfter || (t.judged() && !rated(o, src)) {
			continue
		}
		if len(t.entries) >= t.cfg.MaxTracked {
			victim := t.evictionCandidate(w.EndSeq)
			if victim == nil {
				continue
			}
			events = append(events, t.retire(victim, w, m, retireEvicted))
		}
		delete(t.pending, id)
		events = append(events, t.track(id, c, o, w, m))
	}
	return events, seen
}

// candidateFor is id's candidate: the pending one, or a new one when a
// discovery found o (its window counts as one held when it is an earlier
// window's, Merged), or nil.
func (t *Tracker) candidateFor(id string, o Observation, src Source) *candidate {
	if c := t.pending[id]; c != nil {
		return c
	}
	if src == Checked || !o.Minimal {
		return nil
	}
	c := &candidate{ID: id, Dependency: canonical(o.Dependency), FirstError: o.Error,
		Equivalents: slices.Clone(o.Equivalents), ImpliedBy: slices.Clone(o.ImpliedBy)}
	if src == Merged {
		c.Streak = 1
	}
	t.pending[id] = c
	return c
}

// advance counts one window of a candidate; false drops it: not found by
// a discovery (or found stepping back), not holding, or rated below
// MinStrength.
func (t *Tracker) advance(c *candidate, o Observation, records int, src Source) bool {
	switch {
	case src != Checked && (!o.Minimal || o.StepsBack), !t.holds(o, records):
		return false
	case t.judged() && rated(o, src) && o.Strength < t.cfg.MinStrength:
		return false
	}
	if src != Checked {
		c.Equivalents, c.ImpliedBy = slices.Clone(o.Equivalents), slices.Clone(o.ImpliedBy)
	}
	c.Streak++
	return true
}

// track starts tracking the candidate c, confirmed by o in window w, and
// returns its discovered event.
func (t *Tracker) track(id string, c *candidate, o Observation, w WindowInfo, m float64) Event {
	e := newEntry(id, o.Dependency, w.EndSeq)
	e.LastError, e.LastRemovals, e.Measured, e.Strength, e.Score = o.Error, o.Removals, true, o.Strength, o.Score
	e.LastMinimalSeq, e.LastMinimalError = w.EndSeq, o.Error
	e.ErrorBefore, e.Mapping = o.Error, o.Mapping
	e.Equivalents, e.ImpliedBy = c.Equivalents, c.ImpliedBy
	t.entries[id] = e
	return t.event(EventDiscovered, e, w, m, c.FirstError, o, o.Samples)
}

// grouped turns the window's transitions into events, one per group of
// same-type transitions whose dependencies share columns (see Tracker).
func (t *Tracker) grouped(changes []transition, w WindowInfo, m float64) []Event {
	var events []Event
	for _, typ := range []EventType{EventViolated, EventRestored, EventChanged} {
		var group []transition
		for _, c := range changes {
			if c.typ == typ {
				group = append(group, c)
			}
		}
		for _, g := range components(group) {
			slices.SortFunc(g, strongestFirst)
			if typ != EventViolated {
				slices.SortStableFunc(g, func(a, b transition) int { return cmp.Compare(b2i(b.e.Lead), b2i(a.e.Lead)) })
			}
			head := g[0]
			for _, c := range g {
				c.e.Lead = typ == EventViolated && c.e == head.e
			}
			ev := t.event(typ, head.e, w, m, head.before, head.o, head.samples)
			ev.Change = head.change
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

// retire drops e from tracking and returns its retired event; one a more
// general rule replaced names it.
func (t *Tracker) retire(e *entry, w WindowInfo, m float64, why reason) Event {
	delete(t.entries, e.ID)
	ev := t.event(EventRetired, e, w, m, e.LastMinimalError, Observation{Error: e.LastError, Removals: e.LastRemovals}, nil)
	if why == retireReplaced {
		ev.ReplacedBy = e.ReplacedBy
	}
	return ev
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
		Equivalents:    slices.Clone(e.Equivalents),
		ImpliedBy:      slices.Clone(e.ImpliedBy),
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
