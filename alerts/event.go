package alerts

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/odwatch/odwatch/discovery"
)

// Sample is one record of a window that violates a dependency (it is in the
// minimal removal set), identified by its Kafka coordinates, with the values
// of the columns the dependency mentions. A missing key means NULL.
type Sample struct {
	Topic     string
	Partition int32
	Offset    int64
	Values    map[string]string
	// Expected is what the rule expected of the record (a violated event's
	// samples), or nil.
	Expected *Expected
	// Fields are all of the record's fields (a violated event's samples),
	// for the status page: not part of the event's JSON, which carries
	// only the rule's columns.
	Fields map[string]string
}

// WindowInfo identifies the window an observation was made on.
type WindowInfo struct {
	Stream string
	Topic  string
	// StartOffsets and EndOffsets hold the inclusive first and last offset
	// of the window per partition.
	StartOffsets, EndOffsets map[int32]int64
	StartTime, EndTime       time.Time
	Records                  int
	// EndSeq is the stream-wide sequence number of the window's last record.
	// It identifies the window and increases from one window to the next.
	EndSeq uint64
}

// Observation is one dependency measured on one window.
type Observation struct {
	Dependency discovery.Dependency
	Removals   int
	Error      float64
	// Minimal is true when this window's discovery run found the dependency
	// in its minimal set.
	Minimal bool
	// Strength is the dependency's chance-corrected strength in this
	// window (discovery.Result.Strength; 0 when unknown). The strongest of
	// dependencies that change together carries the event (see Tracker).
	Strength float64
	// Score is the share of record pairs the dependency's context
	// constrains (discovery.Result.Score); among equally strong ones the
	// highest leads a group.
	Score float64
	// Samples holds violating records, up to the configured sample size.
	Samples []Sample
	// Rated says that Strength and Score were measured on this window (a
	// check's, on the tracker's request: Tracker.Needs); in a window
	// discovery ran on they always are.
	Rated bool
	// ReplacedBy names (its text) a more general reliable rule the merged
	// discovery found where it did not find this one (Minimal false), or
	// what it steps back for (StepsBack).
	ReplacedBy string
	// StepsBack: the discovery found it but lists it as following from
	// ReplacedBy (discovery.Summarize: a key, an equivalence, implying
	// rules), not as reliable on its own.
	StepsBack bool
	// Mapping is an FD's mapping on this window, when Tracker.Needs asked
	// for it (MappingOf).
	Mapping *Mapping
	// Equivalents and ImpliedBy are discovery.Result's (Summarize): the
	// other members of the equivalences a rule is stated with, and what a
	// rule that steps back follows from.
	Equivalents, ImpliedBy []string
}

// EventType is the kind of change an event reports.
type EventType string

const (
	// EventViolated: a holding dependency exceeded eps+margin for K windows.
	EventViolated EventType = "violated"
	// EventRestored: a violated dependency came back to <= eps-margin for K windows.
	EventRestored EventType = "restored"
	// EventDiscovered: a dependency became minimal and was not tracked.
	EventDiscovered EventType = "discovered"
	// EventRetired: a tracked dependency is no longer tracked.
	EventRetired EventType = "retired"
	// EventChanged: a violated FD came back to <= eps-margin for K windows,
	// with other values for more than eps of the window's records than in
	// the last window it held in (Event.Change): a unit change or a
	// recoding, watched from then on with its new values.
	EventChanged EventType = "changed"
)

// EventTypes are all event types, in the order the docs list them.
var EventTypes = []EventType{EventDiscovered, EventViolated, EventRestored, EventChanged, EventRetired}

// Event is one dependency change of one stream. Time is the window's end
// time, not the wall clock, so that a replay produces an identical event.
type Event struct {
	ID             string
	Type           EventType
	Stream         string
	Time           time.Time
	DependencyID   string
	Dependency     discovery.Dependency
	DependencyText string
	// ErrorBefore is the error at the last window before the transition
	// began (see Tracker), ErrorNow the error in this window.
	ErrorBefore, ErrorNow float64
	Epsilon, Margin       float64
	Removals              int
	// Strength is the dependency's strength (discovery.Result.Strength) in
	// the last window in which it held: how much better than chance the rule
	// is, also when the event says it broke. 0 when unknown.
	Strength float64
	Window   WindowInfo
	Samples  []Sample
	// Related are the dependencies that made the same transition (to Type)
	// in this window and share columns with Dependency: one cause, one
	// event (see Tracker).
	Related []Related
	// Change is what moved, for a changed event (nil otherwise).
	Change *Change
	// ReplacedBy names the more general rule that replaced a retired one
	// ("" when it was retired for another reason).
	ReplacedBy string
	// Equivalents and ImpliedBy: the dependency's, as the last discovery
	// stated it (discovery.Result; Summarize).
	Equivalents, ImpliedBy []string
	// Explanation says why a violated event's rule broke (nil on other
	// events, and when it could not be computed).
	Explanation *Explanation
}

