package state

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// HistoryPoint is the error of one tracked dependency in one evaluated window.
type HistoryPoint struct {
	DependencyID string
	WindowEnd    uint64 // seq of the last record of the evaluated window
	Error        float64
	Time         time.Time
}

// OutboxEvent is an event awaiting delivery; ID is its deterministic id.
type OutboxEvent struct {
	ID      string
	Payload []byte
}

// Evaluation is what one window evaluation persists, in one synced batch.
type Evaluation struct {
	Stream       string
	WindowEnd    uint64 // seq of the last record in the evaluated window
	TrackerState []byte // opaque (package alerts)
	History      []HistoryPoint
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

// SaveEvaluation stores the tracker state, the history points and the new
// events of one evaluation in one synced batch. An event whose ID is already
// pending or delivered is skipped, so replaying an evaluation after a crash
// does not deliver its events twice.
func (s *Store) SaveEvaluation(e *Evaluation) error {
	release, err := s.acquireStream("save evaluation", e.Stream)
	if err != nil {
		return err
	}
	defer release()
	for i := range e.History {
		if err := checkName("dependency id", e.History[i].DependencyID); err != nil {
			return fmt.Errorf("state: save evaluation %s: %w", e.Stream, err)
		}
	}
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
	var hv []byte
	for i := range e.History {
		h := &e.History[i]
		k := binary.BigEndian.AppendUint64(historyDepPrefix(e.Stream, h.DependencyID), h.WindowEnd)
		hv = binary.BigEndian.AppendUint64(hv[:0], math.Float64bits(h.Error))
		hv = appendTime(hv, h.Time)
		if err := b.Set(k, hv, nil); err != nil {
			return fmt.Errorf("state: save evaluation %s: %w", e.Stream, err)
		}
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

// History returns up to limit points of one dependency of stream, newest
// (highest window end) first. limit <= 0 means all.
func (s *Store) History(stream, dependencyID string, limit int) ([]HistoryPoint, error) {
	release, err := s.acquireStream("history", stream)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := checkName("dependency id", dependencyID); err != nil {
		return nil, fmt.Errorf("state: history: %w", err)
	}
	lower := historyDepPrefix(stream, dependencyID)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return nil, s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	var out []HistoryPoint
	var ferr error
	for ok := it.Last(); ok && (limit <= 0 || len(out) < limit); ok = it.Prev() {
		k := it.Key()
		v, err := it.ValueAndErr()
		if err != nil {
			ferr = s.storeErr(fmt.Errorf("state %s: history %q: %w", s.dir, k, err))
			break
		}
		if len(k) != len(lower)+8 || len(v) != 16 {
			ferr = fmt.Errorf("state %s: history %q: %w", s.dir, k, ErrCorrupt)
			break
		}
		out = append(out, HistoryPoint{
			DependencyID: dependencyID,
			WindowEnd:    binary.BigEndian.Uint64(k[len(lower):]),
			Error:        math.Float64frombits(binary.BigEndian.Uint64(v)),
			Time:         decodeTime(v[8:]),
		})
	}
	if err := it.Close(); err != nil && ferr == nil {
		ferr = s.storeErr(fmt.Errorf("state %s: history of %s: %w", s.dir, stream, err))
	}
	if ferr != nil {
		return nil, ferr
	}
	return out, nil
}

// PruneHistory keeps the newest keepPerDependency points of every dependency
// of stream and deletes older ones (one range deletion per dependency).
func (s *Store) PruneHistory(stream string, keepPerDependency int) error {
	release, err := s.acquireStream("prune history", stream)
	if err != nil {
		return err
	}
	defer release()
	if keepPerDependency < 0 {
		keepPerDependency = 0
	}
	lower := streamPrefix(pfxHistory, stream)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	b := s.db.NewBatch()
	defer b.Close()
	// Walk backwards: per dependency, the first keep keys seen are the
	// newest; the (keep+1)-th is the newest one to drop, so everything from
	// the dependency's prefix up to and including it goes in one range.
	var curDep []byte
	seen := 0
	var ferr error
	for ok := it.Last(); ok; ok = it.Prev() {
		k := it.Key()
		if len(k) < len(lower)+9 {
			ferr = fmt.Errorf("state %s: history key %q: %w", s.dir, k, ErrCorrupt)
			break
		}
		depPfx := k[:len(k)-8]
		if curDep == nil || string(depPfx) != string(curDep) {
			curDep = append(curDep[:0], depPfx...)
			seen = 0
		}
		seen++
		if seen == keepPerDependency+1 {
			end := append(append([]byte(nil), k...), 0) // just past k
			if err := b.DeleteRange(append([]byte(nil), depPfx...), end, nil); err != nil {
				ferr = fmt.Errorf("state: prune history %s: %w", stream, err)
				break
			}
			// Skip the rest of this dependency's older points.
			if !it.SeekLT(depPfx) {
				break
			}
			// SeekLT positioned on the previous dependency's newest key;
			// step forward so the loop's Prev lands on it again.
			it.Next()
		}
	}
	if err := it.Close(); err != nil && ferr == nil {
		ferr = s.storeErr(fmt.Errorf("state %s: prune history of %s: %w", s.dir, stream, err))
	}
	if ferr != nil {
		return ferr
	}
	if b.Empty() {
		return nil
	}
	return s.commit(b, "prune", stream)
}

// PruneHistoryBefore deletes every history point of stream with a window end
// below windowEnd, for all dependencies (including retired ones). It seeks
// from one dependency to the next and writes one range deletion per
// dependency, so its cost grows with the number of dependencies, not points:
// cheap enough to call after every evaluation.
func (s *Store) PruneHistoryBefore(stream string, windowEnd uint64) error {
	release, err := s.acquireStream("prune history", stream)
	if err != nil {
		return err
	}
	defer release()
	lower := streamPrefix(pfxHistory, stream)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	b := s.db.NewBatch()
	defer b.Close()
	var ferr error
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < len(lower)+9 {
			ferr = fmt.Errorf("state %s: history key %q: %w", s.dir, k, ErrCorrupt)
			break
		}
		depPfx := append([]byte(nil), k[:len(k)-8]...)
		if binary.BigEndian.Uint64(k[len(k)-8:]) < windowEnd {
			end := binary.BigEndian.AppendUint64(append([]byte(nil), depPfx...), windowEnd)
			if err := b.DeleteRange(depPfx, end, nil); err != nil {
				ferr = fmt.Errorf("state: prune history %s: %w", stream, err)
				break
			}
		}
		ok = it.SeekGE(prefixEnd(depPfx)) // next dependency
	}
	if err := it.Close(); err != nil && ferr == nil {
		ferr = s.storeErr(fmt.Errorf("state %s: prune history of %s: %w", s.dir, stream, err))
	}
	if ferr != nil {
		return ferr
	}
	if b.Empty() {
		return nil
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
