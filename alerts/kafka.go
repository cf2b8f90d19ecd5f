package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// NewKafkaWriter returns a kafka-go Writer suited to NewKafkaSink: all
// in-sync replicas acknowledge (RequireAll), keys hash to partitions so a
// dependency's events stay ordered, synchronous writes with a short batch
// timeout so that a Send of a few events does not wait a second.
func NewKafkaWriter(brokers []string, topic string) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond,
	}
}

type kafkaSink struct {
	w      *kafka.Writer
	source string
}

// NewKafkaSink returns a sink writing each event as a CloudEvents 1.0
// message in binary content mode to w's topic: headers ce_specversion "1.0",
// ce_id (event id), ce_source (source, or "odwatch/<stream>" when empty),
// ce_type "io.odwatch.dependency.<type>", ce_time (RFC 3339), ce_subject
// (dependency id), content-type "application/json"; key = dependency id;
// value = the event's JSON. w is configured by the caller (see
// NewKafkaWriter) and must not be Async: Send returns once the broker
// acknowledged. Close closes w.
func NewKafkaSink(w *kafka.Writer, source string) Sink {
	return &kafkaSink{w: w, source: source}
}

func (s *kafkaSink) Send(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	msgs := make([]kafka.Message, len(events))
	for i, e := range events {
		value, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("alerts: encode event %s: %w", e.ID, err)
		}
		msgs[i] = kafka.Message{
			Key:   []byte(e.DependencyID),
			Value: value,
			Headers: []kafka.Header{
				{Key: "ce_specversion", Value: []byte("1.0")},
				{Key: "ce_id", Value: []byte(e.ID)},
				{Key: "ce_source", Value: []byte(ceSource(s.source, e))},
				{Key: "ce_type", Value: []byte(ceType(e.Type))},
				{Key: "ce_time", Value: []byte(e.Time.UTC().Format(time.RFC3339Nano))},
				{Key: "ce_subject", Value: []byte(e.DependencyID)},
				{Key: "content-type", Value: []byte("application/json")},
			},
			Time: e.Time,
		}
	}
	if err := s.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("alerts: write %d events to kafka topic %s: %w", len(msgs), s.w.Topic, err)
	}
	return nil
}

func (s *kafkaSink) Close() error {
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("alerts: close kafka writer: %w", err)
	}
	return nil
}
