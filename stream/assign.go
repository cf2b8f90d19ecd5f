package stream

import (
	"fmt"
	"regexp"

	"github.com/odwatch/odwatch/state"
)

// assignedTopicRE matches one partition of kafka-go's assignment log line
// ("subscribed to topics and partitions: map[{topic:t partition:0}:-2 ...]",
// the %+v of its map keyed by topic and partition). Topic names cannot
// hold spaces or braces (Kafka allows [a-zA-Z0-9._-]).
var assignedTopicRE = regexp.MustCompile(`\{topic:([^\s{}]+) partition:\d+\}`)

// parseAssignment returns the topics of a kafka-go assignment log line.
// kafka-go has no assignment callback; the line is logged right after the
// new generation's partition readers start.
func parseAssignment(line string) map[string]bool {
	topics := map[string]bool{}
	for _, m := range assignedTopicRE.FindAllStringSubmatch(line, -1) {
		topics[m[1]] = true
	}
	return topics
}

// noteAssignment hands the latest assignment to the consume loop, replacing
// one it has not taken yet (only the newest matters).
func (m *Monitor) noteAssignment(topics map[string]bool) {
	for {
		select {
		case m.assignCh <- topics:
			return
		default:
		}
		select {
		case <-m.assignCh:
		default:
		}
	}
}

// applyAssignment runs on the consume goroutine between batches. A stream
// whose topic this member lost in a rebalance drops its window (see
// streamRun.drop); messages of a lost topic still buffered from the old
// generation are skipped from then on (m.lost), neither stored nor
// committed: the new owner consumes them.
func (m *Monitor) applyAssignment(topics map[string]bool) error {
	for t := range m.owned {
		if !topics[t] {
			m.lost[t] = true
		}
	}
	for t := range topics {
		delete(m.lost, t)
	}
	for _, s := range m.streams {
		if m.owned[s.cfg.Topic] && !topics[s.cfg.Topic] {
			if err := s.drop(); err != nil {
				return err
			}
		}
	}
	m.owned = topics
	return nil
}

// drop forgets the stream's window after this member lost its topic: the
// in-memory window and positions, the pending evaluation, and the window
// records in the store (they would be restored, stale, on a restart). The
// stored next offsets stay (the store cannot forget them), which is
// harmless: when the topic comes back, the committed offset is past them
// and the window is empty, which is handled as a takeover (read-back from
// Kafka, tracker from the state topic when newer). The tracker stays: it
// is the best this member knows when no state topic is configured. Until
// the stream gets a record again, an evaluation still running does not
// publish to the state topic, where it could shadow the new owner's state.
func (s *streamRun) drop() error {
	if len(s.next) > 0 {
		bounds := make(map[int32]int64, len(s.next))
		for p, o := range s.next {
			bounds[p] = o
		}
		if err := s.m.store.Apply(&state.Commit{Stream: s.name, NextSeq: s.seq, EvictBelow: bounds}); err != nil {
			return fmt.Errorf("stream %s: drop the window of a lost assignment: %w", s.name, err)
		}
	}
	s.win.Reset()
	clear(s.next)
	clear(s.lag)
	s.due, s.stateChecked = false, false
	s.mb.mu.Lock()
	s.mb.pending = nil
	s.mb.mu.Unlock()
	s.windowGauge.Set(0)
	s.lagGauge.Set(0)
	s.handedOver.Store(true)
	s.log.Info("topic assigned to another member: window dropped")
	return nil
}

// pollAssignment applies an assignment change if one is waiting.
func (m *Monitor) pollAssignment() error {
	select {
	case topics := <-m.assignCh:
		return m.applyAssignment(topics)
	default:
		return nil
	}
}
