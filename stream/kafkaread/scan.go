package kafkaread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// Scan calls fn with every record of every partition of topic, in
// offset order per partition, from the partition's first offset (tail <=
// 0) or its last tail records, up to the high watermark at the time of the
// call. A topic that does not exist has no records. The record's Key and
// Value are closed after fn returns. It is how a member reads back the
// events topic's tail (dedupeFromEventsTopic) and the state topic
// (readStateRecord), off the consumer group.
func Scan(ctx context.Context, brokers []string, dialer *kafka.Dialer, topic string, tail int64, fn func(partition int, rec *kafka.Record)) error {
	tr := Transport(dialer)
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", topic, err)
	}
	for _, t := range md.Topics {
		if t.Error != nil {
			if errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
				return nil // never written to
			}
			return fmt.Errorf("metadata of %s: %w", topic, t.Error)
		}
		var reqs []kafka.OffsetRequest
		for _, p := range t.Partitions {
			reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
		lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
		if err != nil {
			return fmt.Errorf("offsets of %s: %w", topic, err)
		}
		for _, po := range lo.Topics[topic] {
			if po.Error != nil {
				return fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error)
			}
			from := po.FirstOffset
			if tail > 0 {
				from = max(from, po.LastOffset-tail)
			}
			for off := from; off < po.LastOffset; {
				res, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: po.Partition, Offset: off, MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 100 * time.Millisecond})
				if err != nil {
					return fmt.Errorf("fetch %s/%d@%d: %w", topic, po.Partition, off, err)
				}
				if res.Error != nil {
					return fmt.Errorf("fetch %s/%d@%d: %w", topic, po.Partition, off, res.Error)
				}
				n := 0
				for {
					rec, err := res.Records.ReadRecord()
					if err != nil {
						break // end of the fetched batch (or of its readable part)
					}
					n++
					off = rec.Offset + 1
					fn(po.Partition, rec)
					if rec.Key != nil {
						rec.Key.Close()
					}
					if rec.Value != nil {
						rec.Value.Close()
					}
				}
				if n == 0 {
					break
				}
			}
		}
	}
	return nil
}
