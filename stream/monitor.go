// Package stream owns odwatch's streaming pipeline: consuming Kafka topics
// with a consumer group (kafka-go, at-least-once, offsets committed only
// after the records are synced to the state store), decoding and flattening
// records (JSON, Avro, Confluent wire format) into a columnar window mirror,
// scheduling evaluations (re-validation of tracked dependencies and full
// discovery) off the consume path, and handing the results to package
// alerts for events, delivered through a persistent outbox. It also holds
// the in-process broker and the payroll generator of the demo and tests.
//
// # Delivery guarantees
//
// A batch of records is applied to the store (records, next offsets, next
// arrival sequence, evictions) in one synced commit before its offsets are
// committed to Kafka; a redelivered record (offset below the stored next
// offset) is skipped, so a crash neither loses nor double-counts records.
// The sync of one batch runs while the next one fills, and synced offsets
// are committed at most every 100 ms and when a generation ends, on a
// goroutine of their own (commit.go): one commit in flight, the newest
// synced offsets winning, a failed one retried with the newest, so that a
// commit that hangs (on a broker connection an outage left hung, until
// kafka-go's request timeout closes it) stalls neither consumption nor
// evaluation; a generation ends only once its last commit completed or
// failed. An evaluation's own synced commit comes after the records it
// evaluated in the store's log, so what it saves is never durable before
// them.
// Arrival sequence numbers are persisted, so evaluations happen at the same
// window ends after a restart, and event ids (hash of stream, dependency,
// window end, type) repeat instead of multiplying. The records of a count
// window handed to the evaluator stay in the store until its evaluation is
// saved, so that a restart rebuilds and replays the last one a crash
// interrupted. With two cadences (cadence.go), the records of the window a
// discovery started on stay until the check that merges its result is
// saved; a restart runs again every check after the last saved one (each
// on its own, none coalesced) and every discovery not merged yet, and the
// check that merges a re-run discovery waits for it: a crash anywhere
// between a check and a merge (discovery running, or done and waiting)
// gives the events and ids of an uninterrupted run, none twice, provided
// the uninterrupted run skipped no check (coalesced under load) and merged
// no discovery late. Only the errors an event carries may differ: after a
// restart every count is exact at the first check, where the uninterrupted
// run may have kept the last exact count of a dependency whose verdict
// could not change (incremental.Engine's skip). An evaluation saves the
// tracker state and its events in one synced commit, then sends them to
// every sink and marks each sink's delivery; what a sink failed to take is
// sent again on a timer (5 s, doubling up to a minute), after the next
// evaluation, and on restart. An event carries the sample of its own
// rule's violating records, taken before the save; the samples of its
// related rules, which only the status history keeps, are taken after the
// delivery, on copies of the window's columns they mention, and the
// history is appended, by the stream's historian (historian.go): a
// goroutine of its own that runs them one evaluation at a time in window
// order, so that the next evaluation never waits for them. It is display
// data, unsynced: a crash between the save and that append leaves the
// window out of the history, since a saved evaluation is not run again (a
// clean stop still appends what is queued, skipping the related samples not
// taken yet). When the historian is behind by two evaluations with related
// samples, the next ones' are skipped (odwatch_status_samples_skipped_total);
// their rules' points and events are still appended.
// Delivery markers are kept for a week. For the Kafka events sink the gap
// between a send and its mark is closed on start by reading the tail of
// the events topic and marking the ids found there (ce_id header), so no
// event id reaches the topic twice.
//
// # Scale-out and takeover
//
// Membership is kafka-go's consumer group API (kafka.NewConsumerGroup):
// every generation brings this member's assignment, and the consume loop
// runs inside it. The group balancer (topicBalancer) gives all partitions of
// a topic to one member, since a window needs the whole stream, keeps
// topics where they are across rebalances and spreads them over the
// members by load. When a generation assigns a topic whose partitions the
// group consumed past this member's store (a takeover, or a lost state
// dir), or for none of which the store holds a position (a fresh member,
// or a window it dropped; the group may have committed nothing yet), the
// member rebuilds the whole window before fetching anything new:
// the last Window records across partitions up to the group's committed
// offsets (for a time window, only the records of the last Interval: each
// partition is read from its first offset at or after the newest record
// time minus Interval, looked up by timestamp), in the window's order
// (record time, partition, offset). With
// Config.StateTopic set, every evaluation also publishes the stream's
// tracker state there (a compacted topic, key = stream name), and such a
// member, when the topic holds a newer tracker state than its own store (a
// fresh instance has none), restores the tracker from it; either way it
// continues the arrival sequence numbers where the previous owner's count
// stands at the committed offsets (the state record's, less the records it
// counted past them: an owner killed after publishing an evaluation and
// before the offsets of its records were committed): the tracked
// dependencies keep their state, no discovered event is repeated, and
// evaluations fall at the window ends of an uninterrupted member.
// Without a state topic the tracker starts empty and the dependencies are
// rediscovered on the member's first window. A member that loses a topic
// in a rebalance drops the stream's window (memory and store, its
// positions with it) so that it never evaluates a stale one, nor goes on
// from those positions with an empty window after a restart, and so does
// a member whose stored position is behind the group's committed offset
// (it restarted on an old state dir, or got the topic back): both then
// take over as above. What it dispatched for the dropped window goes with
// it: the queued evaluations, checks and discoveries are forgotten, a
// running discovery is stopped, and an evaluation or check running is not
// saved, so that once the window is dropped none of its events is stored
// or delivered by this member (the new owner raises them, with the same
// ids), and a check after the topic comes back starts the checker over
// (streamRun.drop). A clean stop commits and leaves the group at once;
// a crashed member's topics move after Config.SessionTimeout.
//
// # Broker outages
//
// Broker errors (timeouts, refused or reset connections, a coordinator or
// leader that moved, a broker restarting) are retried with capped
// exponential backoff; meanwhile Ready is false and
// odwatch_kafka_unreachable_seconds_total grows, and the log says so once
// per backoff step. Consumption resumes from the stored positions, which are
// never behind the committed offsets, so nothing is lost or counted twice.
// Only a permanent authorization failure ends Run.
//
// # A damaged store
//
// A store that is damaged (state.ErrCorrupt) fails NewMonitor, or ends Run
// when a read or a background compaction finds the damage later
// (state.Store.Failed); it is never used further. With
// Config.RebuildState, NewMonitor sets it aside and opens a fresh store,
// which holds no position: every partition is then taken over as above
// (window read back from Kafka, tracker from the state topic).
package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
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

