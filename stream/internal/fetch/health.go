package fetch

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
const (
	BackoffBase = 200 * time.Millisecond
	backoffCap  = 5 * time.Second
)

// Backoff is the backoff of broker retries.
func Backoff() backoff.Backoff { return backoff.New(BackoffBase, backoffCap) }

// PermanentError reports whether a broker error will not go away by
// retrying: the member is not allowed to read the topics or the group, or
// its credentials are refused. Everything else (timeouts, refused or reset
// connections, a coordinator or leader that moved, a broker restarting) is
// retried.
func PermanentError(err error) bool {
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

// Health tracks whether Kafka answers the pipeline's requests. Each
// requester (the group membership, each partition's fetcher, a read-back)
// reports its failures and successes under its own name; Kafka is
// unreachable while one of them fails. The outage is logged once when it
// starts, once per step of the backoff (not once per partition and
// attempt) and once when it ends, and its duration is exported as
// odwatch_kafka_unreachable_seconds_total.
type Health struct {
	log *slog.Logger

	mu      sync.Mutex
	failing map[string]bool
	since   time.Time     // start of the current outage, zero when none
	past    time.Duration // outages before the current one
	logged  time.Duration // longest wait logged in this outage
	lastLog time.Time
}

// NewHealth returns the health of a member's requests, logged to log.
func NewHealth(log *slog.Logger) *Health {
	return &Health{log: log, failing: map[string]bool{}}
}

// Fail records that who failed with err and waits wait before trying again.
func (h *Health) Fail(who string, err error, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.failing[who] = true
	if h.since.IsZero() {
		h.since, h.logged = now, 0
	}
	if wait > h.logged || now.Sub(h.lastLog) >= backoffCap {
		h.logged, h.lastLog = max(h.logged, wait), now
		h.log.Warn("kafka unreachable; retrying", "for", now.Sub(h.since).Round(time.Millisecond), "retry_in", wait, "failing", who, "err", err)
	}
}

// OK records that who succeeded: the outage ends when nobody else fails.
func (h *Health) OK(who string) {
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

// Forget drops who's failure without ending the outage: who stopped
// without succeeding (the fetcher of a partition whose generation ended);
// the next success of anyone ends it.
func (h *Health) Forget(who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failing, who)
}

// Reachable reports whether no requester is failing.
func (h *Health) Reachable() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since.IsZero()
}

// UnreachableSeconds is the total time Kafka was unreachable, including the
// current outage.
func (h *Health) UnreachableSeconds() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.past
	if !h.since.IsZero() {
		d += time.Since(h.since)
	}
	return d.Seconds()
}

// Retry runs op until it succeeds, ctx is done, or it fails with a
// permanent error; other failures are reported to h as who and retried
// with capped exponential backoff.
func (h *Health) Retry(ctx context.Context, who string, op func(context.Context) error) error {
	b := Backoff()
	defer h.Forget(who)
	for {
		err := op(ctx)
		if err == nil {
			h.OK(who)
			return nil
		}
		if backoff.Ending(ctx) {
			return cmp.Or(ctx.Err(), context.DeadlineExceeded)
		}
		if PermanentError(err) {
			return fmt.Errorf("%s: %w", who, err)
		}
		wait := b.Next()
		h.Fail(who, err, wait)
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}
