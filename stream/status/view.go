package status

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream"
)

// Source is what the page reads; *stream.Monitor implements it.
type Source interface {
	StatusStreams() []stream.StreamStatus
	StatusRules(stream string) ([]stream.RuleStatus, error)
	StatusHistory(stream, id string) ([]state.RulePoint, error)
	StatusEvents(stream string) ([]stream.StatusEvent, error)
}

// errNotFound: the stream or the rule is unknown (404).
var errNotFound = errors.New("not found")

// timelineLen is how many of the newest events a stream page lists.
const timelineLen = 50

// The views are the JSON documents of /api/...; the HTML pages render the
// same values.

// streamsView is GET /api/streams.
type streamsView struct {
	// Version changes when any stream is evaluated; the page polls it to
	// know when to refresh.
	Version string       `json:"version"`
	Streams []streamJSON `json:"streams"`
}

type streamJSON struct {
	Name    string  `json:"name"`
	Topic   string  `json:"topic"`
	Epsilon float64 `json:"epsilon"`
	// Margin is "auto" or the configured share; MarginValue the band's
	// half-width in use (the automatic margin's value for the last window).
	Margin           any        `json:"margin"`
	MarginValue      float64    `json:"margin_value"`
	Window           int        `json:"window"`
	IntervalSeconds  float64    `json:"interval_seconds,omitempty"`
	LastEvaluation   *time.Time `json:"last_evaluation"`
	WindowRecords    int        `json:"window_records"`
	WindowStart      *time.Time `json:"window_start"`
	WindowEnd        *time.Time `json:"window_end"`
	WindowSpanSecond float64    `json:"window_span_seconds"`
	RecordsPerSecond float64    `json:"records_per_second"`
	Holding          int        `json:"holding"`
	Violated         int        `json:"violated"`
}

// band is the hysteresis band of a stream: a holding rule is violated
// above High, a violated one restored at or below Low.
type band struct {
	Low  float64 `json:"low"`
	Eps  float64 `json:"epsilon"`
	High float64 `json:"high"`
}

type pointJSON struct {
	WindowEnd uint64    `json:"window_end"`
	Time      time.Time `json:"time"`
	Error     float64   `json:"error"`
	Removals  int       `json:"removals"`
	Records   int       `json:"records"`
	Violated  bool      `json:"violated"`
}

type ruleJSON struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	Description string `json:"description"`
	// Tracked is false for a rule known only from past events (retired).
	Tracked  bool        `json:"tracked"`
	State    string      `json:"state,omitempty"`
	Pinned   bool        `json:"pinned"`
	Measured bool        `json:"measured"`
	Error    float64     `json:"error"`
	Removals int         `json:"removals"`
	Strength float64     `json:"strength"`
	Band     band        `json:"band"`
	History  []pointJSON `json:"history"`
}

// streamView is GET /api/streams/{stream}.
type streamView struct {
	Version string         `json:"version"`
	Stream  streamJSON     `json:"stream"`
	Rules   []ruleJSON     `json:"rules"`
	Events  []alerts.Event `json:"events"` // newest first, at most timelineLen
}

// ruleView is GET /api/streams/{stream}/rules/{id}.
type ruleView struct {
	Version string         `json:"version"`
	Stream  streamJSON     `json:"stream"`
	Rule    ruleJSON       `json:"rule"`
	Events  []alerts.Event `json:"events"` // the rule's, newest first
	// Samples are the violating records of the rule's newest event that
	// has some; SamplesFrom is that event's id. Columns are the rule's
	// columns, in the order the page shows the values.
	Samples     []sampleJSON `json:"samples"`
	SamplesFrom string       `json:"samples_from,omitempty"`
	// SamplesWith is the text of that event's own rule when this rule is
	// one of its related ones.
	SamplesWith string `json:"samples_with,omitempty"`
	// Columns are the rule's columns, then the other fields of the
	// sampled records (an explained event's samples carry all of them),
	// by name.
	Columns []string `json:"columns"`
	// Explanation is that event's explanation (its own rule's), if any.
	Explanation *explanationJSON `json:"explanation,omitempty"`
	// Values is false when record values are redacted (--status-values).
	Values bool `json:"values"`
}

// sampleJSON is a violating record; Values is null when redacted, and a
// column missing from it is NULL in the record. Expected is what the rule
// expected of it (redacted with the values).
type sampleJSON struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Values    map[string]string `json:"values"`
	Expected  string            `json:"expected,omitempty"`
}

// explanationJSON is an event's explanation as the rule page shows it: the
// segments (a value is left out when values are redacted) with the
// geometry of their bars, and the record the break starts at.
type explanationJSON struct {
	Violating int              `json:"violating"`
	Segments  []segmentJSON    `json:"segments"`
	First     alerts.RecordRef `json:"first"`
}

