package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/takeover"
	"github.com/segmentio/kafka-go"
)

// stateWriteTimeout bounds one publication to the state topic.
const stateWriteTimeout = 10 * time.Second

// publishState writes the stream's tracker state after an evaluation was
// saved locally. A failure is logged and counted, not fatal: the local
// store has the state, and the next evaluation publishes again.
func (s *evaluator) publishState(ctx context.Context, end uint64, next map[int32]int64, tracker []byte) {
	if s.m.stateWriter == nil || s.handedOver.Load() {
		return
	}
	value, err := takeover.EncodeState(s.name, end, next, tracker)
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
		s.m.metrics.StatePublishErrors.WithLabelValues(s.name).Inc()
		s.log.Warn("could not publish the tracker state to the state topic", "topic", s.m.cfg.StateTopic, "window_end", end, "err", err)
	}
}

// stateToTakeOver reads the stream's state from the state topic for a
// takeover: nil when there is no state topic or it holds nothing for the
// stream. adopt says whether its tracker is newer than the local store's
// (the record's count is used either way).
func (s *streamRun) stateToTakeOver(ctx context.Context) (rec *takeover.StateRecord, adopt bool, err error) {
	if s.m.cfg.StateTopic == "" {
		return nil, false, nil
	}
	rec, err = takeover.ReadStateRecord(ctx, s.m.cfg.Brokers, s.m.cfg.Dialer, s.m.cfg.StateTopic, s.name)
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
func (s *streamRun) adoptState(rec *takeover.StateRecord) {
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
func (s *evaluator) applyState(rec *takeover.StateRecord) error {
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
	s.m.metrics.Alerts.UpdateTracker(s.name, s.tracker)
	return nil
}
