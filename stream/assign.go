package stream

import (
	"fmt"

	"github.com/odwatch/odwatch/state"
	"github.com/segmentio/kafka-go"
)

// assignment is one consumer group generation's assignment of this member:
// topic → partition → the group's committed offset (kafka.FirstOffset when
// none). Topics without partitions are absent.
type assignment map[string]map[int32]int64

// assignmentOf reads the assignment of a generation (kafka-go's
// Generation.Assignments lists every subscribed topic, assigned or not).
func assignmentOf(gen *kafka.Generation) assignment {
	a := assignment{}
	for t, ps := range gen.Assignments {
		if len(ps) == 0 {
			continue
		}
		a[t] = make(map[int32]int64, len(ps))
		for _, p := range ps {
			a[t][int32(p.ID)] = p.Offset
		}
	}
	return a
}

// applyAssignment runs on the consume goroutine at the start of a
// generation, before any of its records. A stream drops its window (see
// streamRun.drop) when this member lost its topic, or when the group's
// committed offset of one of its partitions is past the stored position:
// another member consumed meanwhile (this one restarts on an old state dir,
// or gets a topic back), so the window and tracker are stale; the stream is
// then taken over (takeOver).
func (m *Monitor) applyAssignment(a assignment) error {
	for _, s := range m.streams {
		parts := a[s.cfg.Topic]
		if parts == nil {
			// Also a window restored from the store and not assigned
			// in this process's first generation: it is stale from now.
			if m.owned[s.cfg.Topic] || len(s.next) > 0 || s.win.Len() > 0 {
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
// pending evaluation, and the window records and positions in the store
// (they would be restored, stale, on a restart: a restart that gets the
// topic back before the group consumed past them would go on from them
// with an empty window, missing the evaluations until it refilled). The
// next assignment of the topic is handled as a takeover (read-back from
// Kafka, tracker from the state topic when newer). The tracker stays: it
// is the best this member knows when no state topic is configured.
//
// The work dispatched for the dropped window is forgotten with it: drop
// moves the mailbox's generation on (mailbox.gen) and, under mailbox.mu,
// clears the pending evaluation and, with two cadences, the queued checks
// and discoveries, the discovery results not merged yet and the merges
// waited for, stops the running discovery, opens the check gate and makes
// the next check job a reset (cadenceFeed.forget). An evaluation or check
// already running is not saved, its events neither stored nor delivered,
// and the tracker it changed goes back to the saved state (record,
// discardDropped): its generation is checked under mailbox.saveMu, which
// drop holds while it moves the generation on, so none of it is saved once
// drop returns. One saved before then is delivered, but until the stream
// gets a record again it is not published to the state topic
// (handedOver), where it could shadow the new owner's state.
func (s *streamRun) drop(why string) error {
	if len(s.next) > 0 {
		// Every stored record is below its partition's next offset.
		if err := s.m.store.Apply(&state.Commit{Stream: s.name, NextSeq: s.seq, EvictBelow: s.next, ForgetPositions: true}); err != nil {
			return fmt.Errorf("stream %s: drop the window: %w", s.name, err)
		}
	}
	s.win.Reset()
	clear(s.next)
	clear(s.lag)
	s.due = false
	s.holds = nil
	s.mb.saveMu.Lock()
	s.mb.mu.Lock()
	s.mb.gen.Add(1)
	s.mb.pending, s.mb.replay = nil, nil
	s.mb.feed.forget()
	s.mb.mu.Unlock()
	s.mb.saveMu.Unlock()
	s.windowGauge.Set(0)
	s.lagGauge.Set(0)
	s.handedOver.Store(true)
	s.log.Info("window dropped", "reason", why)
	return nil
}
