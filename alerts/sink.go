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
// it failed); it honours ctx. Sinks are safe for concurrent use.
type Sink interface {
	Send(ctx context.Context, events []Event) error
	Close() error
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
	for _, e := range events {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := io.WriteString(s.w, e.Text()+"\n\n"); err != nil {
			return fmt.Errorf("alerts: write event %s: %w", e.ID, err)
		}
	}
	return nil
}

func (s *writerSink) Close() error { return nil }

// MultiSink sends to every sink in turn, even when one fails, and returns
// the failures joined.
type MultiSink []Sink

// Fanout returns a sink sending to all of sinks.
func Fanout(sinks ...Sink) Sink { return MultiSink(sinks) }

// Send sends events to every sink.
func (m MultiSink) Send(ctx context.Context, events []Event) error {
	var errs []error
	for _, s := range m {
		if err := s.Send(ctx, events); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every sink.
func (m MultiSink) Close() error {
	var errs []error
	for _, s := range m {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
