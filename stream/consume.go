package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/internal/backoff"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/deadletter"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/odwatch/odwatch/stream/window"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// Batching of the consume loop: a batch (one synced Pebble commit per
// stream, then one offset commit) closes after maxBatch messages, after
// maxBatchWait, or at an evaluation boundary of a stream, so that the
// snapshot of a window end is taken right after the batch that completes it.
const (
	maxBatch     = 16384
	maxBatchWait = 50 * time.Millisecond
	// mergeMaxBuffered bounds the records a merger holds back for one
	// topic (fetch.NewMerger).
	mergeMaxBuffered = 4 * maxBatch
)

// streamBase is what every owner of a stream shares (see the package
// doc, "Goroutines and their owners"): the monitor, the stream's
// configuration, name and logger, which nothing writes once NewMonitor
// returns; the mailbox through which the owners hand each other work (its
// fields say under which lock); and the stream's progress, which one
// owner writes and the others read through atomics.
type streamBase struct {
	m    *Monitor
	cfg  StreamConfig
	name string
	log  *slog.Logger
	mb   *mailbox
	progress
}

// progress is what the owners of a stream publish to each other and to
// the tests and benchmarks, each field written by one goroutine.
type progress struct {
	// handedOver: the topic went to another member and no record came
	// since (written by the consumer, read by the evaluator: publishState).
	handedOver atomic.Bool
	// evaluated is the window end of the last saved evaluation + 1
	// (written by the evaluator; the consumer reads it for the holds).
	evaluated atomic.Uint64
	// maxEval is the longest evaluation, in nanoseconds (written by the
	// evaluator; benchmarks).
	maxEval atomic.Int64
	// statusEnd is the window end of the last evaluation the status
	// history appended + 1 (written by the historian; tests).
	statusEnd atomic.Uint64
}

// streamRun is one stream as the consume goroutine owns it: the decoder,
// the window mirror, the positions, the open store batch, the windows it
// dispatched (holds, replay, the checks' cursor) and its metrics. Only
// the consume goroutine touches these fields, apart from restore, which
// runs on Run's goroutine before the consumer and the evaluator start. It
// hands windows to the evaluator through mb (under mb.mu) and reads of the
// evaluator's only progress.evaluated. eval is the stream's evaluator: Run
// starts it, restore loads its tracker before, and the status page reads
// its tracker (under the tracker's own lock); the consumer never touches
// it.
type streamRun struct {
	*streamBase
	dec decode.Decoder
	win *window.Window
	rec decode.FlatRecord

	next map[int32]int64 // next offset to consume per partition (stored + this batch)
	seq  uint64          // next arrival sequence number
	lag  map[int32]int64

	// The open batch.
	batch    []state.Record
	valueEnd []int // end of batch[i]'s value in arena
	arena    []byte
	posDirty bool
	due      bool   // an evaluation boundary was reached in this batch
	dueSeq   uint64 // its window end
	lastEval time.Time
	evalSeq  uint64 // window end of the last dispatched evaluation (+1; 0 = none)
	// holds keep in the store the records of count windows dispatched but
	// not saved yet, so that a crash before the save can replay them (see
	// replayMissedEvaluation); replay is the one found by restore.
	holds  []evictHold
	replay *evalJob
	// cursor is where the last check job left the window (two cadences).
	cursor eval.Cursor

	rejectLog deadletter.Limiter
	dropped   uint64 // DroppedFields already counted
	consumerMetrics

	eval *evaluator
}

// consumerMetrics are the stream's collectors the consumer updates.
type consumerMetrics struct {
	consumed       prometheus.Counter
	windowGauge    prometheus.Gauge
	columnsGauge   prometheus.Gauge
	droppedCounter prometheus.Counter
	lagGauge       prometheus.Gauge
}

