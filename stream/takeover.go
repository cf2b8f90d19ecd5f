package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/odwatch/odwatch/stream/window"
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
			rb    *readBack
			rec   *stateRecord
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

// readBack is a window read back from Kafka: rows in the window's order,
// their records encoded in arena, and per partition the range read.
type readBack struct {
	rows  []readRow
	arena []byte
	first map[int32]int64 // the partitions' first offsets
	from  map[int32]int64
	upTo  map[int32]int64
	// ahead are the decodable records past upTo that the state record
	// counted (readBack).
	ahead uint64
}

type readRow struct {
	meta     window.RowMeta
	from, to int
}

// windowOrder is the order of a window's records: record time, then
// partition, then offset. It does not depend on which partition a fetch
// returned first.
func windowOrder(a, b window.RowMeta) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

// readBack reads, for each partition, the Window records before the
// group's committed offset (any of them may be among the last Window of the
// stream) — for a time window only those of the last Interval (see
// intervalStarts) —, decodes them (undecodable ones are skipped: the member
// that consumed them first counted and dead-lettered them) and orders them;
// applyTakeOver keeps the last Window. A partition without a committed
// offset starts at its first offset.
//
// With a state record (rec, may be nil) whose positions are past the
// group's committed offsets, the same read goes on up to them and counts
// the decodable records there (rb.ahead): the previous owner published the
// state of an evaluation before the offsets of the records it evaluated
// reached the group (offset commits lag the store by up to
// offsetCommitInterval, or a batch) and stopped in between (kill -9). The
// state record's count includes them; the new owner consumes them again
// from the committed offsets, so they are counted out of the window's
// sequence numbers (applyTakeOver).
func (s *streamRun) readBack(ctx context.Context, client *kafka.Client, parts map[int32]int64, rec *stateRecord) (*readBack, error) {
	topic := s.cfg.Topic
	var reqs []kafka.OffsetRequest
	for p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(int(p)), kafka.LastOffsetOf(int(p)))
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	rb := &readBack{first: map[int32]int64{}, from: map[int32]int64{}, upTo: map[int32]int64{}}
	aheadTo := map[int32]int64{} // the end of each partition's read: upTo, or the state's positions
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		p := int32(po.Partition)
		committed, ok := parts[p]
		if !ok {
			continue
		}
		upTo := po.FirstOffset
		if committed >= 0 {
			upTo = min(max(committed, po.FirstOffset), po.LastOffset)
		}
		rb.first[p], rb.upTo[p] = po.FirstOffset, upTo
		rb.from[p] = max(po.FirstOffset, upTo-int64(s.cfg.Window))
		aheadTo[p] = upTo
		if rec != nil {
			aheadTo[p] = max(upTo, min(stateNext(rec, p, upTo), po.LastOffset))
		}
	}
	if s.cfg.Interval > 0 {
		if err := s.intervalStarts(ctx, client, rb); err != nil {
			return nil, err
		}
	}
	var row decode.FlatRecord
	for p, upTo := range rb.upTo {
		err := readRange(ctx, client, topic, int(p), rb.from[p], aheadTo[p], func(r *kafka.Record) error {
			if ok, err := s.decodeReadBack(ctx, r, &row); !ok {
				return err
			}
			if r.Offset >= upTo {
				rb.ahead++
				return nil
			}
			from := len(rb.arena)
			rb.arena = row.AppendBinary(rb.arena)
			rb.rows = append(rb.rows, readRow{window.RowMeta{Partition: p, Offset: r.Offset, Time: r.Time}, from, len(rb.arena)})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(rb.rows, func(a, b readRow) int { return windowOrder(a.meta, b.meta) })
	s.log.Info("window read back from kafka", "records", len(rb.rows), "from", fmt.Sprint(rb.from), "to", fmt.Sprint(rb.upTo), "ahead", rb.ahead)
	return rb, nil
}

// decodeReadBack decodes a record read back into rec. It reports false
// for a record that does not decode (err nil when it is undecodable for
// good: the member that consumed it first counted and dead-lettered it,
// and gave it no sequence number).
func (s *streamRun) decodeReadBack(ctx context.Context, r *kafka.Record, rec *decode.FlatRecord) (bool, error) {
	if err := s.dec.Decode(ctx, fetch.ReadBytes(r.Value), rec); err != nil {
		if de := (*decode.DecodeError)(nil); errors.As(err, &de) && !de.Retryable() {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// intervalStarts narrows the read-back range of a time window to its last
// Interval. The window ends at the newest record time before the committed
// offsets, taken from the partitions' last records (record times rise
// within a partition as a rule); per partition, the records before the
// first one at or after that time minus Interval (ListOffsets by
// timestamp) are all older, so none of them is in the window. A record out
// of time order can only make the range larger than needed: the window's
// own eviction drops what is too old.
func (s *streamRun) intervalStarts(ctx context.Context, client *kafka.Client, rb *readBack) error {
	topic := s.cfg.Topic
	var newest time.Time
	for p, upTo := range rb.upTo {
		if upTo <= rb.from[p] {
			continue
		}
		err := readRange(ctx, client, topic, int(p), upTo-1, upTo, func(r *kafka.Record) error {
			fetch.ReadBytes(r.Value)
			if r.Time.After(newest) {
				newest = r.Time
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if newest.IsZero() {
		return nil
	}
	cutoff := newest.Add(-s.cfg.Interval)
	var reqs []kafka.OffsetRequest
	for p := range rb.upTo {
		reqs = append(reqs, kafka.TimeOffsetOf(int(p), cutoff))
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return fmt.Errorf("offsets of %s at %v: %w", topic, cutoff, err)
	}
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return fmt.Errorf("offsets of %s/%d at %v: %w", topic, po.Partition, cutoff, po.Error)
		}
		p := int32(po.Partition)
		upTo, ok := rb.upTo[p]
		if !ok {
			continue
		}
		for off := range po.Offsets { // one: the first offset at or after cutoff
			if off < 0 {
				off = upTo // every record is older
			}
			rb.from[p] = max(rb.from[p], min(off, upTo))
		}
	}
	return nil
}

// readRange calls fn with the records of a partition in [from, upTo).
func readRange(ctx context.Context, client *kafka.Client, topic string, partition int, from, upTo int64, fn func(*kafka.Record) error) error {
	for off := from; off < upTo; {
		res, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: partition, Offset: off, MinBytes: 1, MaxBytes: fetch.MaxBytes, MaxWait: fetch.MaxWait})
		if err == nil && res.Error != nil {
			err = res.Error
		}
		if err != nil {
			return fmt.Errorf("read back %s/%d at %d: %w", topic, partition, off, err)
		}
		n := 0
		for off < upTo {
			r, err := res.Records.ReadRecord()
			if err != nil {
				break
			}
			if r.Offset < off || r.Offset >= upTo {
				fetch.ReadBytes(r.Key)
				fetch.ReadBytes(r.Value)
				if r.Offset >= upTo {
					off = upTo
				}
				continue
			}
			n++
			off = r.Offset + 1
			fetch.ReadBytes(r.Key)
			if err := fn(r); err != nil {
				return fmt.Errorf("read back %s/%d at %d: %w", topic, partition, r.Offset, err)
			}
		}
		if n == 0 && off < upTo {
			// Nothing readable before upTo (only transaction markers,
			// or a gap the broker skips): the window holds what was read.
			return nil
		}
	}
	return nil
}

// applyTakeOver makes the read-back window the stream's: the stale window
// (if any) is dropped, the state topic's tracker adopted (when newer than
// the store's), and the rows get arrival sequence numbers that continue
// the stream's count, so that the evaluations fall at the window ends an
// uninterrupted member would have evaluated. With a state record the count
// is its window end plus the decodable records past the positions of that
// evaluation (NextOffsets) up to the committed offsets, minus those past
// the committed offsets up to its positions (rb.ahead: published before
// the group's offsets reached them); without one it is the records since
// the partitions' first offsets. Records between the state's positions and
// the read-back range count by their offsets. The count is the group's
// whatever this member's own tracker holds: when that one is newer (its
// publish was lost), its checks up to its window end are skipped as
// evaluated before (runCheck). The rebuilt window and the positions are
// committed to the store at once.
func (s *streamRun) applyTakeOver(rb *readBack, rec *stateRecord, adopt bool) error {
	if len(s.next) > 0 || s.win.Len() > 0 {
		if err := s.drop("taken over from the group's committed offsets"); err != nil {
			return err
		}
	}
	keep := rb.rows[max(0, len(rb.rows)-s.cfg.Window):]
	// since returns the read records at or past start[p], plus the
	// unread offsets between start[p] and the read-back range.
	since := func(start func(p int32) int64) uint64 {
		n := uint64(0)
		for _, r := range rb.rows {
			if r.meta.Offset >= start(r.meta.Partition) {
				n++
			}
		}
		for p, from := range rb.from {
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
		next = rec.WindowEndSeq + 1 + since(func(p int32) int64 { return stateNext(rec, p, rb.from[p]) })
		next -= min(next, rb.ahead)
	} else {
		next = since(func(p int32) int64 { return rb.first[p] })
	}
	next = max(next, uint64(len(keep)))
	seq := next - uint64(len(keep))
	for _, r := range keep {
		if err := s.rec.UnmarshalBinary(rb.arena[r.from:r.to]); err != nil {
			return fmt.Errorf("stream %s: read-back record %d/%d: %w", s.name, r.meta.Partition, r.meta.Offset, err)
		}
		meta := r.meta
		meta.Seq = seq
		if s.win.Append(meta, &s.rec) {
			s.arena = append(s.arena, rb.arena[r.from:r.to]...)
			s.valueEnd = append(s.valueEnd, len(s.arena))
			s.batch = append(s.batch, state.Record{Partition: meta.Partition, Offset: meta.Offset, Seq: seq, Time: meta.Time})
		}
		seq++
	}
	s.seq = next
	for p, o := range rb.upTo {
		s.next[p] = o
	}
	s.posDirty = true
	s.windowGauge.Set(float64(s.win.Len()))
	s.lastEval = time.Now()
	s.log.Info("stream taken over", "window_records", s.win.Len(), "next_seq", s.seq, "positions", fmt.Sprint(rb.upTo))
	return s.commit()
}

// stateNext is the state record's next offset of partition p; def when it
// has none.
func stateNext(rec *stateRecord, p int32, def int64) int64 {
	if o, ok := rec.NextOffsets[strconv.Itoa(int(p))]; ok {
		return o
	}
	return def
}