// namedSink is a sink with the name its delivery markers and error metric
// use.
type namedSink struct {
	name string
	sink alerts.Sink
}

// Monitor runs the streaming pipeline of docs/DESIGN.md "Data flow" for the
// configured streams: one consumer-group reader, a Pebble-backed window per
// stream, an evaluator goroutine per stream, the sinks and the metrics.
type Monitor struct {
	cfg     Config
	log     *slog.Logger
	store   *state.Store
	metrics *metrics
	streams []*streamRun
	byTopic map[string][]*streamRun
	sinks   []namedSink
	dlq     *kafka.Writer
	// stateWriter publishes tracker states to cfg.StateTopic (nil when
	// unset).
	stateWriter *kafka.Writer
	// writers is the transport of the events, state topic and dead-letter
	// writers (see ownTransport), closed after them.
	writers *kafka.Transport
	// balancer assigns topics to the group's members (when this member
	// leads the group) and tells the leader what this member owns.
	balancer *topicBalancer
	// health tracks whether Kafka answers (readiness, outage metric).
	health *brokerHealth
	// owned are the topics of the current generation (consume goroutine).
	owned map[string]bool
	// retryBase is the first wait before delivering again events a sink
	// failed to take (defaultRetryBase when 0; tests shorten it).
	retryBase time.Duration
	// commitVia, when set (tests), stands between a generation and its
	// offset commits.
	commitVia func(*kafka.Generation) offsetCommitter

	// status is the last evaluation of every stream, for the status page
	// (status.go).
	status statusBoard

	joined    atomic.Bool // the consumer is in a generation of its group
	storeOpen atomic.Bool
	running   atomic.Bool
	// closeMu orders Close against Run: Run holds it for reading while it
	// runs, so Close returns after Run released everything; ran says Run
	// was called.
	closeMu   sync.RWMutex
	ran       bool
	closeOnce sync.Once
	closeErr  error
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
	m := &Monitor{cfg: cfg, log: log, byTopic: map[string][]*streamRun{},
		balancer: newTopicBalancer(), health: newBrokerHealth(log), owned: map[string]bool{}}
	met, err := newMetrics(reg, cfg.MaxDependencyMetrics, m.health)
	if err != nil {
		return nil, err
	}
	m.metrics = met
	for i := range cfg.Streams {
		s, err := newStreamRun(m, cfg.Streams[i])
		if err != nil {
			met.unregister()
			return nil, fmt.Errorf("streams[%d]: %w", i, err)
		}
		m.streams = append(m.streams, s)
		m.byTopic[s.cfg.Topic] = append(m.byTopic[s.cfg.Topic], s)
	}
	store, err := openStore(cfg, log, reg)
	if err != nil {
		met.unregister()
		return nil, err
	}
	m.store = store
	m.storeOpen.Store(true)

	m.sinks = append(m.sinks, namedSink{"log", alerts.NewLogSink(log)})
	m.writers = ownTransport(cfg.Dialer)
	if cfg.EventsTopic != "" {
		w := alerts.NewKafkaWriter(cfg.Brokers, cfg.EventsTopic)
		w.AllowAutoTopicCreation = true
		w.Transport = m.writers
		var opts []alerts.KafkaOption
		if cfg.EventsRegistry != "" {
			opts = append(opts, alerts.KafkaSchemaRegistry(cfg.EventsRegistry, cfg.EventsTopic+"-value"))
		}
		m.sinks = append(m.sinks, namedSink{"kafka", alerts.NewKafkaSink(w, "", opts...)})
	}
	if cfg.WebhookURL != "" {
		// Few retries within a send: a send blocks the stream's evaluator,
		// and the outbox retries on a timer anyway.
		m.sinks = append(m.sinks, namedSink{"webhook", alerts.NewWebhookSink(cfg.WebhookURL, alerts.WebhookOptions{Logger: log, Retries: 2})})
	}
	for i, s := range opts.Sinks {
		m.sinks = append(m.sinks, namedSink{fmt.Sprintf("extra%d", i), s})
	}
	if cfg.StateTopic != "" {
		m.stateWriter = newStateWriter(cfg, m.writers)
	}
	if cfg.DLQTopic != "" {
		m.dlq = &kafka.Writer{
			Addr:                   kafka.TCP(cfg.Brokers...),
			Topic:                  cfg.DLQTopic,
			Balancer:               &kafka.Hash{},
			RequiredAcks:           kafka.RequireAll,
			BatchTimeout:           10 * time.Millisecond,
			BatchBytes:             BrokerMaxMessageBytes,
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

// Ready reports whether the store is open, the consumer is in a generation
// of its group (it received its assignment and rebuilt the windows it took
// over) and Kafka answers (the /readyz condition).
func (m *Monitor) Ready() bool {
	return m.storeOpen.Load() && m.joined.Load() && m.running.Load() && m.health.reachable()
}

// Run restores every stream from the store (window, position, tracker),
// delivers the events left in the outbox, then consumes and evaluates until
// ctx is done (it returns nil) or a fatal error (store failure, broker
// unreachable for good). Run closes the store, sinks and writers on return;
// a Monitor runs once.
func (m *Monitor) Run(ctx context.Context) (err error) {
	m.closeMu.Lock()
	switch {
	case m.ran:
		m.closeMu.Unlock()
		return errors.New("monitor: Run called twice")
	case !m.storeOpen.Load():
		m.closeMu.Unlock()
		return errors.New("monitor: Run after Close")
	}
	m.ran = true
	m.running.Store(true)
	m.closeMu.Unlock()
	// A Close meanwhile waits until everything is released.
	m.closeMu.RLock()
	defer m.closeMu.RUnlock()
	defer func() {
		m.running.Store(false)
		if cerr := m.release(); err == nil {
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
		if err := s.deliver(ctx); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		fatalMu  sync.Mutex
		fatalErr error
	)
	fail := func(err error) {
		fatalMu.Lock()
		if fatalErr == nil {
			fatalErr = err
		}
		fatalMu.Unlock()
		cancel()
	}
	// A damaged store found by a background job (a compaction) ends the
	// run even while no record comes.
	wg.Go(func() {
		select {
		case <-m.store.Failed():
			fail(m.store.Err())
		case <-ctx.Done():
		}
	})
	for _, s := range m.streams {
		wg.Go(func() {
			if err := s.evaluator(ctx); err != nil && ctx.Err() == nil {
				fail(err)
			}
		})
		s.replayMissedEvaluation()
	}
	if err := m.consume(ctx); err != nil {
		fail(err)
	}
	cancel()
	wg.Wait()
	fatalMu.Lock()
	defer fatalMu.Unlock()
	return fatalErr
}

// Close releases everything NewMonitor opened, for a Monitor whose Run was
// never called; after Run it is a no-op, since Run released it all. Close
// waits for a Run in progress to return (cancel its context first). It is
// idempotent and returns the first release's error each time.
func (m *Monitor) Close() error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	if m.ran {
		return nil
	}
	return m.release()
}

// release releases everything NewMonitor opened, once.
func (m *Monitor) release() error {
	m.closeOnce.Do(func() {
		m.closeErr = m.closeAll()
	})
	return m.closeErr
}

func (m *Monitor) closeAll() error {
	var errs []error
	for _, s := range m.sinks {
		if err := s.sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close sink %s: %w", s.name, err))
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
	m.storeOpen.Store(false)
	if err := m.store.Close(); err != nil {
		errs = append(errs, err)
	}
	m.metrics.unregister()
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