func newStreamRun(m *Monitor, cfg StreamConfig) (*streamRun, error) {
	dec, err := decode.NewDecoder(decode.DecoderConfig{
		Format:         cfg.Format,
		Schema:         cfg.schema,
		RegistryURL:    cfg.RegistryURL,
		Include:        cfg.Include,
		Exclude:        cfg.Exclude,
		MaxRecordBytes: cfg.MaxRecordBytes,
		MaxFields:      cfg.MaxFields,
	})
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	base := &streamBase{
		m:    m,
		cfg:  cfg,
		name: cfg.Name,
		log:  m.log.With("stream", cfg.Name, "topic", cfg.Topic),
		mb:   newMailbox(),
	}
	s := &streamRun{
		streamBase: base,
		dec:        dec,
		win:        window.NewWindow(cfg.Window, cfg.Interval),
		next:       map[int32]int64{},
		lag:        map[int32]int64{},
		consumerMetrics: consumerMetrics{
			consumed:       m.metrics.Consumed.WithLabelValues(cfg.Name),
			windowGauge:    m.metrics.WindowRecords.WithLabelValues(cfg.Name),
			columnsGauge:   m.metrics.WindowColumns.WithLabelValues(cfg.Name),
			droppedCounter: m.metrics.FieldsDropped.WithLabelValues(cfg.Name),
			lagGauge:       m.metrics.Lag.WithLabelValues(cfg.Name),
		},
		eval: newEvaluator(base),
	}
	m.metrics.Epsilon.WithLabelValues(cfg.Name).Set(cfg.Epsilon)
	return s, nil
}

// restore rebuilds the window mirror, the position and the tracker from the
// store. It runs on Run's goroutine before the consumer and the evaluator
// start, so it may set the evaluator's tracker (evaluator.loadTracker).
func (s *streamRun) restore(ctx context.Context) error {
	next, nextSeq, err := s.m.store.Position(s.name)
	if err != nil {
		return fmt.Errorf("stream %s: read position: %w", s.name, err)
	}
	for p, o := range next {
		s.next[p] = o
	}
	s.seq = nextSeq

	// Window records come back in key (partition, offset) order; the
	// window needs arrival order.
	type row struct {
		meta     window.RowMeta
		from, to int
	}
	var (
		rows  []row
		arena []byte
	)
	err = s.m.store.ScanWindow(ctx, s.name, func(r state.Record) error {
		from := len(arena)
		arena = append(arena, r.Value...)
		rows = append(rows, row{window.RowMeta{Partition: r.Partition, Offset: r.Offset, Seq: r.Seq, Time: r.Time}, from, len(arena)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("stream %s: read window: %w", s.name, err)
	}
	saved, err := s.eval.loadTracker()
	if err != nil {
		return err
	}
	if saved.ok {
		s.evalSeq = saved.end + 1
	}

	// The store may hold, besides the window, the older records of a
	// window dispatched but not saved before the process stopped (holds):
	// appending in arrival order, the window passes through it.
	replayEnd, replayable := s.missedBoundary(saved)
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.meta.Seq, b.meta.Seq) })
	for _, r := range rows {
		if err := s.rec.UnmarshalBinary(arena[r.from:r.to]); err != nil {
			return fmt.Errorf("stream %s: window record %d/%d: %w", s.name, r.meta.Partition, r.meta.Offset, err)
		}
		s.win.Append(r.meta, &s.rec)
		if s.cfg.twoCadence() {
			s.restoreCadence(r.meta.Seq, saved)
			continue
		}
		if replayable && r.meta.Seq == replayEnd && s.win.Len() >= s.cfg.Window {
			s.replay = &evalJob{snap: s.win.Snapshot(), endSeq: replayEnd, bounds: s.win.EvictionBounds(), replay: true}
		}
	}
	s.windowGauge.Set(float64(s.win.Len()))
	s.dropped = s.win.DroppedFields() // counted before the restart
	s.lastEval = time.Now()
	s.log.Info("stream restored", "window_records", s.win.Len(), "next_seq", s.seq,
		"positions", fmt.Sprint(next), "tracked", saved.tracked)
	return nil
}

// missedBoundary returns the last count-window end among the stored
// records (sequence numbers below s.seq) that has no saved evaluation:
// the process stopped after committing the batch that completed the window
// but before the evaluation was saved (saved is the evaluation the store
// holds).
func (s *streamRun) missedBoundary(saved savedTracker) (uint64, bool) {
	w, e := uint64(s.cfg.Window), uint64(s.cfg.Every)
	if s.cfg.Interval > 0 || w == 0 || e == 0 || s.seq < w {
		return 0, false
	}
	end := w - 1 + (s.seq-w)/e*e
	if saved.ok && end <= saved.end {
		return 0, false
	}
	return end, true
}

