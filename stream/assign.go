package stream

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/odwatch/odwatch/state"
)

// assignment is one consumer group assignment of this member: topic →
// partition → the group's committed offset when it was made (negative
// when none).
type assignment map[string]map[int32]int64

// assignedRE matches one partition of kafka-go's assignment log line
// ("subscribed to topics and partitions: map[{topic:t partition:0}:-2 ...]",
// the %+v of its map of topic/partition to committed offset). Topic names
// cannot hold spaces or braces (Kafka allows [a-zA-Z0-9._-]).
var assignedRE = regexp.MustCompile(`\{topic:([^\s{}]+) partition:(\d+)\}:(-?\d+)`)

// parseAssignment returns the assignment of a kafka-go assignment log
// line. kafka-go has no assignment callback; the line is logged right after
// the new generation's partition readers start.
func parseAssignment(line string) assignment {
	a := assignment{}
	for _, m := range assignedRE.FindAllStringSubmatch(line, -1) {
		p, err1 := strconv.ParseInt(m[2], 10, 32)
		off, err2 := strconv.ParseInt(m[3], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if a[m[1]] == nil {
			a[m[1]] = map[int32]int64{}
		}
		a[m[1]][int32(p)] = off
	}
	return a
}

// noteAssignment hands the latest assignment to the consume loop, replacing
// one it has not taken yet (only the newest matters). The fetch goroutine
// forwards it in line with the messages (so that it is applied before the
// new generation's first message), the consume loop also takes it directly
// (a member left with nothing to fetch).
func (m *Monitor) noteAssignment(a assignment) {
	for {
		select {
		case m.assignCh <- a:
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
// drops its window (see streamRun.drop) when this member lost its topic,
// or when the group's committed offset of one of its partitions is past the
// stored position: another member consumed meanwhile (this one restarts on
// an old state dir, or gets a topic back), so the window and tracker are
// stale; the next record is then handled as a takeover. Messages of a lost
// topic that come after the change are skipped (m.lost), neither stored
// nor committed: the new owner consumes them.
func (m *Monitor) applyAssignment(a assignment) error {
	for t := range m.owned {
		if a[t] == nil {
			m.lost[t] = true
		}
	}
	for t := range a {
		delete(m.lost, t)
	}
	for _, s := range m.streams {
		parts := a[s.cfg.Topic]
		if parts == nil {
			if m.owned[s.cfg.Topic] {
				if err := s.drop("topic assigned to another member"); err != nil {
					return err
				}
			}
			continue
		}
		for p, committed := range parts {
			if next, known := s.next[p]; known && committed >= 0 && committed > next {
				s.log.Info("the group's committed offset is past the stored position: another member consumed meanwhile",
					"partition", p, "committed", committed, "stored", next)
				if err := s.drop("window and tracker behind the group"); err != nil {
					return err
				}
				break
			}
		}
	}
	owned := make(map[string]bool, len(a))
	for t := range a {
		owned[t] = true
	}
	m.owned = owned
	return nil
}

// drop forgets the stream's window: the in-memory window and positions, the
// pending evaluation, and the window records in the store (they would be
// restored, stale, on a restart). The stored next offsets stay (the store
// cannot forget them), which is harmless: the group's committed offset is
// past them when the topic comes back, which drops again. The next record
// is handled as a takeover (read-back from Kafka, tracker from the state
// topic when newer). The tracker stays: it is the best this member knows
// when no state topic is configured. Until the stream gets a record again,
// an evaluation still running does not publish to the state topic, where it
// could shadow the new owner's state.
func (s *streamRun) drop(why string) error {
	if len(s.next) > 0 {
		bounds := make(map[int32]int64, len(s.next))
		for p, o := range s.next {
			bounds[p] = o
		}
		if err := s.m.store.Apply(&state.Commit{Stream: s.name, NextSeq: s.seq, EvictBelow: bounds}); err != nil {
			return fmt.Errorf("stream %s: drop the window: %w", s.name, err)
		}
	}
	s.win.Reset()
	clear(s.next)
	clear(s.lag)
	s.due, s.stateChecked = false, false
	s.holds = nil
	s.mb.mu.Lock()
	s.mb.pending, s.mb.replay = nil, nil
	s.mb.mu.Unlock()
	s.windowGauge.Set(0)
	s.lagGauge.Set(0)
	s.handedOver.Store(true)
	s.log.Info("window dropped", "reason", why)
	return nil
}
