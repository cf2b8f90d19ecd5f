package state

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// OutboxEvent is an event awaiting delivery; ID is its deterministic id.
type OutboxEvent struct {
	ID      string
	Payload []byte
}

// Evaluation is what one window evaluation persists, in one synced batch.
type Evaluation struct {
	Stream       string
	WindowEnd    uint64        // seq of the last record in the evaluated window
	TrackerState []byte        // opaque (package alerts)
	Events       []OutboxEvent // events produced by this evaluation, to be delivered
}

func appendTime(b []byte, t time.Time) []byte {
	ns := int64(math.MinInt64) // zero time
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(b, uint64(ns))
}

func decodeTime(b []byte) time.Time {
	ns := int64(binary.BigEndian.Uint64(b))
	if ns == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// SaveEvaluation stores the tracker state and the new events of one
// evaluation in one synced batch (the rules' history is the status
// history's, AppendHistory). An event whose ID is already
// pending or delivered is skipped, so replaying an evaluation after a crash
// does not deliver its events twice.
func (s *Store) SaveEvaluation(e *Evaluation) error {
	release, err := s.acquireStream("save evaluation", e.Stream)
	if err != nil {
		return err
	}
	defer release()
	for i := range e.Events {
		if e.Events[i].ID == "" {
			return fmt.Errorf("state: save evaluation %s: %w: empty event id", e.Stream, ErrInvalid)
		}
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	b := s.db.NewBatch()
	defer b.Close()

	tv := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(e.TrackerState)), e.WindowEnd)
	tv = append(tv, e.TrackerState...)
	if err := b.Set(trackerKey(e.Stream), tv, nil); err != nil {
		return fmt.Errorf("state: save evaluation %s: %w", e.Stream, err)
	}
	if len(e.Events) > 0 {
		order, err := s.nextOutboxOrder(e.Stream)
		if err != nil {
			return err
		}
		seen := make(map[string]bool, len(e.Events))
		for i := range e.Events {
			ev := &e.Events[i]
			if seen[ev.ID] {
				continue
			}
			seen[ev.ID] = true
			known, err := s.knownEvent(e.Stream, ev.ID)
			if err != nil {
				return err
			}
			if known {
				continue
			}
			ov := binary.AppendUvarint(make([]byte, 0, 4+len(ev.ID)+len(ev.Payload)), uint64(len(ev.ID)))
			ov = append(ov, ev.ID...)
			ov = append(ov, ev.Payload...)
			if err := b.Set(outboxKey(e.Stream, order), ov, nil); err != nil {
				return fmt.Errorf("state: save evaluation %s: %w", e.Stream, err)
			}
			if err := b.Set(idKey(pfxPending, e.Stream, ev.ID), binary.BigEndian.AppendUint64(nil, order), nil); err != nil {
				return fmt.Errorf("state: save evaluation %s: %w", e.Stream, err)
			}
			order++
		}
	}
	return s.commit(b, "evaluation", e.Stream)
}

// nextOutboxOrder returns one past the highest pending order of stream, so
// new events sort after every pending one.
func (s *Store) nextOutboxOrder(stream string) (uint64, error) {
	lower := streamPrefix(pfxOutbox, stream)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return 0, s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	var next uint64
	if it.Last() {
		k := it.Key()
		if len(k) != len(lower)+8 {
			_ = it.Close()
			return 0, fmt.Errorf("state %s: outbox key %q: %w", s.dir, k, ErrCorrupt)
		}
		next = binary.BigEndian.Uint64(k[len(lower):]) + 1
	}
	if err := it.Close(); err != nil {
		return 0, s.storeErr(fmt.Errorf("state %s: outbox of %s: %w", s.dir, stream, err))
	}
	return next, nil
}

