package stream

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// Batching of the consume loop: a batch (one synced Pebble commit per
// stream, then one offset commit) closes after maxBatch messages, after
// maxBatchWait, or at an evaluation boundary of a stream, so that the
// snapshot of a window end is taken right after the batch that completes it.
const (
	maxBatch     = 2000
	maxBatchWait = 50 * time.Millisecond
	// readerMaxBytes is the fetch size. A larger record still comes back
	// alone (brokers return the first batch whatever its size, KIP-74), so
	// an oversized record is fetched and rejected, not a stalled partition.
	// Far larger values slow kafka-go's reader down several times.
	readerMaxBytes = 4 << 20
)

// streamRun is the state of one stream on the consume goroutine, plus the
// mailbox and tracker its evaluator goroutine owns.
type streamRun struct {
	m    *Monitor
	cfg  StreamConfig
	name string
	log  *slog.Logger
	dec  Decoder
	win  *Window
	rec  FlatRecord

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
	// stateChecked: the state topic was read since the stream was
	// (re)assigned to this member.
	stateChecked bool

	// Evaluator side.
	tracker     *alerts.Tracker
	trackerEnd  uint64
	hasTracker  bool
	evaluations int
	undelivered int // outbox events some sink has not taken yet, after the last delivery
	mb          mailbox
	// handedOver: the topic went to another member and no record came
	// since (set by the consume goroutine, read by the evaluator).
	handedOver atomic.Bool
	maxEval    atomic.Int64  // longest evaluation, nanoseconds (benchmarks)
	evaluated  atomic.Uint64 // window end of the last saved evaluation + 1 (tests)

	rejectLog      logLimiter
	consumed       prometheus.Counter
	windowGauge    prometheus.Gauge
	columnsGauge   prometheus.Gauge
	droppedCounter prometheus.Counter
	dropped        uint64 // DroppedFields already counted
	lagGauge       prometheus.Gauge
}

func newStreamRun(m *Monitor, cfg StreamConfig) (*streamRun, error) {
	dec, err := NewDecoder(DecoderConfig{
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
	s := &streamRun{
		m:    m,
		cfg:  cfg,
		name: cfg.Name,
		log:  m.log.With("stream", cfg.Name, "topic", cfg.Topic),
		dec:  dec,
		win:  NewWindow(cfg.Window, cfg.Interval),
		next: map[int32]int64{},
		lag:  map[int32]int64{},
		tracker: alerts.NewTracker(alerts.Config{
			Stream:      cfg.Name,
			Epsilon:     cfg.Epsilon,
			Margin:      cfg.Margin,
			K:           cfg.K,
			RetireAfter: cfg.RetireAfter,
			Pinned:      cfg.pinned,
		}),
		mb:             newMailbox(),
		consumed:       m.metrics.consumed.WithLabelValues(cfg.Name),
		windowGauge:    m.metrics.windowRecords.WithLabelValues(cfg.Name),
		columnsGauge:   m.metrics.windowColumns.WithLabelValues(cfg.Name),
		droppedCounter: m.metrics.fieldsDropped.WithLabelValues(cfg.Name),
		lagGauge:       m.metrics.lag.WithLabelValues(cfg.Name),
	}
	m.metrics.epsilon.WithLabelValues(cfg.Name).Set(cfg.Epsilon)
	return s, nil
}

// restore rebuilds the window mirror, the position and the tracker from the
// store.
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
		meta     RowMeta
		from, to int
	}
	var (
		rows  []row
		arena []byte
	)
	err = s.m.store.ScanWindow(ctx, s.name, func(r state.Record) error {
		from := len(arena)
		arena = append(arena, r.Value...)
		rows = append(rows, row{RowMeta{r.Partition, r.Offset, r.Seq, r.Time}, from, len(arena)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("stream %s: read window: %w", s.name, err)
	}
	data, end, err := s.m.store.LoadTracker(s.name)
	if err != nil {
		return fmt.Errorf("stream %s: read tracker: %w", s.name, err)
	}
	if data != nil {
		if err := s.tracker.UnmarshalJSON(data); err != nil {
			return fmt.Errorf("stream %s: %w", s.name, err)
		}
		s.trackerEnd, s.hasTracker = end, true
		s.evalSeq = end + 1
		s.evaluated.Store(end + 1)
	}

	// The store may hold, besides the window, the older records of a
	// window dispatched but not saved before the process stopped (holds):
	// appending in arrival order, the window passes through it.
	replayEnd, replayable := s.missedBoundary()
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.meta.Seq, b.meta.Seq) })
	for _, r := range rows {
		if err := s.rec.UnmarshalBinary(arena[r.from:r.to]); err != nil {
			return fmt.Errorf("stream %s: window record %d/%d: %w", s.name, r.meta.Partition, r.meta.Offset, err)
		}
		s.win.Append(r.meta, &s.rec)
		if replayable && r.meta.Seq == replayEnd && s.win.Len() >= s.cfg.Window {
			s.replay = &evalJob{snap: s.win.Snapshot(), endSeq: replayEnd, bounds: s.win.EvictionBounds(), replay: true}
		}
	}
	s.windowGauge.Set(float64(s.win.Len()))
	s.dropped = s.win.DroppedFields() // counted before the restart
	s.lastEval = time.Now()
	s.log.Info("stream restored", "window_records", s.win.Len(), "next_seq", s.seq,
		"positions", fmt.Sprint(next), "tracked", len(s.tracker.Tracked()))
	return nil
}