// Involves reports whether the event reports a state change of the
// dependency with id dependencyID: its own or a related one's.
func (e Event) Involves(dependencyID string) bool {
	if e.DependencyID == dependencyID {
		return true
	}
	for _, r := range e.Related {
		if r.DependencyID == dependencyID {
			return true
		}
	}
	return false
}

// Related is a dependency that changed state together with an event's
// dependency: to the event's type, in the event's window.
type Related struct {
	DependencyID          string
	Dependency            discovery.Dependency
	DependencyText        string
	ErrorBefore, ErrorNow float64
	Removals              int
}

// Wire form of an event. Field names are part of the public contract (event
// topic consumers, webhook receivers): change them only with a new ce_type.
type eventJSON struct {
	ID             string               `json:"id"`
	Type           EventType            `json:"type"`
	Stream         string               `json:"stream"`
	Time           time.Time            `json:"time"`
	DependencyID   string               `json:"dependency_id"`
	Dependency     discovery.Dependency `json:"dependency"`
	DependencyText string               `json:"dependency_text"`
	ErrorBefore    float64              `json:"error_before"`
	ErrorNow       float64              `json:"error_now"`
	Epsilon        float64              `json:"epsilon"`
	Margin         float64              `json:"margin"`
	Removals       int                  `json:"removals"`
	Strength       float64              `json:"strength"`
	Window         windowJSON           `json:"window"`
	Samples        []sampleJSON         `json:"samples"`
	Related        []relatedJSON        `json:"related"`
	Changed        *changeJSON          `json:"changed,omitempty"`
	ReplacedBy     string               `json:"replaced_by,omitempty"`
	Equivalents    []string             `json:"equivalents,omitempty"`
	ImpliedBy      []string             `json:"implied_by,omitempty"`
	Explanation    *explanationJSON     `json:"explanation,omitempty"`
}

type changeJSON struct {
	Share    float64             `json:"share"`
	Moved    int                 `json:"moved"`
	Compared int                 `json:"compared"`
	Examples []changeExampleJSON `json:"examples"`
}

type changeExampleJSON struct {
	Class  map[string]string `json:"class"`
	Before string            `json:"before"`
	After  string            `json:"after"`
}

func toChangeJSON(c *Change) *changeJSON {
	if c == nil {
		return nil
	}
	out := &changeJSON{Share: c.Share, Moved: c.Moved, Compared: c.Compared, Examples: make([]changeExampleJSON, len(c.Examples))}
	for i, x := range c.Examples {
		cl := x.Class
		if cl == nil {
			cl = map[string]string{}
		}
		out.Examples[i] = changeExampleJSON{Class: cl, Before: x.Before, After: x.After}
	}
	return out
}

func fromChangeJSON(c *changeJSON) *Change {
	if c == nil {
		return nil
	}
	out := &Change{Share: c.Share, Moved: c.Moved, Compared: c.Compared}
	for _, x := range c.Examples {
		out.Examples = append(out.Examples, ChangeExample(x))
	}
	return out
}

type relatedJSON struct {
	DependencyID   string               `json:"dependency_id"`
	Dependency     discovery.Dependency `json:"dependency"`
	DependencyText string               `json:"dependency_text"`
	ErrorBefore    float64              `json:"error_before"`
	ErrorNow       float64              `json:"error_now"`
	Removals       int                  `json:"removals"`
}

func toRelatedJSON(rs []Related) []relatedJSON {
	out := make([]relatedJSON, len(rs))
	for i, r := range rs {
		out[i] = relatedJSON(r)
	}
	return out
}

