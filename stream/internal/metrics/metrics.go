// Package metrics holds the stream's Prometheus collectors: one Metrics per
// monitor, registered by New when the monitor is built and removed by
// Unregister when it is released.
//
// Who touches it: every goroutine of every stream (the consumer, the
// evaluators, the discoverers, the historians) updates its collectors, by
// label; the collectors are safe for concurrent use and Metrics' fields are
// set once, in New, before any goroutine starts, and never written again.
// The monitor alone calls Unregister, once its goroutines are done.
//
// It is a package of its own because the metric names, help texts and
// buckets are a contract with dashboards and alert rules, read in one
// place, and no goroutine's state lives in it: stream decides when a
// series moves, this package only what the series are.
package metrics

import (
	"fmt"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the streaming pipeline. Every series carries a `stream` label
// (StreamConfig.Name). Registered by New:
//
//	odwatch_records_consumed_total{stream}             counter   records fetched from Kafka (accepted, rejected and already-stored redeliveries)
//	odwatch_records_rejected_total{stream,reason}      counter   undecodable records by reason (malformed_json, not_object, bad_avro, unknown_schema, registry_unavailable, too_large, too_many_fields)
//	odwatch_dlq_records_total{stream}                  counter   rejected records written to the dead-letter topic
//	odwatch_window_records{stream}                     gauge     records in the window
//	odwatch_window_columns{stream}                     gauge     columns in the window (bounded, see Window.SetMaxColumns)
//	odwatch_fields_dropped_total{stream}               counter   non-NULL fields not stored because the window had its maximum of columns
//	odwatch_decode_retries_total{stream}               counter   decode attempts retried because the Schema Registry was unreachable (the pipeline waits, it does not dead-letter)
//	odwatch_evaluation_duration_seconds{stream}        histogram time of one evaluation (encode, re-validation, discovery, persist)
//	odwatch_evaluations_total{stream,result}           counter   evaluations by result: ok, error, skipped (a due evaluation coalesced into a later one because the previous one was still running)
//	odwatch_discovery_duration_seconds{stream}         histogram time of one discovery on its own goroutine (two cadences: discover-every above every; the checks are evaluations)
//	odwatch_discoveries_total{stream,result}           counter   discoveries on their own goroutine: ok, waited (consumption waited for one to end before the check that merges it), late (merged after its merge point; after a restart)
//	odwatch_epsilon{stream}                            gauge     the stream's epsilon, for alert rules comparing with odwatch_dependency_error
//	odwatch_consumer_lag{stream}                       gauge     records behind the partitions' high watermarks (sum over partitions, as of the last fetch)
//	odwatch_last_evaluation_timestamp_seconds{stream}  gauge     unix time of the last successful evaluation
//	odwatch_state_publish_errors_total{stream}         counter   tracker states not written to Config.StateTopic (the local store has them; the next evaluation publishes again)
//	odwatch_status_samples_skipped_total{stream}       counter   evaluations appended to the status history without the samples of their events' related rules, because the history's worker was behind
//	odwatch_kafka_unreachable_seconds_total            counter   time Kafka did not answer (fetches or the consumer group failing; retried with backoff, /readyz 503 meanwhile)
//	odwatch_kafka_reachable                            gauge     1 while Kafka answers, 0 during an outage
//
// Registered through package alerts (alerts.NewMetrics), updated by the
// pipeline after every evaluation:
//
//	odwatch_events_total{stream,type}                  counter   events produced (violated, restored, discovered, retired)
//	odwatch_sink_errors_total{stream,sink}             counter   failed sends per sink (log, kafka, webhook, extra<i>); the events stay in the outbox and are retried
//	odwatch_events_dropped_total{stream,sink}          counter   events a sink refused for good (webhook 4xx, Kafka message too large/invalid); logged at ERROR and not retried
//	odwatch_dependencies{stream,state}                 gauge     tracked dependencies: holding, violated (partition the set), pinned
//	odwatch_dependency_error{stream,dependency}        gauge     last measured error of a tracked dependency, label = text form
//	                                                             ("{}: salary ~ tax (asc)"); at most Config.MaxDependencyMetrics series
//	                                                             per stream (default 200): violated first, then highest error; the
//	                                                             series of dropped or retired dependencies are deleted
//
// The state store adds the odwatch_pebble_* and odwatch_state_* metrics
// (package state).
type Metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector
	Alerts     *alerts.Metrics

	Consumed           *prometheus.CounterVec
	Rejected           *prometheus.CounterVec
	DLQ                *prometheus.CounterVec
	WindowRecords      *prometheus.GaugeVec
	WindowColumns      *prometheus.GaugeVec
	FieldsDropped      *prometheus.CounterVec
	DecodeRetries      *prometheus.CounterVec
	EvalDuration       *prometheus.HistogramVec
	Evaluations        *prometheus.CounterVec
	DiscDuration       *prometheus.HistogramVec
	Discoveries        *prometheus.CounterVec
	Epsilon            *prometheus.GaugeVec
	Lag                *prometheus.GaugeVec
	LastEval           *prometheus.GaugeVec
	StatePublishErrors *prometheus.CounterVec
	// StatusSamplesSkipped: evaluations whose related samples the status
	// history skipped, its historian being behind.
	StatusSamplesSkipped *prometheus.CounterVec
}

