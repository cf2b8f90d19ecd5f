// Package deadletter is what package stream does with a record it cannot
// decode besides counting it: the dead letter that carries it to the
// dead-letter topic with its coordinates and reason (Of), the write that
// never stops the pipeline on a record too large for that topic (Write),
// and the limit on its log lines (Limiter).
package deadletter

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// Of is the dead letter of msg, which stream could not decode (reason,
// err): its key, value and time, its headers and odwatch_reason,
// odwatch_error, odwatch_stream, odwatch_topic, odwatch_partition and
// odwatch_offset, which lead to the original.
func Of(msg *kafka.Message, stream, reason string, err error) kafka.Message {
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	headers := append(slices.Clone(msg.Headers),
		kafka.Header{Key: "odwatch_reason", Value: []byte(reason)},
		kafka.Header{Key: "odwatch_error", Value: []byte(errText)},
		kafka.Header{Key: "odwatch_stream", Value: []byte(stream)},
		kafka.Header{Key: "odwatch_topic", Value: []byte(msg.Topic)},
		kafka.Header{Key: "odwatch_partition", Value: strconv.AppendInt(nil, int64(msg.Partition), 10)},
		kafka.Header{Key: "odwatch_offset", Value: strconv.AppendInt(nil, msg.Offset, 10)},
	)
	return kafka.Message{Key: msg.Key, Value: msg.Value, Headers: headers, Time: msg.Time}
}

// Writer writes messages to the dead-letter topic (a *kafka.Writer).
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Write writes the dead letters to w (the topic named topic, for the log).
// When the topic refuses some for their size (its max.message.bytes below
// the source topic's, or a batch of them over it), they are written one by
// one, and a record still too large alone is written without its value
// (header odwatch_value_dropped: its size in bytes); its coordinates lead
// to the original. Failing instead would stop the pipeline on the same
// record at every restart.
func Write(ctx context.Context, w Writer, topic string, log *slog.Logger, msgs []kafka.Message) error {
	err := w.WriteMessages(ctx, msgs...)
	if err == nil || !sizeRefused(err) {
		return err
	}
	redo := msgs // a client-side size check fails the call before any write
	var we kafka.WriteErrors
	if errors.As(err, &we) && len(we) == len(msgs) {
		redo = nil
		for i, e := range we {
			switch {
			case e == nil:
			case errors.Is(e, kafka.MessageSizeTooLarge):
				redo = append(redo, msgs[i])
			default:
				return err
			}
		}
	}
	for _, msg := range redo {
		err := w.WriteMessages(ctx, msg)
		if err != nil && sizeRefused(err) {
			log.Warn("dead letter too large for the dead-letter topic; written without its value",
				"topic", topic, "bytes", len(msg.Value), "source_topic", Header(msg.Headers, "odwatch_topic"),
				"partition", Header(msg.Headers, "odwatch_partition"), "offset", Header(msg.Headers, "odwatch_offset"))
			msg.Headers = append(slices.Clone(msg.Headers),
				kafka.Header{Key: "odwatch_value_dropped", Value: strconv.AppendInt(nil, int64(len(msg.Value)), 10)})
			msg.Value = nil
			err = w.WriteMessages(ctx, msg)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sizeRefused reports whether a write failed because a message or batch
// was too large for the topic.
func sizeRefused(err error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		return slices.ContainsFunc(we, func(e error) bool { return e != nil && errors.Is(e, kafka.MessageSizeTooLarge) })
	}
	return errors.Is(err, kafka.MessageSizeTooLarge)
}

// Header is the value of the header key in hs ("" when absent).
func Header(hs []kafka.Header, key string) string {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Limiter lets through at most Burst lines per second and counts the
// lines it held back, so that a flood of bad records does not flood the
// log (the rejected metric and the dead-letter topic still get every
// record). Its goroutine's own (a stream's consumer); the zero value is
// ready.
type Limiter struct {
	second     int64
	lines      int
	suppressed int
}

// Burst is the lines a Limiter lets through per second.
const Burst = 10

// Allow reports whether a line may be logged at now; one that may not is
// counted as suppressed.
func (l *Limiter) Allow(now time.Time) bool {
	if sec := now.Unix(); sec != l.second {
		l.second, l.lines = sec, 0
	}
	if l.lines >= Burst {
		l.suppressed++
		return false
	}
	l.lines++
	return true
}

// TakeSuppressed is the lines suppressed since the last call.
func (l *Limiter) TakeSuppressed() int {
	n := l.suppressed
	l.suppressed = 0
	return n
}