func fromRelatedJSON(rs []relatedJSON) []Related {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Related, len(rs))
	for i, r := range rs {
		out[i] = Related(r)
	}
	return out
}

type windowJSON struct {
	Topic        string           `json:"topic"`
	StartOffsets map[string]int64 `json:"start_offsets"`
	EndOffsets   map[string]int64 `json:"end_offsets"`
	StartTime    time.Time        `json:"start_time"`
	EndTime      time.Time        `json:"end_time"`
	Records      int              `json:"records"`
	EndSeq       uint64           `json:"end_seq"`
}

type sampleJSON struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Values    map[string]string `json:"values"`
	Expected  *expectedJSON     `json:"expected,omitempty"`
}

func offsetsToJSON(m map[int32]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for p, o := range m {
		out[strconv.FormatInt(int64(p), 10)] = o
	}
	return out
}

func offsetsFromJSON(m map[string]int64) (map[int32]int64, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[int32]int64, len(m))
	for k, o := range m {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("alerts: bad partition %q: %w", k, err)
		}
		out[int32(p)] = o
	}
	return out, nil
}

func toWindowJSON(w WindowInfo) windowJSON {
	return windowJSON{
		Topic:        w.Topic,
		StartOffsets: offsetsToJSON(w.StartOffsets),
		EndOffsets:   offsetsToJSON(w.EndOffsets),
		StartTime:    w.StartTime,
		EndTime:      w.EndTime,
		Records:      w.Records,
		EndSeq:       w.EndSeq,
	}
}

func toSamplesJSON(s []Sample) []sampleJSON {
	out := make([]sampleJSON, len(s))
	for i, x := range s {
		v := x.Values
		if v == nil {
			v = map[string]string{}
		}
		out[i] = sampleJSON{Topic: x.Topic, Partition: x.Partition, Offset: x.Offset, Values: v, Expected: toExpectedJSON(x.Expected)}
	}
	return out
}

func fromSamplesJSON(s []sampleJSON) []Sample {
	if len(s) == 0 {
		return nil
	}
	out := make([]Sample, len(s))
	for i, x := range s {
		out[i] = Sample{Topic: x.Topic, Partition: x.Partition, Offset: x.Offset, Values: x.Values, Expected: fromExpectedJSON(x.Expected)}
	}
	return out
}

// MarshalJSON encodes the event with the documented snake_case field names:
// id, type, stream, time, dependency_id, dependency (discovery's layout:
// {kind "ofd", context, rhs} | {kind "oc", context, left, right, polarity} |
// {kind "od", lhs, rhs}), dependency_text, error_before,
// error_now, epsilon, margin, removals, strength, window {topic, start_offsets,
// end_offsets, start_time, end_time, records, end_seq} (offset maps keyed by
// partition number as a string), samples [{topic, partition, offset,
// values, expected?}], related [{dependency_id, dependency, dependency_text,
// error_before, error_now, removals}] (always an array), explanation?
// {violating, segments [{column, value | null, violating,
// violating_share, window_share, lift}], first {topic, partition, offset,
// time}} (violated events; expected {column, value | null | low?, high?,
// or?} with it, values as text like the samples', or an equivalence's
// other way); only when set: changed
// {share, moved, compared, examples [{class, before, after}]},
// replaced_by, equivalents, implied_by. Times are RFC 3339
// with nanoseconds, in the zone given. schema/event.schema.json is the
// contract (EventSchema).
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{
		ID:             e.ID,
		Type:           e.Type,
		Stream:         e.Stream,
		Time:           e.Time,
		DependencyID:   e.DependencyID,
		Dependency:     e.Dependency,
		DependencyText: e.DependencyText,
		ErrorBefore:    e.ErrorBefore,
		ErrorNow:       e.ErrorNow,
		Epsilon:        e.Epsilon,
		Margin:         e.Margin,
		Removals:       e.Removals,
		Strength:       e.Strength,
		Window:         toWindowJSON(e.Window),
		Samples:        toSamplesJSON(e.Samples),
		Related:        toRelatedJSON(e.Related),
		Changed:        toChangeJSON(e.Change),
		ReplacedBy:     e.ReplacedBy,
		Equivalents:    e.Equivalents,
		ImpliedBy:      e.ImpliedBy,
		Explanation:    toExplanationJSON(e.Explanation),
	})
}

