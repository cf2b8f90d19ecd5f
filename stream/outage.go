package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/odwatch/odwatch/internal/backoff"
	"github.com/segmentio/kafka-go"
)

// Retries of broker errors: capped exponential backoff. The cap bounds how
// long after the broker comes back the pipeline resumes.
var (
	brokerBackoffBase = 200 * time.Millisecond
	brokerBackoffCap  = 5 * time.Second
)

// brokerBackoff is the backoff of broker retries.
func brokerBackoff() backoff.Backoff { return backoff.New(brokerBackoffBase, brokerBackoffCap) }

// sleepCtx waits d or until ctx is done (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ending reports whether ctx is done or its deadline has passed. kafka-go
// sets a connection's deadline from the request context's, so a request
// running when a deadline of ctx (odwatch demo --duration) passes fails
// with an i/o timeout a moment before ctx.Err() is set: that is the end of
// the run, not a broker outage.
func ending(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// permanentKafkaError reports whether a broker error will not go away by
// retrying: the member is not allowed to read the topics or the group, or
// its credentials are refused. Everything else (timeouts, refused or reset
// connections, a coordinator or leader that moved, a broker restarting) is
// retried.
func permanentKafkaError(err error) bool {
	for _, e := range []kafka.Error{
		kafka.TopicAuthorizationFailed, kafka.GroupAuthorizationFailed, kafka.ClusterAuthorizationFailed,
		kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism, kafka.IllegalSASLState,
		kafka.InvalidSessionTimeout, kafka.InconsistentGroupProtocol,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// brokerHealth tracks whether Kafka answers the pipeline's requests. Each
// requester (the group membership, each partition's fetcher, a read-back)
// reports its failures and successes under its own name; Kafka is
// unreachable while one of them fails. The outage is logged once when it
// starts, once per step of the backoff (not once per partition and
// attempt) and once when it ends, and its duration is exported as
// odwatch_kafka_unreachable_seconds_total.
type brokerHealth struct {
	log *slog.Logger

	mu      sync.Mutex
	failing map[string]bool
	since   time.Time     // start of the current outage, zero when none
	past    time.Duration // outages before the current one
	logged  time.Duration // longest wait logged in this outage
	lastLog time.Time
}

func newBrokerHealth(log *slog.Logger) *brokerHealth {
	return &brokerHealth{log: log, failing: map[string]bool{}}
}

// fail records that who failed with err and waits wait before trying again.
func (h *brokerHealth) fail(who string, err error, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.failing[who] = true
	if h.since.IsZero() {
		h.since, h.logged = now, 0
	}
	if wait > h.logged || now.Sub(h.lastLog) >= brokerBackoffCap {
		h.logged, h.lastLog = max(h.logged, wait), now
		h.log.Warn("kafka unreachable; retrying", "for", now.Sub(h.since).Round(time.Millisecond), "retry_in", wait, "failing", who, "err", err)
	}
}

// ok records that who succeeded: the outage ends when nobody else fails.
func (h *brokerHealth) ok(who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failing, who)
	if len(h.failing) > 0 || h.since.IsZero() {
		return
	}
	d := time.Since(h.since)
	h.past += d
	h.since = time.Time{}
	h.log.Info("kafka reachable again", "after", d.Round(time.Millisecond))
}

// forget drops who's failure without ending the outage: who stopped
// without succeeding (the fetcher of a partition whose generation ended);
// the next success of anyone ends it.
func (h *brokerHealth) forget(who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failing, who)
}

// reachable reports whether no requester is failing.
func (h *brokerHealth) reachable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since.IsZero()
}

// unreachableSeconds is the total time Kafka was unreachable, including the
// current outage.
func (h *brokerHealth) unreachableSeconds() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.past
	if !h.since.IsZero() {
		d += time.Since(h.since)
	}
	return d.Seconds()
}

// retryBroker runs op until it succeeds, ctx is done, or it fails with a
// permanent error; other failures are reported to h as who and retried
// with capped exponential backoff.
func (h *brokerHealth) retryBroker(ctx context.Context, who string, op func(context.Context) error) error {
	b := brokerBackoff()
	defer h.forget(who)
	for {
		err := op(ctx)
		if err == nil {
			h.ok(who)
			return nil
		}
		if ending(ctx) {
			return cmp.Or(ctx.Err(), context.DeadlineExceeded)
		}
		if permanentKafkaError(err) {
			return fmt.Errorf("%s: %w", who, err)
		}
		wait := b.Next()
		h.fail(who, err, wait)
		if !sleepCtx(ctx, wait) {
			return ctx.Err()
		}
	}
}
