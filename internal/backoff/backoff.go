// Package backoff is the capped exponential backoff the pipeline's retries
// share: the broker requests, the Schema Registry lookups, the delivery of
// events left in the outbox and the webhook's requests.
package backoff

import "time"

// Backoff is a capped exponential backoff: the first wait is Base, each
// next one twice the last, up to Cap. A Backoff is used by one goroutine.
type Backoff struct {
	Base, Cap time.Duration
	wait      time.Duration // the next wait; 0 before the first
}

// New returns a backoff from base doubling up to limit.
func New(base, limit time.Duration) Backoff { return Backoff{Base: base, Cap: limit} }

// Next returns the wait before the next attempt and doubles the one after
// it, up to Cap.
func (b *Backoff) Next() time.Duration {
	if b.wait == 0 {
		b.wait = b.Base
	}
	w := b.wait
	b.wait = min(2*b.wait, b.Cap)
	return w
}

// Reset makes the next wait Base again (after a success).
func (b *Backoff) Reset() { b.wait = 0 }