// missedBoundary returns the last count-window end among the stored
// records (sequence numbers below s.seq) that has no saved evaluation:
// the process stopped after committing the batch that completed the window
// but before the evaluation was saved.
func (s *streamRun) missedBoundary() (uint64, bool) {
	w, e := uint64(s.cfg.Window), uint64(s.cfg.Every)
	if s.cfg.Interval > 0 || w == 0 || e == 0 || s.seq < w {
		return 0, false
	}
	end := w - 1 + (s.seq-w)/e*e
	if s.hasTracker && end <= s.trackerEnd {
		return 0, false
	}
	return end, true
}

// replayMissedEvaluation hands the evaluator the window of missedBoundary,
// rebuilt by restore from the records the store kept for it (holds).
// Replaying it gives the events (and ids) the lost evaluation would have
// given. When the store no longer holds the whole window (records evicted
// by a build without holds) the evaluation is skipped.
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

// groupTopicBalancer is the consumer group balancer of docs/DESIGN.md
// "Scale-out": all partitions of a topic go to one member, since a window
// needs the whole stream. The member is the oldest one subscribed to the
// topic (UserData carries the member's start time), so a new instance does
// not take a topic away from the one holding its window; topics spread over
// members by count.
type groupTopicBalancer struct {
	started time.Time
}

func (b groupTopicBalancer) ProtocolName() string { return "odwatch-topic" }

func (b groupTopicBalancer) UserData() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(b.started.UnixNano())), nil
}

func (b groupTopicBalancer) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	started := func(m kafka.GroupMember) uint64 {
		if len(m.UserData) >= 8 {
			return binary.BigEndian.Uint64(m.UserData)
		}
		return ^uint64(0)
	}
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, c kafka.GroupMember) int {
		return cmp.Or(cmp.Compare(started(a), started(c)), strings.Compare(a.ID, c.ID))
	})
	byTopic := map[string][]int{}
	for _, p := range partitions {
		byTopic[p.Topic] = append(byTopic[p.Topic], p.ID)
	}
	topics := make([]string, 0, len(byTopic))
	for t := range byTopic {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	out := kafka.GroupMemberAssignments{}
	load := map[string]int{}
	for _, m := range members {
		out[m.ID] = map[string][]int{}
	}
	for _, t := range topics {
		// Prefer the oldest subscribed member; among members as old
		// (none carry a start time) the least loaded.
		var pick *kafka.GroupMember
		for i := range members {
			m := &members[i]
			if !slices.Contains(m.Topics, t) {
				continue
			}
			if pick == nil || (started(*m) == started(*pick) && load[m.ID] < load[pick.ID]) {
				pick = m
			}
		}
		if pick == nil {
			continue
		}
		ps := slices.Clone(byTopic[t])
		slices.Sort(ps)
		out[pick.ID][t] = ps
		load[pick.ID]++
	}
	return out
}

// readerLogger watches kafka-go's reader log for the assignment, which is
// the readiness signal (kafka-go has no API for it), and forwards the lines
// at debug level.
type readerLogger struct {
	m *Monitor
}

