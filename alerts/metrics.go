package alerts

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// defaultMaxErrorSeries caps the odwatch_dependency_error series per stream.
const defaultMaxErrorSeries = 200

// Metrics holds the collectors of package alerts:
//
//	odwatch_events_total{stream,type}             counter, events emitted (every type of EventTypes from the first UpdateTracker on)
//	odwatch_sink_errors_total{stream,sink}        counter, failed Sends per sink
//	odwatch_events_dropped_total{stream,sink}     counter, events a sink refused for good (ErrPermanent):
//	                                              logged and not retried, so that later events flow
//	odwatch_dependencies{stream,state}            gauge, tracked dependencies by state (see Tracker.States)
//	odwatch_dependency_error{stream,dependency}   gauge, last error per tracked dependency (text form),
//	                                              at most MaxErrorSeries per stream: violated first, then highest error
//	odwatch_dependency_violated{stream,dependency} gauge, 1 while the dependency's hysteresis state is violated
//	                                              (a violated event and no restored one since), 0 while holding;
//	                                              exactly the label sets of odwatch_dependency_error
//	odwatch_margin{stream}                        gauge, the hysteresis half-width of the stream's Tracker
//	odwatch_dependency_cause{stream,dependency,cause} gauge, 1 while the dependency is violated and its
//	                                              violated event's explanation has a segment: cause is
//	                                              Explanation.Cause (the alert rules' summary reads it)
//
// odwatch_dependency_violated is what alert rules should fire on: comparing
// odwatch_dependency_error with odwatch_epsilon flaps for a dependency whose
// error hovers around eps, while the tracker only changes state after K
// consecutive windows beyond eps ± margin, exactly when it emits its
// violated and restored events.
type Metrics struct {
	events       *prometheus.CounterVec
	sinkErrors   *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	dependencies *prometheus.GaugeVec
	depError     *prometheus.GaugeVec
	depViolated  *prometheus.GaugeVec
	margin       *prometheus.GaugeVec
	depCause     *prometheus.GaugeVec

	// mu guards exported: per stream, the dependency label values that have
	// series, so that UpdateTracker deletes only the ones that left instead
	// of deleting and re-creating all of them (a scrape in between would see
	// them missing, and Prometheus would mark them stale and reset pending
	// alerts).
	mu       sync.Mutex
	exported map[string]map[string]bool
	// MaxErrorSeries caps odwatch_dependency_error per stream; 0 means 200
	// (defaultMaxErrorSeries).
	MaxErrorSeries int
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered). A collector already registered with the same description is
// reused, so two streams may share a registry.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		exported: make(map[string]map[string]bool),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odwatch_events_total", Help: "Dependency-change events emitted, by type.",
		}, []string{"stream", "type"}),
		sinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odwatch_sink_errors_total", Help: "Failed event deliveries, by sink.",
		}, []string{"stream", "sink"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odwatch_events_dropped_total", Help: "Events a sink refused permanently (e.g. webhook 400, Kafka message too large), dropped for that sink instead of retried.",
		}, []string{"stream", "sink"}),
		dependencies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_dependencies", Help: "Tracked dependencies by state (holding and violated partition them; pinned counts pinned ones again).",
		}, []string{"stream", "state"}),
		depError: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_dependency_error", Help: "Last measured error (removals / window records) of a tracked dependency; capped per stream.",
		}, []string{"stream", "dependency"}),
		depViolated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_dependency_violated", Help: "1 while a tracked dependency is violated (between its violated and restored events, with hysteresis), 0 while holding; same series as odwatch_dependency_error.",
		}, []string{"stream", "dependency"}),
		margin: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_margin", Help: "Hysteresis half-width of the stream: violated above epsilon+margin, restored at or below epsilon-margin.",
		}, []string{"stream"}),
		depCause: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_dependency_cause", Help: "1 while a violated dependency's violated event names a cause: the segment its violating records share (label cause).",
		}, []string{"stream", "dependency", "cause"}),
	}
	if reg != nil {
		m.events = register(reg, m.events)
		m.sinkErrors = register(reg, m.sinkErrors)
		m.dropped = register(reg, m.dropped)
		m.dependencies = register(reg, m.dependencies)
		m.depError = register(reg, m.depError)
		m.depViolated = register(reg, m.depViolated)
		m.margin = register(reg, m.margin)
		m.depCause = register(reg, m.depCause)
	}
	return m
}

