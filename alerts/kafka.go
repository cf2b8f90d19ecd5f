package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/sr"
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
	// registry, subject: the Schema Registry and subject EventSchema is
	// registered under (KafkaSchemaRegistry); schemaID once it is.
	registry, subject string
	mu                sync.Mutex // guards schemaID: streams send concurrently
	schemaID          int
}

// KafkaOption configures NewKafkaSink.
type KafkaOption func(*kafkaSink)

// KafkaSchemaRegistry makes the sink register EventSchema as subject
// (normally "<topic>-value") in the Schema Registry at url before its first
// write (registerEventSchema; a failure fails the Send, which the outbox
// retries) and write each value in the Confluent wire format: a zero byte,
// the schema id (4 bytes, big-endian), then the JSON. Consumers then read
// it with the standard JSON Schema deserializers.
func KafkaSchemaRegistry(url, subject string) KafkaOption {
	return func(s *kafkaSink) { s.registry, s.subject = url, subject }
}

// NewKafkaSink returns a sink writing each event as a CloudEvents 1.0
// message in binary content mode to w's topic: headers ce_specversion "1.0",
// ce_id (event id), ce_source (source, or "odwatch/<stream>" when empty),
// ce_type "io.odwatch.dependency.<type>", ce_time (RFC 3339), ce_subject
// (dependency id), ce_dataschema (eventDataSchema), content-type
// "application/json"; key = dependency id; value = the event's JSON
// (prefixed with the Confluent wire format header with
// KafkaSchemaRegistry). w is configured by the caller (see
// NewKafkaWriter) and must not be Async: Send returns once the broker
// acknowledged. Close closes w.
//
// A failed Send returns a *SendError. An error kafka-go reports for the
// messages themselves and does not call temporary (kafka.Error.Temporary:
// message too large, invalid record, …) is ErrPermanent; as the broker
// fails a whole partition batch at once, the events from the first failed
// one on are then written again one by one, so that the error names the
// event that causes it (Sent) and the events before it are delivered.
// Errors that refuse every message (topic or cluster authorization, SASL,
// an invalid topic or configuration) and errors not tied to the messages
// are not permanent: the events wait for the sink to be fixed.
func NewKafkaSink(w *kafka.Writer, source string, opts ...KafkaOption) Sink {
	s := &kafkaSink{w: w, source: source}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *kafkaSink) Send(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	prefix, err := s.wirePrefix(ctx)
	if err != nil {
		return &SendError{Sent: 0, Err: err}
	}
	msgs := make([]kafka.Message, len(events))
	for i, e := range events {
		value, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("alerts: encode event %s: %w", e.ID, err)
		}
		if prefix != nil {
			value = append(slices.Clip(prefix), value...)
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
				{Key: "ce_dataschema", Value: []byte(eventDataSchema)},
				{Key: "content-type", Value: []byte("application/json")},
			},
			Time: e.Time,
		}
	}
	err = s.w.WriteMessages(ctx, msgs...)
	if err == nil {
		return nil
	}
	first, perMessage, err := firstWriteError(err, len(msgs))
	if ctx.Err() != nil || !perMessage || !permanentKafka(err) {
		return &SendError{Sent: first, Err: fmt.Errorf("alerts: write %d events to kafka topic %s: %w", len(msgs)-first, s.w.Topic, err)}
	}
	// Pin the permanent failure to its event: the whole batch of a
	// partition failed with it, and dropping an innocent event would be
	// worse than sending a few events twice (receivers deduplicate by
	// ce_id).
	for i := first; i < len(msgs); i++ {
		err := s.w.WriteMessages(ctx, msgs[i])
		if err == nil {
			continue
		}
		_, perMessage, err := firstWriteError(err, 1)
		if ctx.Err() == nil && perMessage && permanentKafka(err) {
			err = fmt.Errorf("%w: %w", ErrPermanent, err)
		}
		return &SendError{Sent: i, Err: fmt.Errorf("alerts: write event %s to kafka topic %s: %w", events[i].ID, s.w.Topic, err)}
	}
	return nil
}

// firstWriteError returns the index of the first message of n a
// WriteMessages error err failed, whether the error is the message's own (kafka.WriteErrors, MessageTooLargeError)
// rather than one of the whole call (metadata, network, ctx), and that
// message's error. A call error fails every message: index 0.
func firstWriteError(err error, n int) (int, bool, error) {
	var werr kafka.WriteErrors
	if errors.As(err, &werr) && len(werr) == n {
		for i, e := range werr {
			if e != nil {
				return i, true, e
			}
		}
	}
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		// Checked before anything is written; the messages before the big
		// one are fine, and the retry one by one finds it.
		return 0, true, err
	}
	return 0, false, err
}

// permanentKafka reports whether a message's write error will recur on
// every retry of that message but not of others: a kafka.Error that is not
// temporary and does not refuse every message alike.
func permanentKafka(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) || ke.Temporary() {
		return false
	}
	switch ke {
	case kafka.TopicAuthorizationFailed, kafka.ClusterAuthorizationFailed,
		kafka.TransactionalIDAuthorizationFailed, kafka.DelegationTokenAuthorizationFailed,
		kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism, kafka.IllegalSASLState,
		kafka.SecurityDisabled, kafka.InvalidTopic, kafka.InvalidRequiredAcks,
		kafka.UnsupportedVersion, kafka.UnsupportedCompressionType:
		return false
	}
	return true
}

// wirePrefix is the Confluent wire format header of the values (nil
// without a registry), registering the schema the first time.
func (s *kafkaSink) wirePrefix(ctx context.Context) ([]byte, error) {
	if s.registry == "" {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.schemaID == 0 {
		id, err := registerEventSchema(ctx, s.registry, s.subject, nil)
		if err != nil {
			return nil, err
		}
		s.schemaID = id
	}
	return (&sr.ConfluentHeader{}).AppendEncode(nil, s.schemaID, nil)
}

func (s *kafkaSink) Close() error {
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("alerts: close kafka writer: %w", err)
	}
	return nil
}
