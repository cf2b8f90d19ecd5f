package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/internal/history"
	"github.com/odwatch/odwatch/stream/window"
)

// The status page's history (package state, AppendHistory): the chart of a
// rule shows its last statusRuleRing observations, the timelines the
// stream's last statusEventRing events.
const (
	statusRuleRing  = 240
	statusEventRing = 500
)

// ErrUnknownStream is returned by the status accessors for a stream name
// the monitor does not run.
var ErrUnknownStream = errors.New("unknown stream")

// StreamStatus is what the status page shows of one stream. The fields
// after Interval describe the last evaluation since the process started
// (zero before it).
type StreamStatus struct {
	Name, Topic     string
	Epsilon, Margin float64
	// MarginAuto: Margin is AutoMargin's value for the last window's size.
	MarginAuto bool
	// Window is the configured window size in records; Interval the
	// evaluation interval of a time window (0 for a count window).
	Window   int
	Interval time.Duration

	LastEvaluation time.Time // wall clock
	// WindowRecords, WindowStart and WindowEnd: the last evaluated window
	// (record times).
	WindowRecords          int
	WindowStart, WindowEnd time.Time
	// RecordsPerSecond is the last window's rate by record time.
	RecordsPerSecond  float64
	Holding, Violated int
}

// RuleStatus is one tracked rule of a stream, as its tracker has it now.
type RuleStatus struct {
	ID         string
	Text       string
	Dependency discovery.Dependency
	State      alerts.State
	Pinned     bool
	// Measured is false until the rule was observed in a window.
	Measured bool
	Error    float64
	Removals int
	// Strength is how much better than chance the rule held, in the last
	// window in which it held (discovery.Result.Strength).
	Strength float64
}

// StatusEvent is an event as the status history keeps it: the event and,
// since an event carries violating records for its own dependency only,
// samples for its related dependencies (by dependency id).
type StatusEvent struct {
	Event          alerts.Event
	RelatedSamples map[string][]alerts.Sample
}

// historyJob is one evaluation's part of the status history: the append
// with its rule points and dropped rules (taken on the evaluator, from the
// tracker of that evaluation), the events to store, and what their related
// rules' samples need (nil: none to take, or skipped). The stream's
// historian (history.Historian) runs it through appendStatus.
type historyJob struct {
	h       *state.HistoryAppend
	events  []alerts.Event
	related *eval.Related
}

// recordStatus is the status page's hook in an evaluation, called on the
// evaluator once it is saved and its events delivered (record): it notes
// the window, takes from the tracker the observations of the rules still
// tracked (a retired rule's history is dropped) and, for the events'
// related rules (eval.RelatedDependencies), what their samples need from
// the window (eval.TakeRelated: copies of the columns they mention,
// cheap), and hands the rest to the stream's historian (appendStatus), so
// that the next check never waits for the samples or the append. When the
// historian is behind by its bound of jobs with samples
// (history.DefaultRelatedPending), the samples are skipped (logged at
// debug, counted): the rules' points and the events are still appended, in
// window order.
func (s *evaluator) recordStatus(snap *window.Snapshot, out *eval.Outcome) {
	info, obs, events := out.Info, out.Obs, out.Events
	s.m.status.Set(s.name, history.Last{At: time.Now(), Window: info})
	h := history.NewAppend(s.name, info, obs, events, s.tracker.Errors(), statusRuleRing, statusEventRing)
	h.Again = out.Again // more events of the window appended last
	job, reserved := &historyJob{h: h, events: events}, false
	if deps, at := eval.RelatedDependencies(events); len(deps) > 0 {
		if reserved = s.hist.Reserve(); reserved {
			job.related = eval.TakeRelated(out, snap, deps, at)
		} else {
			s.m.metrics.StatusSamplesSkipped.WithLabelValues(s.name).Inc()
			s.log.Debug("status history: related samples skipped, the history is behind", "window_end", info.EndSeq)
		}
	}
	s.hist.Add(job, reserved)
}

