package kafkaread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"
)

// Bound is one end of a topic range to read: an offset (the same
// for every partition), a time (per partition, the first offset whose
// record time is at or after it), or neither (the partition's first offset
// for a start, its end at the time of the call for an end).
type Bound struct {
	Offset int64
	Time   time.Time
	// IsOffset says Offset is set; otherwise Time, when not zero.
	IsOffset bool
}

// Record is one record of a topic range: where it is and its value.
type Record struct {
	Partition int32
	Offset    int64
	Time      time.Time
	Value     []byte
}

// ReadRange reads every partition of topic from `from` (inclusive) to
// `to` (exclusive) and calls fn for each record in (time, partition,
// offset) order, merging the partitions as it goes: the order in which the
// monitor reads a window back on takeover. The value passed to fn is only
// valid during the call. dialer may be nil (plaintext).
func ReadRange(ctx context.Context, brokers []string, dialer *kafka.Dialer, topic string, from, to Bound, fn func(Record) error) error {
	tr := Transport(dialer)
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second, Transport: tr}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		if len(md.Topics) == 1 {
			err = md.Topics[0].Error
		}
		return fmt.Errorf("topic %s: %w", topic, err)
	}
	var cursors []*partCursor
	for _, p := range md.Topics[0].Partitions {
		lo, hi, err := partitionRange(ctx, client, topic, p.ID, from, to)
		if err != nil {
			return err
		}
		if lo < hi {
			cursors = append(cursors, &partCursor{client: client, topic: topic, partition: p.ID, next: lo, end: hi})
		}
	}
	// heads[i] is cursor i's next record (nil once it is done).
	heads := make([]*Record, len(cursors))
	for i, c := range cursors {
		if heads[i], err = c.read(ctx); err != nil {
			return err
		}
	}
	for {
		best := -1
		for i, h := range heads {
			if h == nil {
				continue
			}
			if best < 0 || before(h, heads[best]) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		if err := fn(*heads[best]); err != nil {
			return err
		}
		if heads[best], err = cursors[best].read(ctx); err != nil {
			return err
		}
	}
}

// before orders records by time, then partition, then offset.
func before(a, b *Record) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Offset < b.Offset
}

// partitionRange resolves the bounds for one partition: [lo, hi).
func partitionRange(ctx context.Context, client *kafka.Client, topic string, p int, from, to Bound) (lo, hi int64, err error) {
	reqs := []kafka.OffsetRequest{kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p)}
	if !from.IsOffset && !from.Time.IsZero() {
		reqs = append(reqs, kafka.TimeOffsetOf(p, from.Time))
	}
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, p, err)
	}
	var po kafka.PartitionOffsets
	for _, x := range res.Topics[topic] {
		if x.Partition == p {
			po = x
		}
	}
	if po.Error != nil {
		return 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, p, po.Error)
	}
	lo, hi = po.FirstOffset, po.LastOffset
	switch {
	case from.IsOffset:
		lo = max(lo, from.Offset)
	case !from.Time.IsZero():
		lo = hi // no record at or after the time
		for off, ts := range po.Offsets {
			if !ts.Before(from.Time) && off < lo {
				lo = off
			}
		}
	}
	switch {
	case to.IsOffset:
		hi = min(hi, to.Offset)
	case !to.Time.IsZero():
		end, err := timeOffset(ctx, client, topic, p, to.Time)
		if err != nil {
			return 0, 0, err
		}
		if end >= 0 {
			hi = min(hi, end)
		}
	}
	return lo, hi, nil
}

// timeOffset is the first offset of partition p whose record time is at
// or after t, or -1 when there is none.
func timeOffset(ctx context.Context, client *kafka.Client, topic string, p int, t time.Time) (int64, error) {
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.TimeOffsetOf(p, t)}}})
	if err != nil {
		return 0, fmt.Errorf("offsets of %s/%d at %s: %w", topic, p, t.Format(time.RFC3339), err)
	}
	for _, x := range res.Topics[topic] {
		if x.Partition != p {
			continue
		}
		if x.Error != nil {
			return 0, fmt.Errorf("offsets of %s/%d at %s: %w", topic, p, t.Format(time.RFC3339), x.Error)
		}
		end := int64(-1)
		for off, ts := range x.Offsets {
			if !ts.Before(t) && (end < 0 || off < end) {
				end = off
			}
		}
		return end, nil
	}
	return -1, nil
}

// partCursor reads one partition from next up to end, a fetch at a time.
type partCursor struct {
	client    *kafka.Client
	topic     string
	partition int
	next, end int64
	batch     kafka.RecordReader
	value     bytes.Buffer // the current record's value, reused
}

// read returns the partition's next record, or nil once it reached end.
func (c *partCursor) read(ctx context.Context) (*Record, error) {
	for c.next < c.end {
		if c.batch == nil {
			res, err := c.client.Fetch(ctx, &kafka.FetchRequest{Topic: c.topic, Partition: c.partition, Offset: c.next,
				MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 500 * time.Millisecond})
			if err == nil {
				err = res.Error
			}
			if err != nil {
				return nil, fmt.Errorf("fetch %s/%d@%d: %w", c.topic, c.partition, c.next, err)
			}
			c.batch = res.Records
		}
		rec, err := c.batch.ReadRecord()
		if err != nil {
			c.batch = nil
			if errors.Is(err, io.EOF) {
				continue
			}
			return nil, fmt.Errorf("read %s/%d@%d: %w", c.topic, c.partition, c.next, err)
		}
		if rec.Offset < c.next {
			closeRecord(rec) // a batch may start before the offset asked for
			continue
		}
		c.next = rec.Offset + 1
		if rec.Offset >= c.end {
			closeRecord(rec)
			return nil, nil
		}
		c.value.Reset()
		if rec.Value != nil {
			if _, err := c.value.ReadFrom(rec.Value); err != nil {
				closeRecord(rec)
				return nil, fmt.Errorf("read %s/%d@%d: %w", c.topic, c.partition, rec.Offset, err)
			}
		}
		closeRecord(rec)
		return &Record{Partition: int32(c.partition), Offset: rec.Offset, Time: rec.Time, Value: c.value.Bytes()}, nil
	}
	return nil, nil
}

func closeRecord(rec *kafka.Record) {
	if rec.Key != nil {
		rec.Key.Close()
	}
	if rec.Value != nil {
		rec.Value.Close()
	}
}
