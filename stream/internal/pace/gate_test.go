package pace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
)

// waitBlocked waits until n workers are blocked in g.wait.
func waitBlocked(t *testing.T, g *Gate, n int32) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "workers blocked at the gate", func() bool { return g.Waiting() == n })
}

// startWait runs g.Wait(ctx) on its own goroutine; the channel gets its
// result.
func startWait(ctx context.Context, g *Gate) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.Wait(ctx) }()
	return done
}

// TestCheckGate: the gate's transitions. Open, a wait returns at once;
// held by checks, it blocks (however many checks are queued meanwhile)
// until the checks are done, a check waits for a discovery (merging) or
// builds the checker (building), or ctx is done.
func TestCheckGate(t *testing.T) {
	ctx := context.Background()
	g := NewGate()
	if err := g.Wait(ctx); err != nil {
		t.Fatalf("open gate: %v", err)
	}

	g.SetChecks(true)
	done := startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.SetChecks(true) // another check queued: still held
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) while checks were queued", err)
	default:
	}
	g.SetChecks(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g.Waited() <= 0 {
		t.Fatal("the time blocked is not counted in waited")
	}

	// A check waiting for a discovery opens the gate until it stops
	// waiting.
	g.SetChecks(true)
	done = startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.SetMerging(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	g.SetMerging(false)
	done = startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.SetMerging(true)
	g.SetChecks(false)
	g.SetMerging(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A check building the checker opens the gate too, until it is built.
	g.SetChecks(true)
	done = startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.SetBuilding(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	g.SetBuilding(false)
	done = startWait(ctx, g)
	waitBlocked(t, g, 1)
	g.SetChecks(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// ctx ends a wait.
	g.SetChecks(true)
	cctx, cancel := context.WithCancel(ctx)
	done = startWait(cctx, g)
	waitBlocked(t, g, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := g.Waiting(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}
