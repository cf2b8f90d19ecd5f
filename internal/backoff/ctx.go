package backoff

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done (false).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Ending reports whether ctx is done or its deadline has passed: the end of
// the run, not a failure to retry. kafka-go sets a connection's deadline
// from the request context's, so a request running when a deadline of ctx
// (odwatch demo --duration) passes fails with an i/o timeout a moment
// before ctx.Err() is set.
func Ending(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
