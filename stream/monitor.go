package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/balance"
	"github.com/odwatch/odwatch/stream/internal/deliver"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/odwatch/odwatch/stream/internal/history"
	"github.com/odwatch/odwatch/stream/internal/metrics"
	"github.com/odwatch/odwatch/stream/internal/takeover"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// Options are the runtime dependencies of a Monitor.
type Options struct {
	// Logger receives the pipeline's logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the pipeline's, the store's and the alerts'
	// collectors; nil means a private registry (metrics not exported).
	Registerer prometheus.Registerer
	// Sinks receive events in addition to the log and the configured Kafka
	// topic and webhook (e.g. the demo's terminal writer).
	Sinks []alerts.Sink
}

// Monitor runs the streaming pipeline of docs/DESIGN.md "Data flow" for the
// configured streams: one consumer-group reader, a Pebble-backed window per
// stream, an evaluator goroutine per stream, the sinks and the metrics.
type Monitor struct {
	cfg     Config
	log     *slog.Logger
	store   *state.Store
	metrics *metrics.Metrics
	streams []*streamRun
	byTopic map[string][]*streamRun
	sinks   []deliver.Sink
	dlq     *kafka.Writer
	// stateWriter publishes tracker states to cfg.StateTopic (nil when
	// unset).
	stateWriter *kafka.Writer
	// writers is the transport of the events, state topic and dead-letter
	// writers (see kafkaread.Transport), closed after them.
	writers *kafka.Transport
	// balancer assigns topics to the group's members (when this member
	// leads the group) and tells the leader what this member owns.
	balancer *balance.Balancer
	// health tracks whether Kafka answers (readiness, outage metric).
	health *fetch.Health
	// owned are the topics of the current generation (consume goroutine).
	owned map[string]bool
	// hooks are the test hooks (nil in production).
	hooks *hooks

	// status is the last evaluation of every stream, for the status page
	// (status.go).
	status history.Board

	joined atomic.Bool // the consumer is in a generation of its group
	// life orders Run and Close (lifecycle.go).
	life *lifecycle
}

// NewMonitor validates cfg, opens the state store (its errors surface
// verbatim, with the path; see Config.RebuildState), builds the decoders and
// sinks and registers the metrics. Run starts the pipeline.
//
// The Monitor owns everything NewMonitor opened (the store and its
// directory lock, the sinks, including Options.Sinks, the writers and the
// metrics): Run releases it when it returns, and Close releases it when Run
// is never called (an error between NewMonitor and Run). Both are
// idempotent, so `defer m.Close()` right after NewMonitor is always right.
// On error NewMonitor itself leaves nothing open.
func NewMonitor(cfg Config, opts Options) (*Monitor, error) {
	cfg.Streams = slices.Clone(cfg.Streams) // Validate fills defaults in place
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Monitor{cfg: cfg, log: log, byTopic: map[string][]*streamRun{}, life: newLifecycle(),
		balancer: balance.New(), health: fetch.NewHealth(log), owned: map[string]bool{}}
	met, err := metrics.New(reg, cfg.MaxDependencyMetrics, m.health)
	if err != nil {
		return nil, err
	}
	m.metrics = met
	for i := range cfg.Streams {
		s, err := newStreamRun(m, cfg.Streams[i])
		if err != nil {
			met.Unregister()
			return nil, fmt.Errorf("streams[%d]: %w", i, err)
		}
		m.streams = append(m.streams, s)
		m.byTopic[s.cfg.Topic] = append(m.byTopic[s.cfg.Topic], s)
	}
	store, err := openStore(cfg, log, reg)
	if err != nil {
		met.Unregister()
		return nil, err
	}
	m.store = store

	m.sinks = append(m.sinks, deliver.Sink{Name: "log", Sink: alerts.NewLogSink(log)})
	m.writers = kafkaread.Transport(cfg.Dialer)
	if cfg.EventsTopic != "" {
		w := alerts.NewKafkaWriter(cfg.Brokers, cfg.EventsTopic)
		w.AllowAutoTopicCreation = true
		w.Transport = m.writers
		var opts []alerts.KafkaOption
		if cfg.EventsRegistry != "" {
			opts = append(opts, alerts.KafkaSchemaRegistry(cfg.EventsRegistry, cfg.EventsTopic+"-value"))
		}
		m.sinks = append(m.sinks, deliver.Sink{Name: "kafka", Sink: alerts.NewKafkaSink(w, "", opts...)})
	}
	if cfg.WebhookURL != "" {
		// Few retries within a send: a send blocks the stream's evaluator,
		// and the outbox retries on a timer anyway.
		m.sinks = append(m.sinks, deliver.Sink{Name: "webhook", Sink: alerts.NewWebhookSink(cfg.WebhookURL, alerts.WebhookOptions{Logger: log, Retries: 2})})
	}
	for i, s := range opts.Sinks {
		m.sinks = append(m.sinks, deliver.Sink{Name: fmt.Sprintf("extra%d", i), Sink: s})
	}
	if cfg.StateTopic != "" {
		m.stateWriter = takeover.NewStateWriter(cfg.Brokers, cfg.StateTopic, m.writers)
	}
	if cfg.DLQTopic != "" {
		m.dlq = &kafka.Writer{
			Addr:                   kafka.TCP(cfg.Brokers...),
			Topic:                  cfg.DLQTopic,
			Balancer:               &kafka.Hash{},
			RequiredAcks:           kafka.RequireAll,
			BatchTimeout:           10 * time.Millisecond,
			BatchBytes:             kafkaread.MaxMessageBytes,
			AllowAutoTopicCreation: true,
			Transport:              m.writers,
		}
	}
	return m, nil
}

