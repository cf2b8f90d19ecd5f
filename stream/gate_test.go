package stream

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitBlocked waits until n workers are blocked in g.wait.
func waitBlocked(t *testing.T, g *checkGate, n int32) {
	t.Helper()
	waitFor(t, 30*time.Second, "workers blocked at the gate", func() bool { return g.waiting.Load() == n })
}

// startWait runs g.wait(ctx) on its own goroutine; the channel gets its
// result.
func startWait(ctx context.Context, g *checkGate) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()
	return done
}

// TestCheckGate: the gate's transitions. Open, a wait returns at once;
// held by checks, it blocks until the checks are done or a check waits for
// a discovery (merging), or ctx is done.
func TestCheckGate(t *testing.T) {
	ctx := context.Background()
	g := newCheckGate()
	g.maxHold = time.Hour // no slice in this test
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

// TestCheckGateSlice: a gate held longer than maxHold lets discovery
// through for a slice, then holds it again for maxHold.
func TestCheckGateSlice(t *testing.T) {
	ctx := context.Background()
	const hold = 30 * time.Millisecond
	g := newCheckGate()
	g.maxHold, g.slice = hold, time.Hour
	t0 := time.Now()
	g.setChecks(true)
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < hold {
		t.Fatalf("let through after %v, before the hold of %v", d, hold)
	}
	// Within the slice: through at once, however many calls.
	for range 100 {
		if err := g.wait(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A short slice: the first wait after it is held again for maxHold, so
	// the second slice ends at least a hold and a slice after the first.
	const slice = 10 * time.Millisecond
	g = newCheckGate()
	g.maxHold, g.slice = hold, slice
	t0 = time.Now()
	g.setChecks(true)
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < hold {
		t.Fatalf("let through after %v, before the hold of %v", d, hold)
	}
	g.mu.Lock()
	sliceEnd := g.sliceEnd
	g.mu.Unlock()
	waitFor(t, 30*time.Second, "the slice to end", func() bool { return time.Now().After(sliceEnd) })
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	next := g.sliceEnd
	g.mu.Unlock()
	if next.Sub(sliceEnd) < hold+slice {
		t.Fatalf("second slice %v after the first: want at least the hold %v and a slice %v", next.Sub(sliceEnd), hold, slice)
	}
}