// replayMissedEvaluation hands the evaluator the window of missedBoundary,
// rebuilt by restore from the records the store kept for it (holds).
// Replaying it gives the events (and ids) the lost evaluation would have
// given. When the store does not hold the whole window (a hold given up
// past maxHolds) the evaluation is skipped.
func (s *streamRun) replayMissedEvaluation() {
	if s.replay == nil {
		return
	}
	s.log.Info("replaying the evaluation lost at a window end", "window_end", s.replay.endSeq)
	s.dispatchJob(s.replay)
	s.replay = nil
}

// countBoundary reports whether the record with arrival sequence number
// seq ends a count window to evaluate: the first full window (Window
// records), then every Every records. The schedule depends on the sequence
// number alone, so a replay after a crash evaluates the same windows; the
// caller also requires the window to be full (it may not be right after a
// takeover whose read-back found fewer records), so a partial window is
// never evaluated.
func (s *streamRun) countBoundary(seq uint64) bool {
	n, w, e := seq+1, uint64(s.cfg.Window), uint64(s.cfg.Every)
	return n >= w && (n-w)%e == 0
}

// batch is the open batch of the consume loop: the next offset to commit
// per partition, the dead letters to write, and records per topic (for
// the balancer's rates); the batches flushed before it whose store commits
// are not synced yet (applied, their syncs under way, oldest first); and
// the generation's committer, which commits the offsets of synced batches
// to Kafka.
type batch struct {
	commits map[fetch.TopicPartition]int64
	dlq     []kafka.Message
	records map[string]int

	unsynced []unsyncedBatch
	offsets  *fetch.Committer
}

// unsyncedBatch is a flushed batch whose store commits are not synced yet:
// the waits for them, and its next offsets.
type unsyncedBatch struct {
	waits   []func() error
	commits map[fetch.TopicPartition]int64
}

// offsetCommitInterval spaces the consumer group's offset commits: offsets
// synced in the store are committed to Kafka at most this often (and when
// the generation ends), not once per batch. A member that crashes leaves
// the group's offsets about this far behind its store (or, while a commit
// hangs, as far as the commit's timeout), whose records come again and are
// skipped by offset.
const offsetCommitInterval = 100 * time.Millisecond

func newBatch(offsets *fetch.Committer) *batch {
	return &batch{commits: map[fetch.TopicPartition]int64{}, records: map[string]int{}, offsets: offsets}
}

// consume is the member's life in the consumer group (kafka-go's
// ConsumerGroup): each generation's assignment is applied and consumed by
// runGeneration until the generation ends (a rebalance, or the coordinator
// lost); broker errors are retried with capped exponential backoff. It
// returns nil when ctx is done, after leaving the group (so that another
// member, or this one restarted, takes over at once), or a fatal error.
func (m *Monitor) consume(ctx context.Context) error {
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                m.cfg.Group,
		Brokers:           m.cfg.Brokers,
		Dialer:            m.cfg.Dialer,
		Topics:            m.topics(),
		GroupBalancers:    []kafka.GroupBalancer{m.balancer},
		HeartbeatInterval: m.cfg.HeartbeatInterval,
		SessionTimeout:    m.cfg.SessionTimeout,
		RebalanceTimeout:  m.cfg.RebalanceTimeout,
		JoinGroupBackoff:  fetch.BackoffBase,
		// kafka-go waits Timeout + RebalanceTimeout for a join. The
		// coordinator may hold a join up to a rebalance timeout after
		// the group's last change (a member leaving, joining or timing
		// out); a join that gives up first leaves and joins again as a
		// new member, which changes the group again: two members doing
		// so kept a group from ever forming. So a join waits two
		// rebalance timeouts (other requests one). kafka-go has one
		// Timeout for every request, so a heartbeat, a commit (on the
		// committer's goroutine: consumption goes on) and the
		// LeaveGroup also wait up to RebalanceTimeout + 5 s, longer
		// than the session: a member cut off from the coordinator alone
		// (its partitions' leaders still reachable) keeps its
		// generation up to HeartbeatInterval + that after its last
		// heartbeat, while the group gives its topics away after
		// SessionTimeout. With one broker (a hung or unreachable one)
		// it fetches nothing meanwhile: /readyz is 503 from the first
		// failed fetch.
		Timeout:     m.cfg.RebalanceTimeout + 5*time.Second,
		StartOffset: kafka.FirstOffset,
		Logger:      fetch.GroupLogger{Log: m.log},
		ErrorLogger: fetch.GroupLogger{Log: m.log},
	})
	if err != nil {
		return fmt.Errorf("consumer group: %w", err)
	}
	transport := kafkaread.Transport(m.cfg.Dialer)
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(m.cfg.Brokers...), Transport: transport, Timeout: 10 * time.Second}
	joined := false // a generation was ever joined: only then is there a group to leave
	for {
		gen, err := m.nextGeneration(ctx, cg)
		if err != nil {
			if backoff.Ending(ctx) {
				m.leave(cg, joined)
				return nil
			}
			_ = cg.Close()
			return err
		}
		joined = true
		done := make(chan error, 1)
		gen.Start(func(gctx context.Context) { done <- m.runGeneration(ctx, gctx, gen, client) })
		select {
		case err := <-done:
			if err != nil {
				_ = cg.Close()
				return err
			}
		case <-ctx.Done():
			// Close ends the generation (runGeneration makes its batch
			// durable and commits it) and then leaves the group.
			m.leave(cg, true)
			return <-done
		}
	}
}