type segmentJSON struct {
	Column         string  `json:"column"`
	Value          string  `json:"value,omitempty"`
	Violating      int     `json:"violating"`
	ViolatingShare float64 `json:"violating_share"`
	WindowShare    float64 `json:"window_share"`
	Lift           float64 `json:"lift"`
	// ViolatingW and WindowW are the bars' widths in the chart (pixels).
	ViolatingW float64 `json:"-"`
	WindowW    float64 `json:"-"`
}

// segmentBarW is the width of a segment's bars at a share of 1.
const segmentBarW = 240

func toExplanationJSON(x *alerts.Explanation, values bool) *explanationJSON {
	if x == nil {
		return nil
	}
	out := &explanationJSON{Violating: x.Violating, First: x.First, Segments: []segmentJSON{}}
	for _, s := range x.Segments {
		sj := segmentJSON{Column: s.Column, Violating: s.Violating, ViolatingShare: s.ViolatingShare,
			WindowShare: s.WindowShare, Lift: s.Lift,
			ViolatingW: round2(segmentBarW * s.ViolatingShare), WindowW: round2(segmentBarW * s.WindowShare)}
		if values {
			sj.Value = strings.TrimPrefix(s.String(), s.Column+"=")
		}
		out.Segments = append(out.Segments, sj)
	}
	return out
}

// sampleColumns are the rule's columns, then every other field of the
// samples, by name.
func sampleColumns(rule []string, samples []alerts.Sample) []string {
	out := slices.Clone(rule)
	var more []string
	for _, s := range samples {
		for k := range s.Fields {
			if !slices.Contains(out, k) && !slices.Contains(more, k) {
				more = append(more, k)
			}
		}
	}
	slices.Sort(more)
	return append(out, more...)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toStreamJSON(s stream.StreamStatus) streamJSON {
	j := streamJSON{Name: s.Name, Topic: s.Topic, Epsilon: s.Epsilon, Margin: s.Margin, MarginValue: s.Margin, Window: s.Window,
		IntervalSeconds: s.Interval.Seconds(), LastEvaluation: timePtr(s.LastEvaluation),
		WindowRecords: s.WindowRecords, WindowStart: timePtr(s.WindowStart), WindowEnd: timePtr(s.WindowEnd),
		RecordsPerSecond: s.RecordsPerSecond, Holding: s.Holding, Violated: s.Violated}
	if span := s.WindowEnd.Sub(s.WindowStart); span > 0 {
		j.WindowSpanSecond = span.Seconds()
	}
	if s.MarginAuto {
		j.Margin = "auto"
	}
	return j
}

func bandOf(s stream.StreamStatus) band {
	return band{Low: max(0, s.Epsilon-s.Margin), Eps: s.Epsilon, High: s.Epsilon + s.Margin}
}

// version identifies the evaluations the page shows: the streams' last
// evaluation times.
func version(ss []stream.StreamStatus) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(strconv.FormatInt(s.LastEvaluation.UnixNano(), 36))
		b.WriteByte('.')
	}
	return b.String()
}

func buildStreams(src Source) streamsView {
	ss := src.StatusStreams()
	v := streamsView{Version: version(ss), Streams: make([]streamJSON, 0, len(ss))}
	for _, s := range ss {
		v.Streams = append(v.Streams, toStreamJSON(s))
	}
	return v
}

func findStream(src Source, name string) (stream.StreamStatus, string, error) {
	ss := src.StatusStreams()
	for _, s := range ss {
		if s.Name == name {
			return s, version(ss), nil
		}
	}
	return stream.StreamStatus{}, "", errNotFound
}

func toPoints(ps []state.RulePoint) []pointJSON {
	out := make([]pointJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, pointJSON{WindowEnd: p.WindowEnd, Time: p.Time, Error: p.Error, Removals: p.Removals, Records: p.Records, Violated: p.Violated})
	}
	return out
}

func toRuleJSON(src Source, s stream.StreamStatus, r stream.RuleStatus) (ruleJSON, error) {
	h, err := src.StatusHistory(s.Name, r.ID)
	if err != nil {
		return ruleJSON{}, err
	}
	return ruleJSON{ID: r.ID, Text: r.Text, Description: discovery.Describe(r.Dependency), Tracked: true,
		State: string(r.State), Pinned: r.Pinned, Measured: r.Measured, Error: r.Error, Removals: r.Removals,
		Strength: r.Strength, Band: bandOf(s), History: toPoints(h)}, nil
}

