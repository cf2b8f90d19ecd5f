package alerts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// Sink delivers events. Send returns only once the events are delivered (or
// it failed); it honours ctx. A sink that may fail after delivering some
// events returns a *SendError saying how many. Sinks are safe for
// concurrent use.
type Sink interface {
	Send(ctx context.Context, events []Event) error
	Close() error
}

// ErrPermanent marks a failure of one event that retrying will not fix: the
// receiver refused that event itself (a webhook's 4xx other than 408, 429
// and the statuses that refuse every event, see NewWebhookSink; a Kafka
// error for the message that kafka-go does not call temporary, see
// NewKafkaSink). A Send failing so returns a *SendError whose Err wraps
// ErrPermanent (errors.Is) and whose Sent indexes the refused event; a
// caller drops that event for the sink and goes on with the next ones
// instead of retrying it, and every event after it, for ever. Failures that
// refuse every event (bad credentials, a wrong address, an unauthorized
// topic) are not permanent in this sense: the events wait for the sink to
// be fixed instead of being dropped one by one.
var ErrPermanent = errors.New("permanent failure")

// SendError is the error of a Send that delivered its first Sent events
// before failing (a sink that sends events one by one). The caller marks
// those delivered and sends only the rest again, so that a receiver does
// not get them twice when a later event keeps failing. When Err wraps
// ErrPermanent, event Sent is the one that can never be delivered.
type SendError struct {
	Sent int
	Err  error
}

func (e *SendError) Error() string { return e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// Delivered returns how many leading events of a failed Send were
// delivered: SendError.Sent when err carries one, else 0.
func Delivered(err error) int {
	var se *SendError
	if errors.As(err, &se) {
		return se.Sent
	}
	return 0
}

// ceType is the CloudEvents type of an event type.
func ceType(t EventType) string { return "io.odwatch.dependency." + string(t) }

// ceSource is the CloudEvents source: the configured one, or
// "odwatch/<stream>".
func ceSource(source string, e Event) string {
	if source != "" {
		return source
	}
	return "odwatch/" + e.Stream
}

type logSink struct{ l *slog.Logger }

// NewLogSink returns a sink that logs each event at Info level with its
// fields as attributes (samples are counted, not logged).
func NewLogSink(l *slog.Logger) Sink {
	if l == nil {
		l = slog.Default()
	}
	return logSink{l: l}
}

func (s logSink) Send(ctx context.Context, events []Event) error {
	for _, e := range events {
		s.l.LogAttrs(ctx, slog.LevelInfo, "dependency "+string(e.Type),
			slog.String("id", e.ID),
			slog.String("stream", e.Stream),
			slog.String("dependency", e.DependencyText),
			slog.String("dependency_id", e.DependencyID),
			slog.Float64("error_before", e.ErrorBefore),
			slog.Float64("error_now", e.ErrorNow),
			slog.Float64("epsilon", e.Epsilon),
			slog.Int("removals", e.Removals),
			slog.Int("window_records", e.Window.Records),
			slog.Uint64("window_end_seq", e.Window.EndSeq),
			slog.Int("samples", len(e.Samples)))
	}
	return nil
}

func (logSink) Close() error { return nil }

type writerSink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriterSink returns a sink writing each event's Text, followed by a
// blank line, to w (the demo's console output).
func NewWriterSink(w io.Writer) Sink { return &writerSink{w: w} }

func (s *writerSink) Send(ctx context.Context, events []Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range events {
		if err := ctx.Err(); err != nil {
			return &SendError{Sent: i, Err: err}
		}
		if _, err := io.WriteString(s.w, e.Text()+"\n\n"); err != nil {
			return &SendError{Sent: i, Err: fmt.Errorf("alerts: write event %s: %w", e.ID, err)}
		}
	}
	return nil
}

func (s *writerSink) Close() error { return nil }

// multiSink sends to every sink in turn, even when one fails, and returns
// the failures joined.
type multiSink []Sink

// fanout returns a sink sending to all of sinks.
func fanout(sinks ...Sink) Sink { return multiSink(sinks) }

// Send sends events to every sink.
func (m multiSink) Send(ctx context.Context, events []Event) error {
	var errs []error
	for _, s := range m {
		if err := s.Send(ctx, events); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every sink.
func (m multiSink) Close() error {
	var errs []error
	for _, s := range m {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