// leave closes the consumer group (ending the generation, sending
// LeaveGroup); a member that never joined says so, not that it left.
func (m *Monitor) leave(cg *kafka.ConsumerGroup, joined bool) {
	start := time.Now()
	_ = cg.Close() // always nil
	msg := map[bool]string{true: "left the consumer group", false: "stopped before joining the consumer group"}[joined]
	m.log.Info(msg, "group", m.cfg.Group, "took", time.Since(start).Round(time.Millisecond))
}

// nextGeneration waits for the next generation of the group. Group protocol
// errors (a rebalance in progress, a coordinator that moved) are retried at
// kafka-go's pace; a broker that does not answer is retried with capped
// exponential backoff and reported to m.health; only a permanent error
// (authorization) is returned.
func (m *Monitor) nextGeneration(ctx context.Context, cg *kafka.ConsumerGroup) (*kafka.Generation, error) {
	const who = "consumer group"
	b := fetch.Backoff()
	for {
		gen, err := cg.Next(ctx)
		if err == nil {
			m.health.OK(who)
			return gen, nil
		}
		if backoff.Ending(ctx) {
			return nil, cmp.Or(ctx.Err(), context.DeadlineExceeded)
		}
		if errors.Is(err, kafka.InvalidSessionTimeout) {
			return nil, fmt.Errorf("session-timeout %v: the broker refuses it (its group.min.session.timeout.ms and group.max.session.timeout.ms bound it): %w", m.cfg.SessionTimeout, err)
		}
		if fetch.PermanentError(err) {
			return nil, fmt.Errorf("consumer group %s: %w", m.cfg.Group, err)
		}
		var ke kafka.Error
		if errors.As(err, &ke) {
			m.log.Debug("consumer group: retrying", "err", err)
			continue
		}
		wait := b.Next()
		m.health.Fail(who, err, wait)
		if !backoff.Sleep(ctx, wait) {
			return nil, ctx.Err()
		}
	}
}

// runGeneration consumes one generation: it applies the assignment, takes
// over the streams whose window another member held (their windows rebuilt
// from Kafka before any new record), then fetches the assigned partitions
// and processes their records in batches until the generation ends (gctx)
// or ctx is done; the open batch is then made durable and committed before
// it returns, so that the next owner starts where this member stopped.
// When ctx is done it waits for the generation's end (consume closes the
// group), so that the commit precedes the LeaveGroup.
func (m *Monitor) runGeneration(ctx, gctx context.Context, gen *kafka.Generation, client *kafka.Client) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(gctx, cancel)()
	a := assignmentOf(gen)
	topics := slices.Sorted(maps.Keys(a))
	m.log.Info("consumer group generation", "group", m.cfg.Group, "generation", gen.ID, "member", gen.MemberID, "topics", strings.Join(topics, ","))
	if err := m.applyAssignment(a); err != nil {
		return err
	}
	m.balancer.SetOwned(topics)
	offsets := fetch.NewCommitter(m.hooks.offsetCommitter(gen), m.log.With("generation", gen.ID), offsetCommitInterval)
	defer offsets.Close()
	g := &generation{m: m, ctx: ctx, gctx: gctx, wctx: wctx, gen: gen, b: newBatch(offsets)}
	defer m.waitSyncs(g.b) // after an error; end settles them
	if err := m.takeOver(wctx, client, a); err != nil {
		if wctx.Err() != nil {
			return g.end()
		}
		return err
	}
	stopFetch := g.startFetchers(client, a)
	defer stopFetch()
	m.joined.Store(true)
	defer m.joined.Store(false)
	return g.consume()
}

