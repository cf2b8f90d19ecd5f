package testkit

import (
	"testing"
	"time"
)

func TestEventuallyReturnsOnceCondHolds(t *testing.T) {
	t.Parallel()
	polls := 0
	start := time.Now()
	Eventually(t, 10*time.Second, "the fifth poll", func() bool { polls++; return polls == 5 })
	if polls != 5 {
		t.Fatalf("polled %d times, want 5", polls)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v for five polls", took)
	}
}