// appendStatus is the historian's part of recordStatus (on its
// goroutine): the samples of the events' related rules
// (eval.Env.RelatedSamples), then the append of the rules' points and the
// events with those samples to the store's status history. A failure
// costs chart points, not correctness, so it is logged.
func (s *evaluator) appendStatus(ctx context.Context, job *historyJob) {
	h := job.h
	s.m.hooks.relatedStarts(ctx, h.WindowEnd, job.events)
	var samples [][]alerts.Sample
	var at map[string]int
	if job.related != nil {
		samples, at = s.env().RelatedSamples(ctx, job.related), job.related.At
	}
	for _, e := range job.events {
		var related func(string) []alerts.Sample
		if samples != nil && eval.CarriesSample(&e) {
			related = func(id string) []alerts.Sample { return samples[at[id]] }
		}
		payload, err := history.EncodeEvent(e, related)
		if err != nil {
			s.log.Warn("status history: encode event", "id", e.ID, "err", err)
			continue
		}
		h.Events = append(h.Events, payload)
	}
	if _, err := s.m.store.AppendHistory(h); err != nil {
		s.log.Warn("status history", "window_end", h.WindowEnd, "err", err)
	}
	s.statusEnd.Store(h.WindowEnd + 1)
}

// decodeStatusEvent reads a stored StatusEvent.
func decodeStatusEvent(p []byte) (StatusEvent, error) {
	e, related, err := history.DecodeEvent(p)
	if err != nil {
		return StatusEvent{}, err
	}
	return StatusEvent{Event: e, RelatedSamples: related}, nil
}

func (m *Monitor) stream(name string) (*streamRun, error) {
	for _, s := range m.streams {
		if s.name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownStream, name)
}

// StatusStreams describes every stream of the monitor, in configuration
// order.
func (m *Monitor) StatusStreams() []StreamStatus {
	out := make([]StreamStatus, 0, len(m.streams))
	for _, s := range m.streams {
		st := StreamStatus{Name: s.name, Topic: s.cfg.Topic, Epsilon: s.cfg.Epsilon, Margin: s.cfg.Margin,
			Window: s.cfg.Window, Interval: s.cfg.Interval}
		if e, ok := m.status.Get(s.name); ok {
			st.LastEvaluation = e.At
			st.WindowRecords, st.WindowStart, st.WindowEnd = e.Window.Records, e.Window.StartTime, e.Window.EndTime
			if span := e.Window.EndTime.Sub(e.Window.StartTime); span > 0 && e.Window.Records > 1 {
				st.RecordsPerSecond = float64(e.Window.Records-1) / span.Seconds()
			}
		}
		if st.Margin < 0 {
			st.MarginAuto, st.Margin = true, alerts.NoiseMargin(st.Epsilon, cmp.Or(st.WindowRecords, st.Window))
		}
		for _, d := range s.eval.tracker.Errors() {
			if d.State == alerts.StateViolated {
				st.Violated++
			} else {
				st.Holding++
			}
		}
		out = append(out, st)
	}
	return out
}

// StatusRules lists the rules the stream's tracker holds now: violated
// first, then by error, highest first, then by text.
func (m *Monitor) StatusRules(stream string) ([]RuleStatus, error) {
	s, err := m.stream(stream)
	if err != nil {
		return nil, err
	}
	errs := s.eval.tracker.Errors()
	out := make([]RuleStatus, 0, len(errs))
	for _, e := range errs {
		d, err := discovery.ParseDependency(e.Text)
		if err != nil {
			return nil, fmt.Errorf("stream %s: rule %s: %w", stream, e.ID, err)
		}
		out = append(out, RuleStatus{ID: e.ID, Text: e.Text, Dependency: d, State: e.State, Pinned: e.Pinned,
			Measured: e.Measured, Error: e.Error, Removals: e.Removals, Strength: e.Strength})
	}
	slices.SortFunc(out, func(a, b RuleStatus) int {
		if av, bv := a.State == alerts.StateViolated, b.State == alerts.StateViolated; av != bv {
			if av {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.Error, a.Error); c != 0 {
			return c
		}
		return strings.Compare(a.Text, b.Text)
	})
	return out, nil
}

// StatusHistory returns the stored observations of one rule of stream,
// oldest first (at most the last statusRuleRing).
func (m *Monitor) StatusHistory(stream, id string) ([]state.RulePoint, error) {
	if _, err := m.stream(stream); err != nil {
		return nil, err
	}
	return m.store.RuleHistory(stream, id)
}

// StatusEvents returns the stream's stored events, oldest first (at most
// the last statusEventRing).
func (m *Monitor) StatusEvents(stream string) ([]StatusEvent, error) {
	if _, err := m.stream(stream); err != nil {
		return nil, err
	}
	payloads, err := m.store.EventHistory(stream)
	if err != nil {
		return nil, err
	}
	out := make([]StatusEvent, 0, len(payloads))
	for _, p := range payloads {
		e, err := decodeStatusEvent(p)
		if err != nil {
			return nil, fmt.Errorf("stream %s: stored event: %w", stream, err)
		}
		out = append(out, e)
	}
	return out, nil
}