// generation is the state of one generation's consumption (runGeneration):
// its open batch, its topics' mergers and the channel its partition
// fetchers send to. Only runGeneration's goroutine touches it.
type generation struct {
	m *Monitor
	// ctx is the monitor's; gctx ends with the generation; wctx ends with
	// either.
	ctx, gctx, wctx context.Context
	gen             *kafka.Generation
	b               *batch
	mergers         map[string]*fetch.Merger
	msgs            chan fetch.Fetched
}

// end makes the open batch durable and committed, then waits for the
// generation's end (so that the commit precedes the LeaveGroup).
func (g *generation) end() error {
	err := g.m.endGeneration(g.ctx, g.b)
	<-g.gctx.Done()
	return err
}

// startFetchers makes a merger per assigned topic and starts a fetcher per
// partition from its start offset; the returned func stops them and waits.
func (g *generation) startFetchers(client *kafka.Client, a assignment) (stop func()) {
	g.msgs = make(chan fetch.Fetched, fetch.QueueLen)
	fctx, stopFetch := context.WithCancel(g.wctx)
	var wg sync.WaitGroup
	g.mergers = map[string]*fetch.Merger{}
	for t, parts := range a {
		var ps []int
		for p := range parts {
			ps = append(ps, int(p))
		}
		g.mergers[t] = fetch.NewMerger(ps, mergeMaxBuffered)
	}
	for tp, off := range g.m.fetchStarts(a) {
		if committed := a[tp.Topic][int32(tp.Partition)]; off >= 0 && off > committed {
			// The store is ahead of the group (a crash between the
			// store commit and the offset commit): commit its position
			// with the first batch, or the group stays behind until a
			// new record comes.
			g.b.commits[tp] = off
		}
		wg.Go(func() {
			fetch.Fetcher{Client: client, Health: g.m.health, Log: g.m.log}.Partition(fctx, tp, off, g.msgs)
		})
	}
	return func() {
		stopFetch()
		wg.Wait()
	}
}

// release processes the records the mergers let go, until one ends a
// window (the batch closes there, so that the evaluation's snapshot ends at
// that record); the rest wait in the mergers. false ends the generation
// (err nil: it ended or ctx is done).
func (g *generation) release(now time.Time) (n int, ok bool, err error) {
	for _, mg := range g.mergers {
		for !g.m.anyDue() {
			msg, more := mg.Next(now)
			if !more {
				break
			}
			if err := g.m.add(g.wctx, msg, g.b); err != nil {
				if g.wctx.Err() != nil && errors.Is(err, g.wctx.Err()) {
					return n, false, nil
				}
				return n, false, err
			}
			n++
		}
	}
	return n, true, nil
}

// take hands fetched records (or a mark) to their topic's merger and
// releases what may go.
func (g *generation) take(f fetch.Fetched) (int, bool, error) {
	if f.Err != nil {
		return 0, false, errors.Join(f.Err, g.m.endGeneration(g.ctx, g.b))
	}
	now := time.Now()
	g.mergers[f.TP.Topic].Take(f, now)
	return g.release(now)
}

// stop ends the generation after take or release said so.
func (g *generation) stop(err error) error {
	if err != nil {
		return err
	}
	return g.end()
}

// consume fills batches from the fetched records, up to maxBatch records or
// maxBatchWait, and flushes each, until the generation ends.
func (g *generation) consume() error {
	var tick <-chan time.Time
	if iv := g.m.minInterval(); iv > 0 {
		t := time.NewTicker(min(iv/4, time.Second))
		defer t.Stop()
		tick = t.C
	}
	for {
		// A check held back for a discovery (by the last flush, or a
		// generation that ended) is handed over first.
		if err := g.awaitDiscoveries(); err != nil {
			if g.wctx.Err() != nil {
				return g.end()
			}
			return err
		}
		// Records held back at the last batch's window end go first.
		n, ok, err := g.release(time.Now())
		if !ok {
			return g.stop(err)
		}
		if n == 0 {
			// Idle: the flushed batches' syncs finish and their offsets
			// go to the committer before the wait for records.
			if err := g.m.settle(g.b, 0); err != nil {
				return err
			}
			select {
			case <-g.wctx.Done():
				return g.end()
			case f := <-g.msgs:
				k, ok, err := g.take(f)
				if !ok {
					return g.stop(err)
				}
				n += k
			case <-tick:
			}
		}
		if ok, err := g.fill(n); !ok {
			return g.stop(err)
		}
		if err := g.m.flush(g.wctx, g.b); err != nil {
			if g.wctx.Err() != nil {
				return g.end()
			}
			return err
		}
	}
}