// openStore opens the state store; with cfg.RebuildState a damaged one is
// set aside first and a fresh one opened in its place.
func openStore(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*state.Store, error) {
	opts := state.Options{Logger: log, Registerer: reg}
	store, err := state.Open(cfg.StateDir, opts)
	if err == nil || !cfg.RebuildState || !errors.Is(err, state.ErrCorrupt) {
		return store, err
	}
	aside, serr := state.SetAside(cfg.StateDir, time.Now())
	if serr != nil {
		return nil, fmt.Errorf("%w; --rebuild-state could not set it aside: %w", err, serr)
	}
	deps := "the tracked dependencies from the state topic " + cfg.StateTopic
	if cfg.StateTopic == "" {
		deps = "the dependencies by discovery (no state topic)"
	}
	log.Warn("state store is damaged: moved aside (kept), rebuilding the windows from Kafka and "+deps,
		"state_dir", cfg.StateDir, "moved_to", aside, "damage", err.Error())
	return state.Open(cfg.StateDir, opts)
}

// Ready reports whether Run runs (the store is open), the consumer is in
// a generation of its group (it received its assignment and rebuilt the
// windows it took over) and Kafka answers (the /readyz condition).
func (m *Monitor) Ready() bool {
	return m.life.is(phaseRunning) && m.joined.Load() && m.health.Reachable()
}

// Run restores every stream from the store (window, position, tracker),
// delivers the events left in the outbox, then consumes and evaluates until
// ctx is done (it returns nil) or a fatal error (store failure, broker
// unreachable for good). Run closes the store, sinks and writers on return;
// a Monitor runs once.
func (m *Monitor) Run(ctx context.Context) (err error) {
	if err := m.life.start(); err != nil {
		return err
	}
	// A Close meanwhile waits until everything is released.
	defer func() {
		if cerr := m.life.stop(m.closeAll); err == nil {
			err = cerr
		}
	}()
	for _, s := range m.streams {
		if err := s.restore(ctx); err != nil {
			return err
		}
	}
	if err := m.dedupeFromEventsTopic(ctx); err != nil {
		// Not fatal: at worst an event sent just before a crash is sent
		// again; consumers deduplicate by ce_id.
		m.log.Warn("could not read the events topic to skip events already sent", "topic", m.cfg.EventsTopic, "err", err)
	}
	for _, s := range m.streams {
		if err := s.eval.outbox().Deliver(ctx); err != nil {
			return err
		}
	}

	return m.runGoroutines(ctx)
}

// runGoroutines runs the consumer, every stream's evaluator and the
// store's watch until ctx is done or one of them fails, which stops the
// others; it returns the first failure.
func (m *Monitor) runGoroutines(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	// A damaged store found by a background job (a compaction) ends the
	// run even while no record comes.
	g.Go(func() error {
		select {
		case <-m.store.Failed():
			return m.store.Err()
		case <-gctx.Done():
			return nil
		}
	})
	for _, s := range m.streams {
		g.Go(func() error {
			if err := s.eval.run(gctx); err != nil && gctx.Err() == nil {
				return err
			}
			return nil
		})
		s.replayMissedEvaluation()
	}
	g.Go(func() error {
		defer cancel() // the consumer's end is the run's
		return m.consume(gctx)
	})
	return g.Wait()
}

// Close releases everything NewMonitor opened, for a Monitor whose Run was
// never called; after Run it is a no-op, since Run released it all. Close
// waits for a Run in progress to return (cancel its context first). It is
// idempotent and returns the first release's error each time.
func (m *Monitor) Close() error {
	return m.life.close(m.closeAll)
}

// closeAll releases everything NewMonitor opened (once: lifecycle).
func (m *Monitor) closeAll() error {
	var errs []error
	for _, s := range m.sinks {
		if err := s.Sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close sink %s: %w", s.Name, err))
		}
	}
	if m.dlq != nil {
		if err := m.dlq.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close dead-letter writer: %w", err))
		}
	}
	if m.stateWriter != nil {
		if err := m.stateWriter.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close state topic writer: %w", err))
		}
	}
	if m.writers != nil {
		m.writers.CloseIdleConnections()
	}
	if err := m.store.Close(); err != nil {
		errs = append(errs, err)
	}
	m.metrics.Unregister()
	return errors.Join(errs...)
}

// topics are the distinct topics of the configured streams, sorted.
func (m *Monitor) topics() []string {
	var ts []string
	for t := range m.byTopic {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// dedupeFromEventsTopic marks delivered for the Kafka sink the outbox
// events already on the events topic (deliver.DedupeFromTopic).
func (m *Monitor) dedupeFromEventsTopic(ctx context.Context) error {
	if m.cfg.EventsTopic == "" {
		return nil
	}
	names := make([]string, len(m.streams))
	for i, s := range m.streams {
		names[i] = s.name
	}
	return deliver.DedupeFromTopic(ctx, m.store, names, m.cfg.Brokers, m.cfg.Dialer, m.cfg.EventsTopic, m.log)
}
