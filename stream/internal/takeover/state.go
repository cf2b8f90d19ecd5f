package takeover

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/segmentio/kafka-go"
)

// StateRecord is the value a stream publishes to Config.StateTopic after
// each evaluation, keyed by the stream name: what a member taking the stream
// over needs to go on where the previous owner stopped (docs/DESIGN.md
// "Scale-out"). The topic is meant to be compacted (cleanup.policy=compact),
// so it holds about one value per stream.
type StateRecord struct {
	Stream string `json:"stream"`
	// WindowEndSeq is the arrival sequence number of the last record of the
	// evaluated window.
	WindowEndSeq uint64 `json:"window_end_seq"`
	// NextOffsets are the stream's next offsets per partition (decimal
	// partition number as the key) when the window was snapshotted.
	NextOffsets map[string]int64 `json:"next_offsets"`
	// Tracker is the alerts.Tracker state (its MarshalJSON form).
	Tracker json.RawMessage `json:"tracker"`
}

// EncodeState is the state record of stream's evaluation ending at end,
// with the stream's next offsets and its tracker state, as published.
func EncodeState(stream string, end uint64, next map[int32]int64, tracker []byte) ([]byte, error) {
	rec := StateRecord{Stream: stream, WindowEndSeq: end, NextOffsets: make(map[string]int64, len(next)), Tracker: tracker}
	for p, o := range next {
		rec.NextOffsets[strconv.Itoa(int(p))] = o
	}
	return json.Marshal(rec)
}

// NewStateWriter returns the synchronous writer of the state topic: one
// message per evaluation, written before the evaluation's events are
// delivered, hashed by stream name so that a stream's values stay in one
// partition (compaction keeps the latest). It writes over tr, which the
// caller closes.
func NewStateWriter(brokers []string, topic string, tr *kafka.Transport) *kafka.Writer {
	w := &kafka.Writer{
		Addr:                   kafka.TCP(brokers...),
		Topic:                  topic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           time.Millisecond, // one message per write: do not wait for more
		BatchBytes:             kafkaread.MaxMessageBytes,
		AllowAutoTopicCreation: true,
		Transport:              tr,
	}
	return w
}

// ReadStateRecord reads topic from its beginning up to the high watermarks
// at the time of the call, partition by partition, and returns the latest
// value of key stream (the last one by offset in a partition; across
// partitions, after a change of their number, the one with the highest
// window end). nil when the topic or the key does not exist.
func ReadStateRecord(ctx context.Context, brokers []string, dialer *kafka.Dialer, topic, stream string) (*StateRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := map[int][]byte{} // partition → latest value of the key there
	err := kafkaread.Scan(ctx, brokers, dialer, topic, 0, func(partition int, rec *kafka.Record) {
		if rec.Key == nil {
			return
		}
		if key, err := kafka.ReadAll(rec.Key); err != nil || string(key) != stream {
			return
		}
		if rec.Value == nil {
			delete(last, partition) // a tombstone
		} else if value, err := kafka.ReadAll(rec.Value); err == nil {
			last[partition] = value
		}
	})
	if err != nil {
		return nil, err
	}
	var best *StateRecord
	for _, p := range slices.Sorted(maps.Keys(last)) {
		var r StateRecord
		if err := json.Unmarshal(last[p], &r); err != nil || r.Stream != stream || len(r.Tracker) == 0 {
			continue // not ours or damaged: ignore it rather than fail the takeover
		}
		if best == nil || r.WindowEndSeq > best.WindowEndSeq {
			best = &r
		}
	}
	return best, nil
}