// awaitDiscoveries waits for each stream whose check flush held back
// (still due), the synced offsets handed to the committer first, then
// flushes again, which hands the check over.
func (g *generation) awaitDiscoveries() error {
	for _, s := range g.m.streams {
		if !s.due {
			continue
		}
		if err := g.m.settle(g.b, 0); err != nil {
			return err
		}
		if err := s.awaitDiscovery(g.wctx, s.dueSeq); err != nil {
			return err
		}
		if err := g.m.flush(g.wctx, g.b); err != nil {
			return err
		}
	}
	return nil
}

// fill adds fetched records to a batch holding n until it is full, a
// window is due, maxBatchWait passes or the generation ends; false (with
// take's error) ends the generation.
func (g *generation) fill(n int) (bool, error) {
	timer := time.NewTimer(maxBatchWait)
	defer timer.Stop()
	for n > 0 && n < maxBatch && !g.m.anyDue() {
		select {
		case f := <-g.msgs:
			k, ok, err := g.take(f)
			if !ok {
				return false, err
			}
			n += k
		case <-timer.C:
			return true, nil
		case <-g.wctx.Done():
			return true, nil
		}
	}
	return true, nil
}

// endGeneration makes the open batch durable and commits it when the
// generation ends or ctx is done, with a context of its own: the dead
// letters still go out (or the batch is not applied, and its records come
// again). The last offset commit completes or fails before it returns (a
// commit in flight first), so that it precedes the LeaveGroup; each is
// bounded by kafka-go's request Timeout.
func (m *Monitor) endGeneration(ctx context.Context, b *batch) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.flush(fctx, b); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		m.waitSyncs(b)
		return err
	}
	if err := m.settle(b, 0); err != nil {
		return err
	}
	// A failed commit is logged by the committer; the records are in the
	// store, and the next owner skips or reads them again.
	_ = b.offsets.Flush(context.WithoutCancel(ctx))
	return nil
}

// fetchStarts returns where to fetch each assigned partition from: the
// lowest next offset of the topic's streams, the group's committed offset
// for a stream without one (kafka.FirstOffset when the group has none).
func (m *Monitor) fetchStarts(a assignment) map[fetch.TopicPartition]int64 {
	starts := map[fetch.TopicPartition]int64{}
	for t, parts := range a {
		for p, committed := range parts {
			start := int64(math.MaxInt64)
			for _, s := range m.byTopic[t] {
				off := committed
				if next, ok := s.next[p]; ok {
					off = next
				}
				start = min(start, off)
			}
			if start < 0 {
				start = kafka.FirstOffset
			}
			starts[fetch.TopicPartition{Topic: t, Partition: int(p)}] = start
		}
	}
	return starts
}

func (m *Monitor) minInterval() time.Duration {
	var iv time.Duration
	for _, s := range m.streams {
		if s.cfg.Interval > 0 && (iv == 0 || s.cfg.Interval < iv) {
			iv = s.cfg.Interval
		}
	}
	return iv
}

func (m *Monitor) anyDue() bool {
	for _, s := range m.streams {
		if s.due {
			return true
		}
	}
	return false
}

// add processes one fetched message for every stream on its topic.
func (m *Monitor) add(ctx context.Context, msg *kafka.Message, b *batch) error {
	for _, s := range m.byTopic[msg.Topic] {
		if err := s.add(ctx, msg, &b.dlq); err != nil {
			return err
		}
	}
	b.commits[fetch.TopicPartition{Topic: msg.Topic, Partition: msg.Partition}] = msg.Offset + 1
	b.records[msg.Topic]++
	return nil
}