func (l readerLogger) Printf(format string, args ...any) {
	line := strings.TrimSpace(fmt.Sprintf(format, args...))
	if strings.HasPrefix(format, "subscribed to topics and partitions") {
		l.m.noteAssignment(parseAssignment(line))
		l.m.joined.Store(true)
	}
	l.m.log.Debug("kafka reader: " + line)
}

type readerErrorLogger struct{ m *Monitor }

func (l readerErrorLogger) Printf(format string, args ...any) {
	l.m.log.Warn("kafka reader: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

type fetched struct {
	msg    kafka.Message
	err    error
	assign assignment // when set, an assignment change (no message)
}

type topicPartition struct {
	topic     string
	partition int
}

// consume runs the consume loop until ctx is done (nil) or a fatal error.
func (m *Monitor) consume(ctx context.Context) error {
	rc := kafka.ReaderConfig{
		Brokers:          m.cfg.Brokers,
		GroupID:          m.cfg.Group,
		GroupTopics:      m.topics(),
		MinBytes:         1,
		MaxBytes:         readerMaxBytes,
		MaxWait:          100 * time.Millisecond,
		QueueCapacity:    4096,
		CommitInterval:   0, // synchronous commits, after the store commit
		StartOffset:      kafka.FirstOffset,
		GroupBalancers:   []kafka.GroupBalancer{groupTopicBalancer{started: m.started}},
		Dialer:           m.cfg.Dialer,
		SessionTimeout:   m.cfg.SessionTimeout,
		JoinGroupBackoff: time.Second,
		Logger:           readerLogger{m},
		ErrorLogger:      readerErrorLogger{m},
	}
	r := kafka.NewReader(rc)
	m.reader = r
	fctx, stopFetch := context.WithCancel(ctx)
	msgs := make(chan fetched, maxBatch)
	fetchDone := make(chan struct{})
	go func() {
		defer close(fetchDone)
		for {
			msg, err := r.FetchMessage(fctx)
			// An assignment noted by now came with the generation this
			// message may belong to: it goes first.
			select {
			case a := <-m.assignCh:
				select {
				case msgs <- fetched{assign: a}:
				case <-fctx.Done():
					return
				}
			default:
			}
			select {
			case msgs <- fetched{msg: msg, err: err}:
			case <-fctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		stopFetch()
		<-fetchDone
		if err := r.Close(); err != nil {
			m.log.Warn("close kafka reader", "err", err)
		}
		m.joined.Store(false)
	}()

	var tick <-chan time.Time
	if iv := m.minInterval(); iv > 0 {
		t := time.NewTicker(min(iv/4, time.Second))
		defer t.Stop()
		tick = t.C
	}
	commits := map[topicPartition]kafka.Message{}
	var dlq []kafka.Message
	for {
		n := 0
		var change assignment // an assignment change that ended the batch
		select {
		case <-ctx.Done():
			return nil
		case a := <-m.assignCh:
			if err := m.applyAssignment(a); err != nil {
				return err
			}
			continue
		case f := <-msgs:
			if f.assign != nil {
				if err := m.applyAssignment(f.assign); err != nil {
					return err
				}
				continue
			}
			if f.err != nil {
				return m.fetchError(ctx, f.err)
			}
			if err := m.add(ctx, f.msg, commits, &dlq); err != nil {
				return stopped(ctx, err)
			}
			n++
		case <-tick:
		}
		timer := time.NewTimer(maxBatchWait)
	fill:
		for n > 0 && n < maxBatch && !m.anyDue() {
			select {
			case f := <-msgs:
				if f.assign != nil {
					change = f.assign
					break fill
				}
				if f.err != nil {
					timer.Stop()
					if err := m.flush(ctx, commits, &dlq); err != nil {
						return err
					}
					return m.fetchError(ctx, f.err)
				}
				if err := m.add(ctx, f.msg, commits, &dlq); err != nil {
					timer.Stop()
					return stopped(ctx, err)
				}
				n++
			case <-timer.C:
				break fill
			case <-ctx.Done():
				break fill
			}
		}
		timer.Stop()
		if err := m.flush(ctx, commits, &dlq); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if change != nil {
			if err := m.applyAssignment(change); err != nil {
				return err
			}
		}
	}
}

// stopped maps an error that only says ctx was cancelled (a decode waiting
// for the registry, a read-back, interrupted by shutdown) to nil: a stop is
// not a failure. The open batch is dropped unsynced; its records come again
// after the restart.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

func (m *Monitor) fetchError(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return errors.New("kafka reader closed")
	}
	return fmt.Errorf("fetch from kafka: %w", err)
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
func (m *Monitor) add(ctx context.Context, msg kafka.Message, commits map[topicPartition]kafka.Message, dlq *[]kafka.Message) error {
	if m.lost[msg.Topic] {
		return nil // fetched before a rebalance gave the topic to another member
	}
	commits[topicPartition{msg.Topic, msg.Partition}] = msg
	for _, s := range m.byTopic[msg.Topic] {
		if err := s.add(ctx, msg, dlq); err != nil {
			return err
		}
	}
	return nil
}

func (s *streamRun) add(ctx context.Context, msg kafka.Message, dlq *[]kafka.Message) error {
	s.consumed.Inc()
	s.handedOver.Store(false)
	p := int32(msg.Partition)
	if msg.HighWaterMark > 0 {
		s.lag[p] = max(0, msg.HighWaterMark-msg.Offset-1)
	}
	next, known := s.next[p]
	if known && msg.Offset < next {
		return nil // already in the store: a redelivery after a crash or rebalance
	}
	if !known && msg.Offset > 0 {
		// A partition this store never saw, picked up mid-stream (state
		// dir lost, or taken over from another instance), or one whose
		// window was dropped (see applyAssignment): read back the records
		// before it so that the window is whole at once, and the previous
		// owner's tracker from the state topic.
		s.takeOverState(ctx)
		if err := s.backfill(ctx, msg.Topic, msg.Partition, msg.Offset); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.log.Warn("could not read back the window before the committed offset; the window fills from here",
				"partition", msg.Partition, "offset", msg.Offset, "err", err)
		}
	}
	s.next[p] = msg.Offset + 1
	s.posDirty = true
	if err := s.decode(ctx, msg); err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			return fmt.Errorf("stream %s: decode %s/%d/%d: %w", s.name, msg.Topic, msg.Partition, msg.Offset, err)
		}
		s.reject(msg, de, dlq)
		return nil
	}
	meta := RowMeta{Partition: p, Offset: msg.Offset, Seq: s.seq, Time: msg.Time}
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

// decode decodes msg into s.rec. While the Schema Registry is unreachable
// (a retryable DecodeError: the record is not at fault) it waits and tries
// again, with capped exponential backoff, rather than dead-lettering good
// records: consumption pauses, the lag grows, and it resumes by itself.
func (s *streamRun) decode(ctx context.Context, msg kafka.Message) error {
	backoff := 100 * time.Millisecond
	for {
		err := s.dec.Decode(ctx, msg.Value, &s.rec)
		var de *DecodeError
		if err == nil || !errors.As(err, &de) || !de.Retryable() {
			return err
		}
		s.m.metrics.decodeRetries.WithLabelValues(s.name).Inc()
		s.log.Warn("schema registry unreachable; waiting before decoding again", "partition", msg.Partition,
			"offset", msg.Offset, "retry_in", backoff, "err", de.Err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// reject counts, logs and dead-letters an undecodable record.
func (s *streamRun) reject(msg kafka.Message, de *DecodeError, dlq *[]kafka.Message) {
	s.m.metrics.rejected.WithLabelValues(s.name, de.Reason).Inc()
	if s.rejectLog.allow(time.Now()) {
		s.log.Warn("record rejected", "partition", msg.Partition, "offset", msg.Offset,
			"reason", de.Reason, "err", de.Err, "bytes", len(msg.Value), "suppressed_before", s.rejectLog.takeSuppressed())
	}
	if s.m.dlq == nil {
		return
	}
	errText := ""
	if de.Err != nil {
		errText = de.Err.Error()
	}
	headers := append(slices.Clone(msg.Headers),
		kafka.Header{Key: "odwatch_reason", Value: []byte(de.Reason)},
		kafka.Header{Key: "odwatch_error", Value: []byte(errText)},
		kafka.Header{Key: "odwatch_stream", Value: []byte(s.name)},
		kafka.Header{Key: "odwatch_topic", Value: []byte(msg.Topic)},
		kafka.Header{Key: "odwatch_partition", Value: strconv.AppendInt(nil, int64(msg.Partition), 10)},
		kafka.Header{Key: "odwatch_offset", Value: strconv.AppendInt(nil, msg.Offset, 10)},
	)
	*dlq = append(*dlq, kafka.Message{Key: msg.Key, Value: msg.Value, Headers: headers, Time: msg.Time})
}

// flush makes the batch durable: the dead letters, one synced store commit
// per stream (records, positions, evictions), then the Kafka offset commit;
// finally it hands due window snapshots to the evaluators. A dead-letter
// topic that cannot be written is a fatal error (after kafka-go's retries):
// dropping the records silently would lose them.
func (m *Monitor) flush(ctx context.Context, commits map[topicPartition]kafka.Message, dlq *[]kafka.Message) error {
	if len(*dlq) > 0 {
		// Dead letters go out before the store records the positions past
		// them, so none is lost: when the write fails the batch is not
		// applied and the records come again after a restart.
		if err := m.writeDeadLetters(ctx, *dlq); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("write %d records to the dead-letter topic %s: %w", len(*dlq), m.cfg.DLQTopic, err)
		}
		for _, msg := range *dlq {
			m.metrics.dlq.WithLabelValues(headerValue(msg.Headers, "odwatch_stream")).Inc()
		}
		clear(*dlq)
		*dlq = (*dlq)[:0]
	}
	for _, s := range m.streams {
		if err := s.commit(); err != nil {
			return err
		}
	}
	if len(commits) > 0 {
		last := make([]kafka.Message, 0, len(commits))
		for _, msg := range commits {
			last = append(last, msg)
		}
		clear(commits)
		if err := m.reader.CommitMessages(ctx, last...); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// A commit fails during a rebalance; the records are in the
			// store, so a redelivery is skipped by offset.
			m.log.Warn("commit offsets to kafka", "err", err)
		}
	}
	now := time.Now()
	for _, s := range m.streams {
		var lag int64
		for _, l := range s.lag {
			lag += l
		}
		s.lagGauge.Set(float64(lag))
		s.windowGauge.Set(float64(s.win.Len()))
		s.columnsGauge.Set(float64(s.win.NumColumns()))
		if d := s.win.DroppedFields(); d > s.dropped {
			s.droppedCounter.Add(float64(d - s.dropped))
			s.dropped = d
		}
		if s.cfg.Interval > 0 && now.Sub(s.lastEval) >= s.cfg.Interval && s.seq > s.evalSeq {
			s.due, s.dueSeq = true, s.seq-1
		}
		if s.due {
			s.due = false
			s.lastEval = now
			s.dispatch(s.dueSeq)
		}
	}
	return nil
}

// writeDeadLetters writes the dead letters. When the dead-letter topic
// refuses some for their size (its max.message.bytes below the source
// topic's, or a batch of them over it), they are written one by one, and a
// record still too large alone is written without its value (header
// odwatch_value_dropped: its size in bytes); its coordinates lead to the
// original. Failing instead would stop the pipeline on the same record at
// every restart.
func (m *Monitor) writeDeadLetters(ctx context.Context, msgs []kafka.Message) error {
	err := m.dlq.WriteMessages(ctx, msgs...)
	if err == nil || !sizeRefused(err) {
		return err
	}
	redo := msgs // a client-side size check fails the call before any write
	var we kafka.WriteErrors
	if errors.As(err, &we) && len(we) == len(msgs) {
		redo = nil
		for i, e := range we {
			switch {
			case e == nil:
			case errors.Is(e, kafka.MessageSizeTooLarge):
				redo = append(redo, msgs[i])
			default:
				return err
			}
		}
	}
	for _, msg := range redo {
		err := m.dlq.WriteMessages(ctx, msg)
		if err != nil && sizeRefused(err) {
			m.log.Warn("dead letter too large for the dead-letter topic; written without its value",
				"topic", m.cfg.DLQTopic, "bytes", len(msg.Value), "source_topic", headerValue(msg.Headers, "odwatch_topic"),
				"partition", headerValue(msg.Headers, "odwatch_partition"), "offset", headerValue(msg.Headers, "odwatch_offset"))
			msg.Headers = append(slices.Clone(msg.Headers),
				kafka.Header{Key: "odwatch_value_dropped", Value: strconv.AppendInt(nil, int64(len(msg.Value)), 10)})
			msg.Value = nil
			err = m.dlq.WriteMessages(ctx, msg)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sizeRefused reports whether a write failed because a message or batch
// was too large for the topic.
func sizeRefused(err error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		return slices.ContainsFunc(we, func(e error) bool { return e != nil && errors.Is(e, kafka.MessageSizeTooLarge) })
	}
	return errors.Is(err, kafka.MessageSizeTooLarge)
}

func headerValue(hs []kafka.Header, key string) string {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// commit writes the stream's open batch to the store (synced).
func (s *streamRun) commit() error {
	if len(s.batch) == 0 && !s.posDirty {
		return nil
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
	if err := s.m.store.Apply(c); err != nil {
		return fmt.Errorf("stream %s: store batch: %w", s.name, err)
	}
	clear(s.batch)
	s.batch = s.batch[:0]
	s.valueEnd = s.valueEnd[:0]
	s.arena = s.arena[:0]
	s.posDirty = false
	return nil
}

// logLimiter lets through at most logBurst lines per second and counts the
// lines it held back, so that a flood of bad records does not flood the log
// (the rejected metric and the dead-letter topic still get every record).
type logLimiter struct {
	second     int64
	lines      int
	suppressed int
}

const logBurst = 10

func (l *logLimiter) allow(now time.Time) bool {
	if sec := now.Unix(); sec != l.second {
		l.second, l.lines = sec, 0
	}
	if l.lines >= logBurst {
		l.suppressed++
		return false
	}
	l.lines++
	return true
}

func (l *logLimiter) takeSuppressed() int {
	n := l.suppressed
	l.suppressed = 0
	return n
}

// backfill reads back, before offset upTo of a partition the store has no
// position for, the partition's share of the window (Window / partitions
// records, docs/DESIGN.md "Scale-out") and appends it to the window and the open
// batch. Undecodable records among them are skipped: the instance that
// consumed them first counted and dead-lettered them. No evaluation is
// triggered by the backfill itself.
func (s *streamRun) backfill(ctx context.Context, topic string, partition int, upTo int64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(s.m.cfg.Brokers...), Timeout: 10 * time.Second}
	if s.m.cfg.Dialer != nil {
		t := transportFor(s.m.cfg.Dialer)
		defer t.CloseIdleConnections()
		client.Transport = t
	}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	parts := 1
	for _, t := range md.Topics {
		if t.Name == topic && len(t.Partitions) > 0 {
			parts = len(t.Partitions)
		}
	}
	share := int64((s.cfg.Window + parts - 1) / parts)
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.FirstOffsetOf(partition)}}})
	if err != nil {
		return fmt.Errorf("first offset: %w", err)
	}
	from := upTo - share
	for _, po := range lo.Topics[topic] {
		if po.Partition == partition && po.Error == nil {
			from = max(from, po.FirstOffset)
		}
	}
	from = max(from, 0)
	if from >= upTo {
		return nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: s.m.cfg.Brokers, Topic: topic, Partition: partition, Dialer: s.m.cfg.Dialer,
		MinBytes: 1, MaxBytes: readerMaxBytes, MaxWait: 100 * time.Millisecond, QueueCapacity: 4096,
	})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return fmt.Errorf("seek to %d: %w", from, err)
	}
	p := int32(partition)
	n := 0
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("read back %d..%d: %w", from, upTo, err)
		}
		if msg.Offset >= upTo {
			break
		}
		if err := s.decode(ctx, msg); err == nil &&
			s.win.Append(RowMeta{Partition: p, Offset: msg.Offset, Seq: s.seq, Time: msg.Time}, &s.rec) {
			s.arena = s.rec.AppendBinary(s.arena)
			s.valueEnd = append(s.valueEnd, len(s.arena))
			s.batch = append(s.batch, state.Record{Partition: p, Offset: msg.Offset, Seq: s.seq, Time: msg.Time})
			s.seq++
			n++
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		if msg.Offset >= upTo-1 {
			break
		}
	}
	s.next[p] = upTo
	s.posDirty = true
	s.log.Info("window read back from kafka", "partition", partition, "from", from, "to", upTo, "records", n)
	return nil
}
