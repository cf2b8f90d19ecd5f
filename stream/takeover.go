package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/takeover"
	"github.com/segmentio/kafka-go"
)

// takeOver rebuilds, before the generation fetches anything, the window of
// every stream of an assigned topic that another member consumed before
// (see needsTakeover): the whole window is read back from Kafka up to the
// group's committed offsets (the previous owner's position), in the
// window's order, and the tracker comes from the state topic. Reading is
// retried like any broker request; nothing is evaluated until it is done,
// so no evaluation sees a partial window.
func (m *Monitor) takeOver(ctx context.Context, client *kafka.Client, a assignment) error {
	for _, s := range m.streams {
		parts := a[s.cfg.Topic]
		if parts == nil || !s.needsTakeover(parts) {
			continue
		}
		var (
			rb    *takeover.ReadBack
			rec   *takeover.StateRecord
			adopt bool
		)
		err := m.health.Retry(ctx, "read back "+s.cfg.Topic, func(ctx context.Context) error {
			var err error
			if rec, adopt, err = s.stateToTakeOver(ctx); err != nil {
				return err
			}
			rb, err = s.readBack(ctx, client, parts, rec)
			return err
		})

		if err != nil {
			return err
		}
		if err := s.applyTakeOver(rb, rec, adopt); err != nil {
			return err
		}
	}
	return nil
}

// needsTakeover reports whether the stream's window is elsewhere: the
// group consumed a partition of the stream that the store has no position
// for (another member's window, or a lost state dir), or the store has no
// position for any of them (a fresh member, or a window this member
// dropped), also while the group has committed no offset: its count then
// starts from the partitions' first offsets, not where this member's own
// count stood when it dropped the window, and the state topic may hold the
// evaluations of an owner whose offset commits never reached the group.
func (s *streamRun) needsTakeover(parts map[int32]int64) bool {
	anyKnown := false
	for p, committed := range parts {
		_, known := s.next[p]
		if !known && committed > 0 {
			return true
		}
		anyKnown = anyKnown || known
	}
	return !anyKnown
}

// readBack reads the stream's window back from Kafka (takeover.Read).
func (s *streamRun) readBack(ctx context.Context, client *kafka.Client, parts map[int32]int64, rec *takeover.StateRecord) (*takeover.ReadBack, error) {
	return takeover.Read(ctx, client, takeover.Source{Topic: s.cfg.Topic, Window: s.cfg.Window, Interval: s.cfg.Interval, Decoder: s.dec, Log: s.log}, parts, rec)
}

// applyTakeOver makes the read-back window the stream's: the stale window
// (if any) is dropped, the state topic's tracker adopted (when newer than
// the store's), and the rows get arrival sequence numbers that continue
// the stream's count, so that the evaluations fall at the window ends an
// uninterrupted member would have evaluated. With a state record the count
// is its window end plus the decodable records past the positions of that
// evaluation (NextOffsets) up to the committed offsets, minus those past
// the committed offsets up to its positions (rb.Ahead: published before
// the group's offsets reached them); without one it is the records since
// the partitions' first offsets. Records between the state's positions and
// the read-back range count by their offsets. The count is the group's
// whatever this member's own tracker holds: when that one is newer (its
// publish was lost), its checks up to its window end are skipped as
// evaluated before (runCheck). The rebuilt window and the positions are
// committed to the store at once.
func (s *streamRun) applyTakeOver(rb *takeover.ReadBack, rec *takeover.StateRecord, adopt bool) error {
	if len(s.next) > 0 || s.win.Len() > 0 {
		if err := s.drop("taken over from the group's committed offsets"); err != nil {
			return err
		}
	}
	keep := rb.Rows[max(0, len(rb.Rows)-s.cfg.Window):]
	// since returns the read records at or past start[p], plus the
	// unread offsets between start[p] and the read-back range.
	since := func(start func(p int32) int64) uint64 {
		n := uint64(0)
		for _, r := range rb.Rows {
			if r.Meta.Offset >= start(r.Meta.Partition) {
				n++
			}
		}
		for p, from := range rb.From {
			if st := start(p); st < from {
				n += uint64(from - st)
			}
		}
		return n
	}
	var next uint64
	if rec != nil {
		if adopt {
			s.adoptState(rec)
		}
		next = rec.WindowEndSeq + 1 + since(func(p int32) int64 { return rec.Next(p, rb.From[p]) })
		next -= min(next, rb.Ahead)
	} else {
		next = since(func(p int32) int64 { return rb.First[p] })
	}
	next = max(next, uint64(len(keep)))
	seq := next - uint64(len(keep))
	for _, r := range keep {
		if err := s.rec.UnmarshalBinary(rb.Arena[r.From:r.To]); err != nil {
			return fmt.Errorf("stream %s: read-back record %d/%d: %w", s.name, r.Meta.Partition, r.Meta.Offset, err)
		}
		meta := r.Meta
		meta.Seq = seq
		if s.win.Append(meta, &s.rec) {
			s.arena = append(s.arena, rb.Arena[r.From:r.To]...)
			s.valueEnd = append(s.valueEnd, len(s.arena))
			s.batch = append(s.batch, state.Record{Partition: meta.Partition, Offset: meta.Offset, Seq: seq, Time: meta.Time})
		}
		seq++
	}
	s.seq = next
	for p, o := range rb.UpTo {
		s.next[p] = o
	}
	s.posDirty = true
	s.windowGauge.Set(float64(s.win.Len()))
	s.lastEval = time.Now()
	s.log.Info("stream taken over", "window_records", s.win.Len(), "next_seq", s.seq, "positions", fmt.Sprint(rb.UpTo))
	return s.commit()
}