// redact removes record values from events' samples (their values and
// expected values), explanations (segment values) and a changed event's
// examples unless values are shown.
func redact(events []alerts.Event, values bool) {
	if values {
		return
	}
	for i := range events {
		samples := slices.Clone(events[i].Samples)
		for j := range samples {
			samples[j].Values, samples[j].Expected, samples[j].Fields = nil, nil, nil
		}
		events[i].Samples = samples
		if c := events[i].Change; c != nil {
			events[i].Change = &alerts.Change{Share: c.Share, Moved: c.Moved, Compared: c.Compared}
		}
		if x := events[i].Explanation; x != nil {
			// Segment values are record values too.
			y := *x
			y.Segments = slices.Clone(x.Segments)
			for j := range y.Segments {
				y.Segments[j].Value = ""
			}
			events[i].Explanation = &y
		}
	}
}

// eventDependency is the dependency with id in an event that involves it:
// its own or a related one's.
func eventDependency(e alerts.Event, id string) (discovery.Dependency, string) {
	for _, r := range e.Related {
		if r.DependencyID == id {
			return r.Dependency, r.DependencyText
		}
	}
	return e.Dependency, e.DependencyText
}

// columns lists the columns a rule mentions, context first.
func columns(text string) []string {
	d, err := discovery.ParseDependency(text)
	if err != nil {
		return nil
	}
	return d.Columns()
}

// newestFirst returns the events keep accepts, newest first, at most
// limit (all when limit <= 0).
func newestFirst(events []stream.StatusEvent, keep func(alerts.Event) bool, limit int) []stream.StatusEvent {
	out := []stream.StatusEvent{}
	for i := len(events) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if keep(events[i].Event) {
			out = append(out, events[i])
		}
	}
	return out
}

func plain(events []stream.StatusEvent) []alerts.Event {
	out := make([]alerts.Event, len(events))
	for i := range events {
		out[i] = events[i].Event
	}
	return out
}

func buildStream(src Source, name string, values bool) (streamView, error) {
	s, ver, err := findStream(src, name)
	if err != nil {
		return streamView{}, err
	}
	rules, err := src.StatusRules(name)
	if err != nil {
		return streamView{}, err
	}
	v := streamView{Version: ver, Stream: toStreamJSON(s), Rules: make([]ruleJSON, 0, len(rules))}
	for _, r := range rules {
		rj, err := toRuleJSON(src, s, r)
		if err != nil {
			return streamView{}, err
		}
		v.Rules = append(v.Rules, rj)
	}
	events, err := src.StatusEvents(name)
	if err != nil {
		return streamView{}, err
	}
	v.Events = plain(newestFirst(events, func(alerts.Event) bool { return true }, timelineLen))
	redact(v.Events, values)
	return v, nil
}

func buildRule(src Source, name, id string, values bool) (ruleView, error) {
	s, ver, err := findStream(src, name)
	if err != nil {
		return ruleView{}, err
	}
	events, err := src.StatusEvents(name)
	if err != nil {
		return ruleView{}, err
	}
	mine := newestFirst(events, func(e alerts.Event) bool { return e.Involves(id) }, 0)
	v := ruleView{Version: ver, Stream: toStreamJSON(s), Values: values, Samples: []sampleJSON{}, Events: plain(mine)}
	rules, err := src.StatusRules(name)
	if err != nil {
		return ruleView{}, err
	}
	found := false
	for _, r := range rules {
		if r.ID == id {
			if v.Rule, err = toRuleJSON(src, s, r); err != nil {
				return ruleView{}, err
			}
			found = true
			break
		}
	}
	if !found {
		if len(v.Events) == 0 {
			return ruleView{}, errNotFound
		}
		// Known from its events only: no longer tracked.
		// Its history is what the store kept (a retired rule's is gone).
		d, text := eventDependency(v.Events[0], id)
		h, err := src.StatusHistory(name, id)
		if err != nil {
			return ruleView{}, err
		}
		v.Rule = ruleJSON{ID: id, Text: text, Description: discovery.Describe(d), Band: bandOf(s), History: toPoints(h)}
	}
	v.Columns = columns(v.Rule.Text)
	for _, e := range mine {
		// An event's samples are a removal set of its own dependency; a
		// related rule's were computed for the status history.
		samples := e.RelatedSamples[id]
		if e.Event.DependencyID == id {
			samples = e.Event.Samples
		}
		if len(samples) == 0 {
			continue
		}
		v.SamplesFrom = e.Event.ID
		if e.Event.DependencyID != id {
			v.SamplesWith = e.Event.DependencyText
		} else {
			v.Explanation = toExplanationJSON(e.Event.Explanation, values)
			v.Columns = sampleColumns(v.Columns, samples)
		}
		for _, smp := range samples {
			sj := sampleJSON{Topic: smp.Topic, Partition: smp.Partition, Offset: smp.Offset}
			if values {
				sj.Values = smp.Values
				if smp.Fields != nil {
					sj.Values = smp.Fields
				}
				if smp.Expected != nil {
					sj.Expected = smp.Expected.String()
				}
			}
			v.Samples = append(v.Samples, sj)
		}
		break
	}
	redact(v.Events, values)
	return v, nil
}