// add appends msg to the window and the open batch. A record interrupted
// by ctx (a decode waiting for the registry) leaves no trace: it is fetched
// again.
func (s *streamRun) add(ctx context.Context, msg *kafka.Message, dlq *[]kafka.Message) error {
	p := int32(msg.Partition)
	if next, known := s.next[p]; known && msg.Offset < next {
		s.consumed.Inc()
		return nil // already in the store: a redelivery after a crash or rebalance
	}
	err := s.decode(ctx, msg)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	s.consumed.Inc()
	s.handedOver.Store(false)
	if msg.HighWaterMark > 0 {
		s.lag[p] = max(0, msg.HighWaterMark-msg.Offset-1)
	}
	s.next[p] = msg.Offset + 1
	s.posDirty = true
	if err != nil {
		var de *decode.DecodeError
		if !errors.As(err, &de) {
			return fmt.Errorf("stream %s: decode %s/%d/%d: %w", s.name, msg.Topic, msg.Partition, msg.Offset, err)
		}
		s.reject(msg, de, dlq)
		return nil
	}
	meta := window.RowMeta{Partition: p, Offset: msg.Offset, Seq: s.seq, Time: msg.Time}
	if !s.win.Append(meta, &s.rec) {
		return nil // the mirror already holds it (cannot happen after the next check above)
	}
	s.arena = s.rec.AppendBinary(s.arena)
	s.valueEnd = append(s.valueEnd, len(s.arena))
	s.batch = append(s.batch, state.Record{Partition: p, Offset: msg.Offset, Seq: s.seq, Time: msg.Time})
	if s.cfg.Interval == 0 && s.countBoundary(s.seq) && s.win.Len() >= s.cfg.Window {
		s.due, s.dueSeq = true, s.seq
	}
	s.seq++
	return nil
}

// Retries of a decode while the Schema Registry is unreachable.
const (
	registryRetryBase = 100 * time.Millisecond
	registryRetryCap  = 5 * time.Second
)

