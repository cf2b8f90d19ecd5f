package fetch

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"time"
)

// OffsetCommitter commits a consumer group generation's offsets
// (*kafka.Generation; stream's tests wrap it).
type OffsetCommitter interface {
	CommitOffsets(offsets map[string]map[int]int64) error
}

// Committer commits the offsets it is handed to Kafka on a goroutine of its
// own, so that a commit that hangs (a broker that stopped answering keeps it
// until kafka-go's request Timeout closes the connection) stalls neither
// fetching nor evaluation. The consume loop hands it (Offer) only offsets
// whose records are synced in the store (stream's settle), so what it commits never
// passes what is synced; Offer never waits.
//
// One commit is in flight at a time, and a commit starts at most every
// interval after the previous one started: offsets handed over meanwhile
// wait, the newest per partition winning. A failed commit is logged (debug:
// it fails whenever the generation ended or the broker is away, and the
// records are in the store) and its offsets are committed again with the
// next commit, unless newer ones came for their partitions, after the
// interval or the broker backoff (Backoff), whichever is
// longer. Flush starts a commit at once and waits for it: the last commit
// of a generation. Close stops the goroutine and waits for it, so a commit
// in flight completes or fails first; offsets still waiting are dropped
// (their records are in the store: a redelivery is skipped by offset).
type Committer struct {
	c        OffsetCommitter
	log      *slog.Logger
	interval time.Duration

	mu      sync.Mutex
	pending map[TopicPartition]int64
	waiters []chan error // Flush calls waiting for the next commit
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	close   sync.Once
}

// errCommitterClosed is Flush's error after Close.
var errCommitterClosed = errors.New("offset committer closed")

// NewCommitter starts a committer of c's offsets; the caller closes it.
func NewCommitter(c OffsetCommitter, log *slog.Logger, interval time.Duration) *Committer {
	oc := &Committer{
		c: c, log: log, interval: interval,
		pending: map[TopicPartition]int64{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go oc.run()
	return oc
}

// Offer hands over the next offsets to commit; it does not wait.
func (oc *Committer) Offer(offsets map[TopicPartition]int64) {
	if len(offsets) == 0 {
		return
	}
	oc.mu.Lock()
	maps.Copy(oc.pending, offsets)
	oc.mu.Unlock()
	oc.wake()
}

// Flush commits the offsets handed over so far now (after the commit in
// flight, if any) and returns that commit's error; nil when there was
// nothing to commit.
func (oc *Committer) Flush(ctx context.Context) error {
	ch := make(chan error, 1)
	oc.mu.Lock()
	oc.waiters = append(oc.waiters, ch)
	oc.mu.Unlock()
	oc.wake()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-oc.done:
		return errCommitterClosed
	}
}

// Close stops the committer and waits for the commit in flight. It is
// idempotent.
func (oc *Committer) Close() {
	oc.close.Do(func() { close(oc.stop) })
	<-oc.done
}

func (oc *Committer) wake() {
	select {
	case oc.kick <- struct{}{}:
	default:
	}
}

// run is the committer's goroutine: it waits for offsets (or a flush) and
// for the commit's time, then commits.
func (oc *Committer) run() {
	defer close(oc.done)
	var (
		notBefore time.Time // the earliest start of the next commit, unless flushed
		fails     = Backoff()
		timer     *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		oc.mu.Lock()
		ready, flushing := len(oc.pending) > 0, len(oc.waiters) > 0
		oc.mu.Unlock()
		var due <-chan time.Time
		if ready && !flushing {
			if d := time.Until(notBefore); d > 0 {
				if timer == nil {
					timer = time.NewTimer(d)
				} else {
					timer.Reset(d)
				}
				due = timer.C
			} else {
				flushing = true // due now
			}
		}
		if !flushing {
			select {
			case <-oc.stop:
				return
			case <-oc.kick:
			case <-due:
			}
			if timer != nil {
				timer.Stop()
			}
			continue
		}
		select {
		case <-oc.stop:
			return
		default:
		}
		start := time.Now()
		err := oc.commitPending()
		notBefore = start.Add(oc.interval)
		if err != nil {
			notBefore = start.Add(max(oc.interval, fails.Next()))
		} else {
			fails.Reset()
		}
	}
}

// commitPending commits the offsets waiting and answers the Flush calls
// made before it started; a failed commit's offsets wait again, below any
// newer ones.
func (oc *Committer) commitPending() error {
	oc.mu.Lock()
	offsets, waiters := oc.pending, oc.waiters
	oc.pending, oc.waiters = map[TopicPartition]int64{}, nil
	oc.mu.Unlock()
	var err error
	if len(offsets) > 0 {
		err = oc.c.CommitOffsets(kafkaOffsets(offsets))
	}
	if err != nil {
		oc.log.Debug("commit offsets to kafka", "err", err)
		oc.mu.Lock()
		for tp, next := range offsets {
			if _, newer := oc.pending[tp]; !newer {
				oc.pending[tp] = next
			}
		}
		oc.mu.Unlock()
	}
	for _, w := range waiters {
		w <- err
	}
	return err
}

// kafkaOffsets is offsets as kafka-go's CommitOffsets takes them.
func kafkaOffsets(offsets map[TopicPartition]int64) map[string]map[int]int64 {
	out := map[string]map[int]int64{}
	for tp, next := range offsets {
		if out[tp.Topic] == nil {
			out[tp.Topic] = map[int]int64{}
		}
		out[tp.Topic][tp.Partition] = next
	}
	return out
}
