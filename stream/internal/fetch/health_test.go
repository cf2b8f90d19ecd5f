package fetch

import (
	"context"
	"errors"
	"testing"

	"github.com/odwatch/odwatch/internal/testkit"
)

// TestRetryAtDeadline: an operation failing once the run's deadline has
// passed (Err not yet set) ends the retry loop with DeadlineExceeded, and
// is not reported as a broker failure.
func TestRetryAtDeadline(t *testing.T) {
	t.Parallel()
	h := NewHealth(testkit.Logger(t))
	calls := 0
	err := h.Retry(testkit.LateCtx{Context: context.Background()}, "fetch t/0", func(context.Context) error {
		calls++
		return errors.New("i/o timeout")
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("Retry: %v after %d calls, want DeadlineExceeded after 1", err, calls)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.failing) != 0 || !h.since.IsZero() {
		t.Errorf("the deadline was recorded as a broker failure: failing %v", h.failing)
	}
}
