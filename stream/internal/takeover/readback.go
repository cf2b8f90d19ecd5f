package takeover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/odwatch/odwatch/stream/window"
	"github.com/segmentio/kafka-go"
)

// ReadBack is a window read back from Kafka: rows in the window's order,
// their records encoded in Arena, and per partition the range read.
type ReadBack struct {
	Rows  []Row
	Arena []byte
	First map[int32]int64 // the partitions' first offsets
	From  map[int32]int64
	UpTo  map[int32]int64
	// Ahead are the decodable records past UpTo that the state record
	// counted (Read).
	Ahead uint64
}

// Row is a record read back: where it came from, and its encoded record
// (decode.FlatRecord.AppendBinary) at Arena[From:To].
type Row struct {
	Meta     window.RowMeta
	From, To int
}

// Source is the stream whose window is read back.
type Source struct {
	Topic    string
	Window   int
	Interval time.Duration
	Decoder  decode.Decoder
	Log      *slog.Logger
}

// windowOrder is the order of a window's records: record time, then
// partition, then offset. It does not depend on which partition a fetch
// returned first.
func windowOrder(a, b window.RowMeta) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

// Read reads, for each partition, the Window records before the group's
// committed offset (any of them may be among the last Window of the
// stream) — for a time window only those of the last Interval (see
// intervalStarts) —, decodes them (undecodable ones are skipped: the member
// that consumed them first counted and dead-lettered them) and orders
// them; stream's applyTakeOver keeps the last Window. A partition without
// a committed offset starts at its first offset.
//
// With a state record (rec, may be nil) whose positions are past the
// group's committed offsets, the same read goes on up to them and counts
// the decodable records there (rb.Ahead): the previous owner published the
// state of an evaluation before the offsets of the records it evaluated
// reached the group (offset commits lag the store by up to the consumer's
// commit interval, or a batch) and stopped in between (kill -9). The state
// record's count includes them; the new owner consumes them again from the
// committed offsets, so they are counted out of the window's sequence
// numbers (stream's applyTakeOver).
func Read(ctx context.Context, client *kafka.Client, s Source, parts map[int32]int64, rec *StateRecord) (*ReadBack, error) {
	topic := s.Topic
	var reqs []kafka.OffsetRequest
	for p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(int(p)), kafka.LastOffsetOf(int(p)))
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	rb := &ReadBack{First: map[int32]int64{}, From: map[int32]int64{}, UpTo: map[int32]int64{}}
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
		rb.First[p], rb.UpTo[p] = po.FirstOffset, upTo
		rb.From[p] = max(po.FirstOffset, upTo-int64(s.Window))
		aheadTo[p] = upTo
		if rec != nil {
			aheadTo[p] = max(upTo, min(rec.Next(p, upTo), po.LastOffset))
		}
	}
	if s.Interval > 0 {
		if err := s.intervalStarts(ctx, client, rb); err != nil {
			return nil, err
		}
	}
	var row decode.FlatRecord
	for p, upTo := range rb.UpTo {
		err := readRange(ctx, client, topic, int(p), rb.From[p], aheadTo[p], func(r *kafka.Record) error {
			if ok, err := s.decodeReadBack(ctx, r, &row); !ok {
				return err
			}
			if r.Offset >= upTo {
				rb.Ahead++
				return nil
			}
			from := len(rb.Arena)
			rb.Arena = row.AppendBinary(rb.Arena)
			rb.Rows = append(rb.Rows, Row{window.RowMeta{Partition: p, Offset: r.Offset, Time: r.Time}, from, len(rb.Arena)})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(rb.Rows, func(a, b Row) int { return windowOrder(a.Meta, b.Meta) })
	s.Log.Info("window read back from kafka", "records", len(rb.Rows), "from", fmt.Sprint(rb.From), "to", fmt.Sprint(rb.UpTo), "ahead", rb.Ahead)
	return rb, nil
}

// decodeReadBack decodes a record read back into rec. It reports false
// for a record that does not decode (err nil when it is undecodable for
// good: the member that consumed it first counted and dead-lettered it,
// and gave it no sequence number).
func (s Source) decodeReadBack(ctx context.Context, r *kafka.Record, rec *decode.FlatRecord) (bool, error) {
	if err := s.Decoder.Decode(ctx, fetch.ReadBytes(r.Value), rec); err != nil {
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
func (s Source) intervalStarts(ctx context.Context, client *kafka.Client, rb *ReadBack) error {
	topic := s.Topic
	var newest time.Time
	for p, upTo := range rb.UpTo {
		if upTo <= rb.From[p] {
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
	cutoff := newest.Add(-s.Interval)
	var reqs []kafka.OffsetRequest
	for p := range rb.UpTo {
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
		upTo, ok := rb.UpTo[p]
		if !ok {
			continue
		}
		for off := range po.Offsets { // one: the first offset at or after cutoff
			if off < 0 {
				off = upTo // every record is older
			}
			rb.From[p] = max(rb.From[p], min(off, upTo))
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

// Next is the state record's next offset of partition p; def when it has
// none.
func (rec *StateRecord) Next(p int32, def int64) int64 {
	if o, ok := rec.NextOffsets[strconv.Itoa(int(p))]; ok {
		return o
	}
	return def
}