// UnmarshalJSON decodes what MarshalJSON produced (consumers and tests).
// Window.Stream is set from the event's stream.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j eventJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("alerts: decode event: %w", err)
	}
	so, err := offsetsFromJSON(j.Window.StartOffsets)
	if err != nil {
		return err
	}
	eo, err := offsetsFromJSON(j.Window.EndOffsets)
	if err != nil {
		return err
	}
	*e = Event{
		ID: j.ID, Type: j.Type, Stream: j.Stream, Time: j.Time,
		DependencyID: j.DependencyID, Dependency: j.Dependency, DependencyText: j.DependencyText,
		ErrorBefore: j.ErrorBefore, ErrorNow: j.ErrorNow, Epsilon: j.Epsilon, Margin: j.Margin,
		Removals: j.Removals, Strength: j.Strength,
		Window: WindowInfo{
			Stream: j.Stream, Topic: j.Window.Topic, StartOffsets: so, EndOffsets: eo,
			StartTime: j.Window.StartTime, EndTime: j.Window.EndTime,
			Records: j.Window.Records, EndSeq: j.Window.EndSeq,
		},
		Samples:     fromSamplesJSON(j.Samples),
		Related:     fromRelatedJSON(j.Related),
		Explanation: fromExplanationJSON(j.Explanation),
		Change:      fromChangeJSON(j.Changed), ReplacedBy: j.ReplacedBy,
		Equivalents: j.Equivalents, ImpliedBy: j.ImpliedBy,
	}
	return nil
}

// Text renders the event for people: one summary line, one indented line
// per related dependency, the explanation's (cause, other segments, the
// record the break starts at), then one per sample with its coordinates,
// values (columns sorted) and what the rule expected:
//
//	2026-11-30T01:02:03Z VIOLATED payroll {}: salary ~ tax (asc) error 0.0000 -> 0.0450 (eps 0.0300, margin 0.0050) removals 45 window payroll p0:100-199 (100 records) id 3f2a...
//	    related {tax}: [] -> salary error 0.0010 -> 0.0400 removals 4
//	    cause: 100% of the violating records have source=import, against 33% of the window
//	    since: payroll/0@105 at 2026-11-30T01:01:00Z (45 violating records)
//	    payroll/0@123 salary=5000 tax=12500 (expected tax 1000..1250)
func (e Event) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s error %.4f -> %.4f (eps %.4f, margin %.4f) removals %d window %s (%d records) id %s",
		e.Time.UTC().Format(time.RFC3339), strings.ToUpper(string(e.Type)), e.Stream, e.DependencyText,
		e.ErrorBefore, e.ErrorNow, e.Epsilon, e.Margin, e.Removals, e.Window.Range(), e.Window.Records, e.ID)
	if e.ReplacedBy != "" {
		fmt.Fprintf(&b, " replaced by %s", e.ReplacedBy)
	}
	if c := e.Change; c != nil {
		fmt.Fprintf(&b, "\n    %s", c.Text(e.Dependency))
	}
	for _, r := range e.Related {
		fmt.Fprintf(&b, "\n    related %s error %.4f -> %.4f removals %d", r.DependencyText, r.ErrorBefore, r.ErrorNow, r.Removals)
	}
	explanationText(&b, e.Explanation)
	for _, s := range e.Samples {
		fmt.Fprintf(&b, "\n    %s/%d@%d", s.Topic, s.Partition, s.Offset)
		for _, k := range slices.Sorted(maps.Keys(s.Values)) {
			fmt.Fprintf(&b, " %s=%s", k, s.Values[k])
		}
		if s.Expected != nil {
			fmt.Fprintf(&b, " (expected %s)", s.Expected)
		}
	}
	return b.String()
}

// Range is "topic p0:100-199 p1:..." for a window: each partition's first
// and last offset, a partition with no start offset starting at its end.
func (w WindowInfo) Range() string {
	var b strings.Builder
	b.WriteString(w.Topic)
	for _, p := range slices.Sorted(maps.Keys(w.EndOffsets)) {
		start, ok := w.StartOffsets[p]
		if !ok {
			start = w.EndOffsets[p]
		}
		fmt.Fprintf(&b, " p%d:%d-%d", p, start, w.EndOffsets[p])
	}
	return b.String()
}
