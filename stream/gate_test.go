package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
)

// waitBlocked waits until n workers are blocked in g.wait.
func waitBlocked(t *testing.T, g *checkGate, n int32) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "workers blocked at the gate", func() bool { return g.waiting.Load() == n })
}

// startWait runs g.wait(ctx) on its own goroutine; the channel gets its
// result.
func startWait(ctx context.Context, g *checkGate) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()
	return done
}

// TestCheckGate: the gate's transitions. Open, a wait returns at once;
// held by checks, it blocks (however many checks are queued meanwhile)
// until the checks are done or a check waits for a discovery (merging), or
// ctx is done.
func TestCheckGate(t *testing.T) {
	ctx := context.Background()
	g := newCheckGate()
	if err := g.wait(ctx); err != nil {
		t.Fatalf("open gate: %v", err)
	}

	g.setChecks(true)
	done := startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.setChecks(true) // another check queued: still held
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) while checks were queued", err)
	default:
	}
	g.setChecks(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g.waited.Load() <= 0 {
		t.Fatal("the time blocked is not counted in waited")
	}

	// A check waiting for a discovery opens the gate until it stops
	// waiting.
	g.setChecks(true)
	done = startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.setMerging(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	g.setMerging(false)
	done = startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.setMerging(true)
	g.setChecks(false)
	g.setMerging(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// ctx ends a wait.
	g.setChecks(true)
	cctx, cancel := context.WithCancel(ctx)
	done = startWait(cctx, g)
	waitBlocked(t, g, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := g.waiting.Load(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}
