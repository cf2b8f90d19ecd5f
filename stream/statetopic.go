package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/segmentio/kafka-go"
)

// stateRecord is the value a stream publishes to Config.StateTopic after
// each evaluation, keyed by the stream name: what a member taking the stream
// over needs to go on where the previous owner stopped (docs/DESIGN.md
// "Scale-out"). The topic is meant to be compacted (cleanup.policy=compact),
// so it holds about one value per stream.
type stateRecord struct {
	Stream string `json:"stream"`
	// WindowEndSeq is the arrival sequence number of the last record of the
	// evaluated window.
	WindowEndSeq uint64 `json:"window_end_seq"`
	// NextOffsets are the stream's next offsets per partition (decimal
	// partition number as the key) when the window was snapshotted.
	NextOffsets map[string]int64 `json:"next_offsets"`
	// Tracker is the alerts.Tracker state (its MarshalJSON form).
	Tracker json.RawMessage `json:"tracker"`
}

// stateWriteTimeout bounds one publication to the state topic.
const stateWriteTimeout = 10 * time.Second

// newStateWriter returns the synchronous writer of the state topic: one
// message per evaluation, written before the evaluation's events are
// delivered, hashed by stream name so that a stream's values stay in one
// partition (compaction keeps the latest). It writes over tr, which the
// caller closes.
func newStateWriter(cfg Config, tr *kafka.Transport) *kafka.Writer {
	w := &kafka.Writer{
		Addr:                   kafka.TCP(cfg.Brokers...),
		Topic:                  cfg.StateTopic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           time.Millisecond, // one message per write: do not wait for more
		BatchBytes:             kafkaread.MaxMessageBytes,
		AllowAutoTopicCreation: true,
		Transport:              tr,
	}
	return w
}

// publishState writes the stream's tracker state after an evaluation was
// saved locally. A failure is logged and counted, not fatal: the local
// store has the state, and the next evaluation publishes again.
func (s *evaluator) publishState(ctx context.Context, end uint64, next map[int32]int64, tracker []byte) {
	if s.m.stateWriter == nil || s.handedOver.Load() {
		return
	}
	rec := stateRecord{Stream: s.name, WindowEndSeq: end, NextOffsets: make(map[string]int64, len(next)), Tracker: tracker}
	for p, o := range next {
		rec.NextOffsets[strconv.Itoa(int(p))] = o
	}
	value, err := json.Marshal(rec)
	if err != nil {
		s.log.Error("encode state for the state topic", "err", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, stateWriteTimeout)
	defer cancel()
	if err := s.m.stateWriter.WriteMessages(wctx, kafka.Message{Key: []byte(s.name), Value: value}); err != nil {
		if ctx.Err() != nil {
			return
		}
		s.m.metrics.statePublishErrors.WithLabelValues(s.name).Inc()
		s.log.Warn("could not publish the tracker state to the state topic", "topic", s.m.cfg.StateTopic, "window_end", end, "err", err)
	}
}

// stateToTakeOver reads the stream's state from the state topic for a
// takeover: nil when there is no state topic or it holds nothing for the
// stream. adopt says whether its tracker is newer than the local store's
// (the record's count is used either way).
func (s *streamRun) stateToTakeOver(ctx context.Context) (rec *stateRecord, adopt bool, err error) {
	if s.m.cfg.StateTopic == "" {
		return nil, false, nil
	}
	rec, err = readStateRecord(ctx, s.m.cfg.Brokers, s.m.cfg.Dialer, s.m.cfg.StateTopic, s.name)
	if err != nil {
		return nil, false, fmt.Errorf("read the state topic %s: %w", s.m.cfg.StateTopic, err)
	}
	if rec == nil {
		s.log.Info("no state for the stream on the state topic", "topic", s.m.cfg.StateTopic)
		return nil, false, nil
	}
	return rec, s.evaluated.Load() <= rec.WindowEndSeq, nil
}

// adoptState continues the previous owner's evaluations: the evaluator
// restores the tracker from rec before its next evaluation, and the next
// evaluation comes after rec's window end.
func (s *streamRun) adoptState(rec *stateRecord) {
	s.evalSeq = max(s.evalSeq, rec.WindowEndSeq+1)
	s.mb.mu.Lock()
	s.mb.restore = rec
	s.mb.mu.Unlock()
	s.mb.notify()
	s.log.Info("tracker state taken over from the state topic", "topic", s.m.cfg.StateTopic, "window_end", rec.WindowEndSeq)
}

// applyState restores the tracker from a state topic record, on the
// evaluator goroutine, and saves it to the local store so that a restart
// does not need the topic again.
func (s *evaluator) applyState(rec *stateRecord) error {
	if s.hasTracker && rec.WindowEndSeq <= s.trackerEnd {
		return nil
	}
	if err := s.tracker.UnmarshalJSON(rec.Tracker); err != nil {
		s.log.Warn("ignoring an undecodable tracker state from the state topic", "err", err)
		return nil
	}
	if err := s.m.store.SaveEvaluation(&state.Evaluation{Stream: s.name, WindowEnd: rec.WindowEndSeq, TrackerState: rec.Tracker}); err != nil {
		return fmt.Errorf("stream %s: save restored tracker: %w", s.name, err)
	}
	s.trackerEnd, s.hasTracker = rec.WindowEndSeq, true
	s.evaluated.Store(rec.WindowEndSeq + 1)
	s.m.metrics.alerts.UpdateTracker(s.name, s.tracker)
	return nil
}

// readStateRecord reads topic from its beginning up to the high watermarks
// at the time of the call, partition by partition, and returns the latest
// value of key stream (the last one by offset in a partition; across
// partitions, after a change of their number, the one with the highest
// window end). nil when the topic or the key does not exist.
func readStateRecord(ctx context.Context, brokers []string, dialer *kafka.Dialer, topic, stream string) (*stateRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := map[int][]byte{} // partition → latest value of the key there
	err := kafkaread.Scan(ctx, brokers, dialer, topic, 0, func(partition int, rec *kafka.Record) {
		if rec.Key == nil {
			return
		}
		if key, err := kafka.ReadAll(rec.Key); err != nil || string(key) != stream {
			return
		}
		if rec.Value == nil {
			delete(last, partition) // a tombstone
		} else if value, err := kafka.ReadAll(rec.Value); err == nil {
			last[partition] = value
		}
	})
	if err != nil {
		return nil, err
	}
	var best *stateRecord
	for _, p := range slices.Sorted(maps.Keys(last)) {
		var r stateRecord
		if err := json.Unmarshal(last[p], &r); err != nil || r.Stream != stream || len(r.Tracker) == 0 {
			continue // not ours or damaged: ignore it rather than fail the takeover
		}
		if best == nil || r.WindowEndSeq > best.WindowEndSeq {
			best = &r
		}
	}
	return best, nil
}
