package alerts

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxErrorSeries caps the odwatch_dependency_error series per stream.
const DefaultMaxErrorSeries = 200

// Metrics holds the collectors of package alerts:
//
//	odwatch_events_total{stream,type}             counter, events emitted
//	odwatch_sink_errors_total{stream,sink}        counter, failed Sends per sink
//	odwatch_dependencies{stream,state}            gauge, tracked dependencies by state (see Tracker.States)
//	odwatch_dependency_error{stream,dependency}   gauge, last error per tracked dependency (text form),
//	                                              at most MaxErrorSeries per stream: violated first, then highest error
type Metrics struct {
	events       *prometheus.CounterVec
	sinkErrors   *prometheus.CounterVec
	dependencies *prometheus.GaugeVec
	depError     *prometheus.GaugeVec
	// MaxErrorSeries caps odwatch_dependency_error per stream; 0 means
	// DefaultMaxErrorSeries.
	MaxErrorSeries int
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered). A collector already registered with the same description is
// reused, so two streams may share a registry.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odwatch_events_total", Help: "Dependency-change events emitted, by type.",
		}, []string{"stream", "type"}),
		sinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "odwatch_sink_errors_total", Help: "Failed event deliveries, by sink.",
		}, []string{"stream", "sink"}),
		dependencies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_dependencies", Help: "Tracked dependencies by state (holding and violated partition them; pinned counts pinned ones again).",
		}, []string{"stream", "state"}),
		depError: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "odwatch_dependency_error", Help: "Last measured error (removals / window records) of a tracked dependency; capped per stream.",
		}, []string{"stream", "dependency"}),
	}
	if reg != nil {
		m.events = register(reg, m.events)
		m.sinkErrors = register(reg, m.sinkErrors)
		m.dependencies = register(reg, m.dependencies)
		m.depError = register(reg, m.depError)
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

// Observe counts emitted events.
func (m *Metrics) Observe(events []Event) {
	for _, e := range events {
		m.events.WithLabelValues(e.Stream, string(e.Type)).Inc()
	}
}

// SinkError counts one failed delivery to the named sink.
func (m *Metrics) SinkError(stream, sink string) {
	m.sinkErrors.WithLabelValues(stream, sink).Inc()
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

// UpdateTracker sets odwatch_dependencies and odwatch_dependency_error of
// stream from t, replacing the stream's previous dependency series (so that
// retired dependencies disappear).
func (m *Metrics) UpdateTracker(stream string, t *Tracker) {
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
	limit := cmp.Or(m.MaxErrorSeries, DefaultMaxErrorSeries)
	m.depError.DeletePartialMatch(prometheus.Labels{"stream": stream})
	for i, e := range errs {
		if i >= limit {
			break
		}
		if e.Measured {
			m.depError.WithLabelValues(stream, e.Text).Set(e.Error)
		}
	}
}