// decode decodes msg into s.rec. While the Schema Registry is unreachable
// (a retryable DecodeError: the record is not at fault) it waits and tries
// again, with capped exponential backoff, rather than dead-lettering good
// records: consumption pauses, the lag grows, and it resumes by itself.
func (s *streamRun) decode(ctx context.Context, msg *kafka.Message) error {
	b := backoff.New(registryRetryBase, registryRetryCap)
	for {
		err := s.dec.Decode(ctx, msg.Value, &s.rec)
		var de *decode.DecodeError
		if err == nil || !errors.As(err, &de) || !de.Retryable() {
			return err
		}
		s.m.metrics.DecodeRetries.WithLabelValues(s.name).Inc()
		wait := b.Next()
		s.log.Warn("schema registry unreachable; waiting before decoding again", "partition", msg.Partition,
			"offset", msg.Offset, "retry_in", wait, "err", de.Err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// reject counts, logs and dead-letters an undecodable record.
func (s *streamRun) reject(msg *kafka.Message, de *decode.DecodeError, dlq *[]kafka.Message) {
	s.m.metrics.Rejected.WithLabelValues(s.name, de.Reason).Inc()
	if s.rejectLog.Allow(time.Now()) {
		s.log.Warn("record rejected", "partition", msg.Partition, "offset", msg.Offset,
			"reason", de.Reason, "err", de.Err, "bytes", len(msg.Value), "suppressed_before", s.rejectLog.TakeSuppressed())
	}
	if s.m.dlq == nil {
		return
	}
	*dlq = append(*dlq, deadletter.Of(msg, s.name, de.Reason, de.Err))
}

// flush closes the batch: the dead letters, then one store commit per
// stream (records, positions, evictions) applied without waiting for its
// sync, which runs while the next batch fills; the syncs of the batches
// before it are waited for, and their offsets handed to the committer
// (settle), which commits them to Kafka on its own goroutine.
// Finally it hands due window snapshots to the evaluators: an evaluator's
// own synced commits come after this batch's in the store's log, so what
// it saves is never durable before the records it evaluated. A
// dead-letter topic that cannot be written is a fatal error (after
// kafka-go's retries): dropping the records silently would lose them.
func (m *Monitor) flush(ctx context.Context, b *batch) error {
	if len(b.dlq) > 0 {
		// Dead letters go out before the store records the positions past
		// them, so none is lost: when the write fails the batch is not
		// applied and the records come again after a restart.
		if err := deadletter.Write(ctx, m.dlq, m.cfg.DLQTopic, m.log, b.dlq); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("write %d records to the dead-letter topic %s: %w", len(b.dlq), m.cfg.DLQTopic, err)
		}
		for _, msg := range b.dlq {
			m.metrics.DLQ.WithLabelValues(deadletter.Header(msg.Headers, "odwatch_stream")).Inc()
		}
		clear(b.dlq)
		b.dlq = b.dlq[:0]
	}
	var waits []func() error
	for _, s := range m.streams {
		wait, err := s.apply()
		if err != nil {
			b.unsynced = append(b.unsynced, unsyncedBatch{waits: waits})
			m.waitSyncs(b)
			return err
		}
		if wait != nil {
			waits = append(waits, wait)
		}
	}
	if len(b.commits) > 0 || len(waits) > 0 {
		b.unsynced = append(b.unsynced, unsyncedBatch{waits: waits, commits: maps.Clone(b.commits)})
		for t, n := range b.records {
			m.balancer.Consumed(t, n)
		}
		clear(b.records)
		clear(b.commits)
	}
	// The syncs of the batches before this one finish while this one's
	// is under way.
	if err := m.settle(b, 1); err != nil {
		return err
	}
	now := time.Now()
	for _, s := range m.streams {
		s.lagGauge.Set(float64(s.totalLag()))
		s.windowGauge.Set(float64(s.win.Len()))
		s.columnsGauge.Set(float64(s.win.NumColumns()))
		if d := s.win.DroppedFields(); d > s.dropped {
			s.droppedCounter.Add(float64(d - s.dropped))
			s.dropped = d
		}
		if s.cfg.Interval > 0 && now.Sub(s.lastEval) >= s.cfg.Interval && s.seq > s.evalSeq {
			s.due, s.dueSeq = true, s.seq-1
		}
		// A check that must wait for a discovery stays due (awaitDiscoveries).
		if s.due && !s.mustAwait(s.dueSeq) {
			s.due = false
			s.lastEval = now
			s.dispatch(s.dueSeq)
		}
	}
	return nil
}

// settle waits for the syncs of the flushed batches but the newest keep,
// and hands each synced batch's offsets to the committer, which commits
// them to Kafka at most every offsetCommitInterval without the consume
// loop waiting. Offsets are handed over only after the store commits
// holding their records are synced, so no commit passes the store.
func (m *Monitor) settle(b *batch, keep int) error {
	for len(b.unsynced) > keep {
		u := b.unsynced[0]
		for i, wait := range u.waits {
			if err := wait(); err != nil {
				for _, w := range u.waits[i+1:] {
					_ = w()
				}
				b.unsynced = b.unsynced[1:]
				m.waitSyncs(b)
				return err
			}
		}
		b.offsets.Offer(u.commits)
		b.unsynced[0] = unsyncedBatch{}
		b.unsynced = b.unsynced[1:]
	}
	return nil
}

// waitSyncs waits for every flushed batch's syncs, ignoring their errors,
// before a generation ends on an error: every wait is called once.
func (m *Monitor) waitSyncs(b *batch) {
	for _, u := range b.unsynced {
		for _, w := range u.waits {
			_ = w()
		}
	}
	b.unsynced = nil
}

// commit writes the stream's open batch to the store (synced).
func (s *streamRun) commit() error {
	wait, err := s.apply()
	if err != nil || wait == nil {
		return err
	}
	return wait()
}

// apply writes the stream's open batch to the store; wait (nil when there
// was nothing to write) returns once it is synced.
func (s *streamRun) apply() (wait func() error, err error) {
	if len(s.batch) == 0 && !s.posDirty {
		return nil, nil
	}
	from := 0
	for i := range s.batch {
		s.batch[i].Value = s.arena[from:s.valueEnd[i]]
		from = s.valueEnd[i]
	}
	next := make(map[int32]int64, len(s.next))
	for p, o := range s.next {
		next[p] = o
	}
	c := &state.Commit{
		Stream:     s.name,
		Records:    s.batch,
		NextOffset: next,
		NextSeq:    s.seq,
		EvictBelow: s.evictionBounds(),
	}
	synced, err := s.m.store.ApplyNoSyncWait(c)
	if err != nil {
		return nil, fmt.Errorf("stream %s: store batch: %w", s.name, err)
	}
	clear(s.batch)
	s.batch = s.batch[:0]
	s.valueEnd = s.valueEnd[:0]
	s.arena = s.arena[:0]
	s.posDirty = false
	return func() error {
		if err := synced(); err != nil {
			return fmt.Errorf("stream %s: store batch: %w", s.name, err)
		}
		return nil
	}, nil
}
