package stream

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lateCtx is a context whose deadline has passed while its Err is not set
// yet: the moment a kafka-go request fails with an i/o timeout at the end
// of a run with a deadline.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestEnding(t *testing.T) {
	live, cancel := context.WithCancel(context.Background())
	defer cancel()
	later, cancelLater := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLater()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"live, no deadline", live, false},
		{"deadline ahead", later, false},
		{"cancelled", done, true},
		{"deadline passed, Err not yet set", lateCtx{context.Background()}, true},
	} {
		if got := ending(tt.ctx); got != tt.want {
			t.Errorf("%s: ending = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRetryBrokerAtDeadline: an operation failing once the run's deadline
// has passed (Err not yet set) ends the retry loop with DeadlineExceeded,
// and is not reported as a broker failure.
func TestRetryBrokerAtDeadline(t *testing.T) {
	h := newBrokerHealth(testLogger(t))
	calls := 0
	err := h.retryBroker(lateCtx{context.Background()}, "fetch t/0", func(context.Context) error {
		calls++
		return errors.New("i/o timeout")
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("retryBroker: %v after %d calls, want DeadlineExceeded after 1", err, calls)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.failing) != 0 || !h.since.IsZero() {
		t.Errorf("the deadline was recorded as a broker failure: failing %v", h.failing)
	}
}