// New registers the collectors on reg (undone if one fails), and the
// alerts collectors with at most maxDependencyMetrics error series per
// stream; health answers the Kafka reachability series.
func New(reg prometheus.Registerer, maxDependencyMetrics int, health *fetch.Health) (*Metrics, error) {
	m := &Metrics{reg: reg}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"stream"}, labels...))
		m.collectors = append(m.collectors, c)
		return c
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"stream"})
		m.collectors = append(m.collectors, g)
		return g
	}
	m.Consumed = counter("odwatch_records_consumed_total", "Records fetched from Kafka.")
	m.Rejected = counter("odwatch_records_rejected_total", "Undecodable records, by reason.", "reason")
	m.DLQ = counter("odwatch_dlq_records_total", "Rejected records written to the dead-letter topic.")
	m.WindowRecords = gauge("odwatch_window_records", "Records in the window.")
	m.WindowColumns = gauge("odwatch_window_columns", "Columns in the window.")
	m.FieldsDropped = counter("odwatch_fields_dropped_total", "Fields not stored because the window had its maximum of columns.")
	m.DecodeRetries = counter("odwatch_decode_retries_total", "Decodes retried because the Schema Registry was unreachable.")
	m.EvalDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "odwatch_evaluation_duration_seconds",
		Help:    "Duration of one window evaluation (encode, re-validation, discovery, persist).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"stream"})
	m.collectors = append(m.collectors, m.EvalDuration)
	m.Evaluations = counter("odwatch_evaluations_total", "Window evaluations, by result (ok, error, skipped).", "result")
	m.DiscDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "odwatch_discovery_duration_seconds",
		Help:    "Duration of one discovery on its own goroutine (two cadences).",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"stream"})
	m.collectors = append(m.collectors, m.DiscDuration)
	m.Discoveries = counter("odwatch_discoveries_total", "Discoveries on their own goroutine, by result (ok, waited, late).", "result")
	m.Epsilon = gauge("odwatch_epsilon", "Epsilon of the stream.")
	m.Lag = gauge("odwatch_consumer_lag", "Records behind the high watermark, summed over partitions.")
	m.StatePublishErrors = counter("odwatch_state_publish_errors_total", "Tracker states that could not be written to the state topic.")
	m.StatusSamplesSkipped = counter("odwatch_status_samples_skipped_total", "Evaluations whose related rules' samples the status history skipped, its worker being behind.")
	m.LastEval = gauge("odwatch_last_evaluation_timestamp_seconds", "Unix time of the last successful evaluation.")
	m.collectors = append(m.collectors,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "odwatch_kafka_unreachable_seconds_total",
			Help: "Time Kafka did not answer the consumer (retried with backoff meanwhile).",
		}, health.UnreachableSeconds),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "odwatch_kafka_reachable",
			Help: "1 while Kafka answers the consumer, 0 during an outage.",
		}, func() float64 {
			if health.Reachable() {
				return 1
			}
			return 0
		}))
	for i, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			for _, r := range m.collectors[:i] {
				reg.Unregister(r)
			}
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	m.Alerts = alerts.NewMetrics(reg)
	m.Alerts.MaxErrorSeries = maxDependencyMetrics
	return m, nil
}

// Unregister removes the collectors New registered (the alerts
// collectors stay: alerts.NewMetrics reuses them on the next registration).
func (m *Metrics) Unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