func (s *Store) knownEvent(stream, id string) (bool, error) {
	for _, pfx := range []string{pfxPending, pfxDelivered} {
		_, ok, err := s.get(idKey(pfx, stream, id))
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// LoadTracker returns the tracker state saved by the last SaveEvaluation of
// stream and its window end; nil, 0, nil when none was saved.
func (s *Store) LoadTracker(stream string) ([]byte, uint64, error) {
	release, err := s.acquireStream("load tracker", stream)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	v, ok, err := s.get(trackerKey(stream))
	if err != nil || !ok {
		return nil, 0, err
	}
	if len(v) < 8 {
		return nil, 0, fmt.Errorf("state %s: tracker of %s: %w", s.dir, stream, ErrCorrupt)
	}
	return v[8:], binary.BigEndian.Uint64(v), nil
}

// PendingEvents returns the events of stream saved but not yet marked
// delivered, in save order.
func (s *Store) PendingEvents(stream string) ([]OutboxEvent, error) {
	release, err := s.acquireStream("pending events", stream)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []OutboxEvent
	lower := streamPrefix(pfxOutbox, stream)
	err = s.scanPrefix(context.Background(), lower, prefixEnd(lower), func(k, v []byte) error {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return fmt.Errorf("state %s: outbox entry %q: %w", s.dir, k, ErrCorrupt)
		}
		id := string(v[w : w+int(n)])
		out = append(out, OutboxEvent{ID: id, Payload: append([]byte(nil), v[w+int(n):]...)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarkDelivered removes ids from the outbox of stream and records that they
// were delivered, in one synced batch. Unknown ids are recorded as delivered
// too (a sink may deliver before a crash loses the outbox entry's removal).
func (s *Store) MarkDelivered(stream string, ids []string) error {
	release, err := s.acquireStream("mark delivered", stream)
	if err != nil {
		return err
	}
	defer release()
	if len(ids) == 0 {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	now := appendTime(nil, time.Now())
	for _, id := range ids {
		if id == "" {
			return fmt.Errorf("state: mark delivered %s: %w: empty event id", stream, ErrInvalid)
		}
		pk := idKey(pfxPending, stream, id)
		ov, ok, err := s.get(pk)
		if err != nil {
			return err
		}
		if ok {
			if len(ov) != 8 {
				return fmt.Errorf("state %s: pending id %q: %w", s.dir, id, ErrCorrupt)
			}
			if err := b.Delete(outboxKey(stream, binary.BigEndian.Uint64(ov)), nil); err != nil {
				return fmt.Errorf("state: mark delivered %s: %w", stream, err)
			}
			if err := b.Delete(pk, nil); err != nil {
				return fmt.Errorf("state: mark delivered %s: %w", stream, err)
			}
		}
		if err := b.Set(idKey(pfxDelivered, stream, id), now, nil); err != nil {
			return fmt.Errorf("state: mark delivered %s: %w", stream, err)
		}
	}
	return s.commit(b, "delivered", stream)
}

// Delivered reports whether id was marked delivered for stream.
func (s *Store) Delivered(stream, id string) (bool, error) {
	release, err := s.acquireStream("delivered", stream)
	if err != nil {
		return false, err
	}
	defer release()
	_, ok, err := s.get(idKey(pfxDelivered, stream, id))
	return ok, err
}

// DropLegacyHistory deletes the per-dependency error history (h/ keys)
// that older versions wrote with every evaluation, besides the status
// history that holds the same points: one range deletion, written only
// when the stream has such keys.
func (s *Store) DropLegacyHistory(stream string) error {
	release, err := s.acquireStream("drop legacy history", stream)
	if err != nil {
		return err
	}
	defer release()
	lower := streamPrefix(pfxHistory, stream)
	upper := prefixEnd(lower)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	any := it.First()
	if err := it.Close(); err != nil {
		return s.storeErr(fmt.Errorf("state %s: legacy history of %s: %w", s.dir, stream, err))
	}
	if !any {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return fmt.Errorf("state: drop legacy history %s: %w", stream, err)
	}
	return s.commit(b, "prune", stream)
}

// PruneDelivered forgets delivered markers of stream recorded before
// cutoff. A marker only matters while an evaluation that produced its event
// can still be replayed (the window after a crash), so markers older than a
// few windows can go.
func (s *Store) PruneDelivered(stream string, cutoff time.Time) error {
	release, err := s.acquireStream("prune delivered", stream)
	if err != nil {
		return err
	}
	defer release()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	lower := streamPrefix(pfxDelivered, stream)
	err = s.scanPrefix(context.Background(), lower, prefixEnd(lower), func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("state %s: delivered marker %q: %w", s.dir, k, ErrCorrupt)
		}
		if decodeTime(v).Before(cutoff) {
			return b.Delete(k, nil) // Delete copies k
		}
		return nil
	})
	if err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	return s.commit(b, "prune", stream)
}
