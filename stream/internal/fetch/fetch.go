package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/odwatch/odwatch/internal/backoff"
	"github.com/segmentio/kafka-go"
)

// MaxWait is how long a fetch waits on the broker for records; fetchTimeout
// how much longer before a broker that does not answer (hung, or a network
// partition) counts as unreachable.
const (
	MaxWait      = 250 * time.Millisecond
	fetchTimeout = 5 * time.Second
	// MaxBytes is the fetch size. A larger record still comes back alone
	// (brokers return the first batch whatever its size, KIP-74), so an
	// oversized record is fetched and rejected, not a stalled partition.
	// Far larger values slow kafka-go's reader down several times.
	MaxBytes = 4 << 20
)

// Fetchers hand records over in chunks of up to fetchChunk (one channel
// send per chunk, not per record), their keys and values copied into slabs
// of fetchSlab bytes shared by the chunk's records; at most QueueLen
// chunks wait in the channel.
const (
	fetchChunk = 1024
	fetchSlab  = 128 << 10
	QueueLen   = 16
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int
}

// Fetched is records of an assigned partition, in offset order; or, with
// Mark, whether the partition's last fetch reached its high watermark and
// when that fetch came back (Back: the consumer may take the mark much
// later); or the permanent error that stopped its fetcher.
type Fetched struct {
	TP       TopicPartition
	Msgs     []kafka.Message
	Err      error
	Mark     bool
	CaughtUp bool
	Back     time.Time
}

// GroupLogger forwards kafka-go's group logs at debug level. They are never
// read for control flow: assignments and errors come from the group API.
type GroupLogger struct{ Log *slog.Logger }

func (l GroupLogger) Printf(format string, args ...any) {
	if !l.Log.Enabled(context.Background(), slog.LevelDebug) {
		return // kafka-go logs every offset commit: formatted only when shown
	}
	l.Log.Debug("kafka group: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Fetcher fetches partitions through Client, reporting broker errors to
// Health. Its fields are set once; Partition runs on a goroutine per
// partition.
type Fetcher struct {
	Client *kafka.Client
	Health *Health
	Log    *slog.Logger
}

// Partition fetches one partition from offset into out until ctx is
// done. Broker errors are retried with capped exponential backoff (and
// reported to f.Health); an offset out of range (retention deleted it)
// restarts at the partition's first offset; a permanent error is sent to
// out and ends the fetcher.
func (f Fetcher) Partition(ctx context.Context, tp TopicPartition, offset int64, out chan<- Fetched) {
	who := fmt.Sprintf("fetch %s/%d", tp.Topic, tp.Partition)
	defer f.Health.Forget(who)
	b := Backoff()
	for {
		fctx, cancel := context.WithTimeout(ctx, MaxWait+fetchTimeout)
		res, err := f.Client.Fetch(fctx, &kafka.FetchRequest{
			Topic: tp.Topic, Partition: tp.Partition, Offset: offset,
			MinBytes: 1, MaxBytes: MaxBytes, MaxWait: MaxWait,
		})
		back := time.Now()
		if err == nil && res.Error != nil {
			err = res.Error
		}
		if err != nil {
			cancel()
			if backoff.Ending(ctx) {
				return
			}
			if errors.Is(err, kafka.OffsetOutOfRange) {
				f.Log.Warn("offset out of range (deleted by retention?); fetching from the first offset", "topic", tp.Topic, "partition", tp.Partition, "offset", offset)
				offset = kafka.FirstOffset
				continue
			}
			if PermanentError(err) {
				select {
				case out <- Fetched{Err: fmt.Errorf("%s: %w", who, err)}:
				case <-ctx.Done():
				}
				return
			}
			wait := b.Next()
			f.Health.Fail(who, err, wait)
			if !backoff.Sleep(ctx, wait) {
				return
			}
			continue
		}
		b.Reset()
		f.Health.OK(who)
		next, ok := sendFetched(ctx, tp, res, offset, out)
		cancel()
		if !ok {
			return
		}
		offset = next
		// A fetch from kafka.FirstOffset that returned nothing found an
		// empty partition.
		caughtUp := offset >= res.HighWatermark || offset < 0
		select {
		case out <- Fetched{TP: tp, Mark: true, CaughtUp: caughtUp, Back: back}:
		case <-ctx.Done():
			return
		}
	}
}

// sendFetched sends the records of a fetch response at or past offset to
// out in chunks (fetchChunk), and returns the offset to fetch next; false
// when ctx ended first.
func sendFetched(ctx context.Context, tp TopicPartition, res *kafka.FetchResponse, offset int64, out chan<- Fetched) (int64, bool) {
	var (
		chunk []kafka.Message
		slab  slab
	)
	send := func() bool {
		if len(chunk) == 0 {
			return true
		}
		select {
		case out <- Fetched{TP: tp, Msgs: chunk}:
			chunk = nil
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		rec, err := res.Records.ReadRecord()
		if err != nil {
			break // end of the fetched batches (or of their readable part)
		}
		if rec.Offset < offset {
			closeBytes(rec.Key)
			closeBytes(rec.Value)
			continue // a batch may start before the offset asked for
		}
		offset = rec.Offset + 1
		if chunk == nil {
			chunk = make([]kafka.Message, 0, fetchChunk)
		}
		chunk = append(chunk, kafka.Message{
			Topic: tp.Topic, Partition: tp.Partition, Offset: rec.Offset, HighWaterMark: res.HighWatermark,
			Key: slab.read(rec.Key), Value: slab.read(rec.Value), Headers: rec.Headers, Time: rec.Time,
		})
		if len(chunk) == fetchChunk && !send() {
			return offset, false
		}
	}
	return offset, send()
}

// slab copies records' keys and values into shared buffers of fetchSlab
// bytes: one allocation per slab rather than per key or value. A slab is
// never written again where a returned slice points.
type slab struct{ buf []byte }

// read reads and closes a record's key or value (nil stays nil; unreadable
// reads as nil).
func (s *slab) read(b kafka.Bytes) []byte {
	if b == nil {
		return nil
	}
	defer b.Close()
	n := b.Len()
	if n == 0 {
		return []byte{}
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]byte, 0, max(fetchSlab, n))
	}
	from := len(s.buf)
	v := s.buf[from : from+n : from+n]
	if _, err := io.ReadFull(b, v); err != nil {
		return nil
	}
	s.buf = s.buf[:from+n]
	return v
}

// closeBytes closes a record's key or value without reading it.
func closeBytes(b kafka.Bytes) {
	if b != nil {
		_ = b.Close()
	}
}

// ReadBytes reads and closes a record's key or value (nil stays nil).
func ReadBytes(b kafka.Bytes) []byte {
	if b == nil {
		return nil
	}
	defer b.Close()
	v, err := kafka.ReadAll(b)
	if err != nil {
		return nil
	}
	return v
}
