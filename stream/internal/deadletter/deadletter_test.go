package deadletter

import (
	"testing"
	"time"
)

// TestLimiter: Burst lines a second, the rest counted as suppressed and
// taken once.
func TestLogLimiter(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	allowed := 0
	for range 25 {
		if l.Allow(t0) {
			allowed++
		}
	}
	if allowed != Burst || l.suppressed != 25-Burst {
		t.Fatalf("allowed %d suppressed %d in one second", allowed, l.suppressed)
	}
	if !l.Allow(t0.Add(time.Second)) || l.TakeSuppressed() != 25-Burst || l.TakeSuppressed() != 0 {
		t.Fatal("next second not allowed or suppressed count wrong")
	}
}