// register registers c, or returns the collector already registered in its
// place. Other registration errors (a clash with a different collector of
// the same name) leave c unregistered but usable.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// Observe counts emitted events and sets the cause of the dependencies a
// violated event with an explanation reports (its own and its related
// ones: one cause, one event); UpdateTracker removes it once they hold.
func (m *Metrics) Observe(events []Event) {
	for _, e := range events {
		m.events.WithLabelValues(e.Stream, string(e.Type)).Inc()
		if e.Type != EventViolated {
			continue
		}
		texts := []string{e.DependencyText}
		for _, r := range e.Related {
			texts = append(texts, r.DependencyText)
		}
		for _, t := range texts {
			m.depCause.DeletePartialMatch(prometheus.Labels{"stream": e.Stream, "dependency": t})
			if c := e.Explanation.Cause(); c != "" {
				m.depCause.WithLabelValues(e.Stream, t, c).Set(1)
			}
		}
	}
}

// SinkError counts one failed delivery to the named sink.
func (m *Metrics) SinkError(stream, sink string) {
	m.sinkErrors.WithLabelValues(stream, sink).Inc()
}

// EventDropped counts one event the named sink refused permanently and
// that is therefore not delivered to it.
func (m *Metrics) EventDropped(stream, sink string) {
	m.dropped.WithLabelValues(stream, sink).Inc()
}

// Instrument wraps s so that every failed Send counts under
// odwatch_sink_errors_total{sink=name}, labelled with the stream of the
// first event.
func (m *Metrics) Instrument(name string, s Sink) Sink {
	return instrumented{m: m, name: name, Sink: s}
}

type instrumented struct {
	m    *Metrics
	name string
	Sink
}

func (i instrumented) Send(ctx context.Context, events []Event) error {
	err := i.Sink.Send(ctx, events)
	if err != nil && len(events) > 0 {
		i.m.SinkError(events[0].Stream, i.name)
	}
	return err
}

// UpdateTracker sets odwatch_dependencies, odwatch_dependency_error,
// odwatch_dependency_violated and odwatch_margin of stream from t, replacing
// the stream's previous dependency series (so that retired dependencies, and
// ones pushed out of the cap, disappear from both families together).
//
// It also makes odwatch_events_total{type} exist at 0 for every event type
// of stream (EventTypes), so that an alert rule's increase() sees the first
// event of a type, which it would not on a series born with it.
func (m *Metrics) UpdateTracker(stream string, t *Tracker) {
	for _, typ := range EventTypes {
		m.events.WithLabelValues(stream, string(typ))
	}
	m.margin.WithLabelValues(stream).Set(t.currentMargin())
	for state, n := range t.States() {
		m.dependencies.WithLabelValues(stream, state).Set(float64(n))
	}
	errs := t.Errors()
	slices.SortStableFunc(errs, func(a, b DependencyError) int {
		av, bv := a.State == StateViolated, b.State == StateViolated
		if av != bv {
			if av {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Error, a.Error), cmp.Compare(a.ID, b.ID))
	})
	limit := cmp.Or(m.MaxErrorSeries, defaultMaxErrorSeries)

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exported == nil {
		m.exported = make(map[string]map[string]bool)
	}
	prev, seen := m.exported[stream]
	if !seen {
		// First update of stream through this Metrics: another Metrics
		// sharing the collectors (an earlier monitor on the same registry)
		// may have left series behind that prev cannot name.
		m.depError.DeletePartialMatch(prometheus.Labels{"stream": stream})
		m.depViolated.DeletePartialMatch(prometheus.Labels{"stream": stream})
		m.depCause.DeletePartialMatch(prometheus.Labels{"stream": stream})
	}
	next := make(map[string]bool, min(len(errs), limit))
	for i, e := range errs {
		if i >= limit {
			break
		}
		// A dependency never observed has no error to show; it cannot be
		// violated either (that takes observations), so skipping it keeps
		// the two families' label sets equal for rules that join them.
		if !e.Measured {
			continue
		}
		m.depError.WithLabelValues(stream, e.Text).Set(e.Error)
		violated := 0.0
		if e.State == StateViolated {
			violated = 1
		} else if prev[e.Text] {
			m.depCause.DeletePartialMatch(prometheus.Labels{"stream": stream, "dependency": e.Text})
		}
		m.depViolated.WithLabelValues(stream, e.Text).Set(violated)
		next[e.Text] = true
	}
	for dep := range prev {
		if !next[dep] {
			m.depError.DeleteLabelValues(stream, dep)
			m.depViolated.DeleteLabelValues(stream, dep)
			m.depCause.DeletePartialMatch(prometheus.Labels{"stream": stream, "dependency": dep})
		}
	}
	m.exported[stream] = next
}

// currentMargin returns the hysteresis margin of t's last window (the
// configured one unless AutoMargin; 0 for a zero Tracker).
func (t *Tracker) currentMargin() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if math.IsNaN(t.cfg.Margin) {
		return 0
	}
	if t.cfg.Margin < 0 {
		return t.lastMargin
	}
	return t.cfg.Margin
}
