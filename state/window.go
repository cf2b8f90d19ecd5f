package state

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Record is one window record of a stream.
type Record struct {
	Stream    string
	Partition int32
	Offset    int64
	Seq       uint64    // stream-wide arrival sequence number assigned by the stream
	Time      time.Time // Kafka record timestamp
	Value     []byte    // opaque encoded flattened record (stream's encoding)
}

// Commit is one synced batch for one fetch: records appended (a redelivered
// record with the same stream/partition/offset overwrites itself), the
// stream's next offsets per partition and its next Seq in the same batch,
// and eviction of records that left the window (offsets < EvictBelow[p]).
// Partitions absent from NextOffset keep their stored position, unless
// ForgetPositions deletes every stored position of the stream first.
type Commit struct {
	Stream     string
	Records    []Record // Record.Stream may be empty (means Commit.Stream)
	NextOffset map[int32]int64
	NextSeq    uint64
	EvictBelow map[int32]int64 // optional
	// ForgetPositions deletes the stream's stored next offsets before
	// NextOffset is written (a stream that dropped its window has none).
	ForgetPositions bool
}

// record value flags.
const flagHasTime = 1

// appendRecordValue encodes Seq, Time and Value compactly: a flags byte,
// uvarint seq, varint unix nanos when the time is set, then the value bytes.
func appendRecordValue(b []byte, r *Record) []byte {
	var flags byte
	if !r.Time.IsZero() {
		flags |= flagHasTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, r.Seq)
	if flags&flagHasTime != 0 {
		b = binary.AppendVarint(b, r.Time.UnixNano())
	}
	return append(b, r.Value...)
}

// decodeRecord fills r from a window key (after the stream prefix) and value.
// r.Value aliases v.
func decodeRecord(r *Record, keySuffix, v []byte) error {
	if len(keySuffix) != 12 {
		return fmt.Errorf("%w: window key suffix of %d bytes", ErrCorrupt, len(keySuffix))
	}
	r.Partition = int32(binary.BigEndian.Uint32(keySuffix))
	r.Offset = int64(binary.BigEndian.Uint64(keySuffix[4:]))
	if len(v) < 2 {
		return fmt.Errorf("%w: window value of %d bytes", ErrCorrupt, len(v))
	}
	flags := v[0]
	v = v[1:]
	seq, n := binary.Uvarint(v)
	if n <= 0 {
		return fmt.Errorf("%w: bad record seq", ErrCorrupt)
	}
	r.Seq = seq
	v = v[n:]
	r.Time = time.Time{}
	if flags&flagHasTime != 0 {
		ns, n := binary.Varint(v)
		if n <= 0 {
			return fmt.Errorf("%w: bad record time", ErrCorrupt)
		}
		r.Time = time.Unix(0, ns)
		v = v[n:]
	}
	r.Value = v
	return nil
}

// Apply writes c as one Pebble batch committed with Sync. Nothing of c is
// durable before Apply returns nil; on error nothing of c is applied.
func (s *Store) Apply(c *Commit) error {
	release, err := s.acquireStream("apply", c.Stream)
	if err != nil {
		return err
	}
	defer release()
	b, err := s.applyBatch(c)
	if err != nil {
		return err
	}
	defer b.Close()
	return s.commit(b, "apply", c.Stream)
}

// ApplyNoSyncWait writes c as Apply does but returns once c is applied
// (readable), before the write-ahead log holding it is synced. wait blocks
// until it is: nothing of c is durable before wait returns nil. The log is
// written in commit order, so a synced commit made after ApplyNoSyncWait
// returned (Apply, SaveEvaluation, or a wait) makes c durable too. wait
// must be called exactly once, before the store is closed.
func (s *Store) ApplyNoSyncWait(c *Commit) (wait func() error, err error) {
	release, err := s.acquireStream("apply", c.Stream)
	if err != nil {
		return nil, err
	}
	defer release()
	b, err := s.applyBatch(c)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := s.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		b.Close()
		return nil, s.storeErr(fmt.Errorf("state: apply %s: commit to %s: %w", c.Stream, s.dir, err))
	}
	return func() error {
		defer b.Close()
		if err := b.SyncWait(); err != nil {
			return s.storeErr(fmt.Errorf("state: apply %s: sync %s: %w", c.Stream, s.dir, err))
		}
		return s.synced(start, "apply")
	}, nil
}

// applyBatch builds the Pebble batch of c.
func (s *Store) applyBatch(c *Commit) (_ *pebble.Batch, err error) {
	b := s.db.NewBatch()
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	var key, val []byte
	for i := range c.Records {
		r := &c.Records[i]
		if r.Stream != "" && r.Stream != c.Stream {
			return nil, fmt.Errorf("state: apply %s: %w: record of stream %q", c.Stream, ErrInvalid, r.Stream)
		}
		if r.Partition < 0 || r.Offset < 0 {
			return nil, fmt.Errorf("state: apply %s: %w: negative partition/offset %d/%d",
				c.Stream, ErrInvalid, r.Partition, r.Offset)
		}
		key = appendWindowKey(key[:0], c.Stream, r.Partition, r.Offset)
		val = appendRecordValue(val[:0], r)
		// Batch.Set copies key and value, so the scratch buffers are reused.
		if err := b.Set(key, val, nil); err != nil {
			return nil, fmt.Errorf("state: apply %s: %w", c.Stream, err)
		}
	}
	if c.ForgetPositions {
		// Before this commit's positions, which it would delete too if
		// it came after them (a range deletion carries a higher sequence
		// number than the batch's earlier writes).
		lower := streamPrefix(pfxOffset, c.Stream)
		if err := b.DeleteRange(lower, prefixEnd(lower), nil); err != nil {
			return nil, fmt.Errorf("state: apply %s: %w", c.Stream, err)
		}
	}
	var num [8]byte
	for p, off := range c.NextOffset {
		if p < 0 || off < 0 {
			return nil, fmt.Errorf("state: apply %s: %w: negative next offset %d/%d", c.Stream, ErrInvalid, p, off)
		}
		binary.BigEndian.PutUint64(num[:], uint64(off))
		if err := b.Set(partitionOffsetKey(pfxOffset, c.Stream, p), num[:], nil); err != nil {
			return nil, fmt.Errorf("state: apply %s: %w", c.Stream, err)
		}
	}
	binary.BigEndian.PutUint64(num[:], c.NextSeq)
	if err := b.Set(seqKey(c.Stream), num[:], nil); err != nil {
		return nil, fmt.Errorf("state: apply %s: %w", c.Stream, err)
	}
	// Range deletions come last in the batch: they carry higher sequence
	// numbers, so records of this same commit below the bound are removed too.
	for p, below := range c.EvictBelow {
		if p < 0 || below <= 0 {
			continue
		}
		start := appendWindowKey(nil, c.Stream, p, 0)
		end := appendWindowKey(nil, c.Stream, p, below)
		if err := b.DeleteRange(start, end, nil); err != nil {
			return nil, fmt.Errorf("state: apply %s: %w", c.Stream, err)
		}
	}
	return b, nil
}

func (s *Store) commit(b *pebble.Batch, op, stream string) error {
	start := time.Now()
	if err := b.Commit(pebble.Sync); err != nil {
		return s.storeErr(fmt.Errorf("state: %s %s: commit to %s: %w", op, stream, s.dir, err))
	}
	return s.synced(start, op)
}

// synced finishes a synced commit of op started at start.
func (s *Store) synced(start time.Time, op string) error {
	// Pebble reports some write failures (a failed WAL write) only through
	// Logger.Fatalf, and then returns from the commit as if it succeeded.
	if err := s.fail.get(); err != nil {
		return err
	}
	if err := s.wal.update(); err != nil {
		// The commit is durable; only the truncation check of the next
		// Open is weaker.
		s.log.Warn("could not update the write-ahead log mark; a truncated log may go unnoticed", "err", err)
	}
	s.metrics.commitDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	return nil
}

// Position returns the stored next offset per partition and the next arrival
// sequence number of stream; an empty map and 0 for a stream never applied.
func (s *Store) Position(stream string) (map[int32]int64, uint64, error) {
	release, err := s.acquireStream("position", stream)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	next := make(map[int32]int64)
	lower := streamPrefix(pfxOffset, stream)
	err = s.scanPrefix(context.Background(), lower, prefixEnd(lower), func(k, v []byte) error {
		if len(k) != len(lower)+4 || len(v) != 8 {
			return fmt.Errorf("state %s: position key %q: %w", s.dir, k, ErrCorrupt)
		}
		next[int32(binary.BigEndian.Uint32(k[len(lower):]))] = int64(binary.BigEndian.Uint64(v))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	v, ok, err := s.get(seqKey(stream))
	if err != nil || !ok {
		return next, 0, err
	}
	if len(v) != 8 {
		return nil, 0, fmt.Errorf("state %s: next seq of %s: %w", s.dir, stream, ErrCorrupt)
	}
	return next, binary.BigEndian.Uint64(v), nil
}

// ScanWindow calls fn for every stored record of stream in (partition,
// offset) order. The Record's Value is only valid during the call. A non-nil
// error from fn or ctx stops the scan and is returned.
func (s *Store) ScanWindow(ctx context.Context, stream string, fn func(Record) error) error {
	release, err := s.acquireStream("scan", stream)
	if err != nil {
		return err
	}
	defer release()
	lower := streamPrefix(pfxWindow, stream)
	r := Record{Stream: stream}
	return s.scanPrefix(ctx, lower, prefixEnd(lower), func(k, v []byte) error {
		if err := decodeRecord(&r, k[len(lower):], v); err != nil {
			return fmt.Errorf("state %s: record %q: %w", s.dir, k, err)
		}
		return fn(r)
	})
}

// WindowCount returns the number of stored records of stream (a key-only
// scan).
func (s *Store) WindowCount(stream string) (int, error) {
	release, err := s.acquireStream("count", stream)
	if err != nil {
		return 0, err
	}
	defer release()
	lower := streamPrefix(pfxWindow, stream)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return 0, s.storeErr(fmt.Errorf("state %s: iterate: %w", s.dir, err))
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, s.storeErr(fmt.Errorf("state %s: count %s: %w", s.dir, stream, err))
	}
	return n, nil
}
