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

	// A check waiting for a discovery (merging), or building the checker,
	// opens the gate until it stops.
	for _, open := range []func(bool){g.SetMerging, g.SetBuilding} {
		g.SetChecks(true)
		done = startWait(ctx, g)
		waitBlocked(t, g, 1)
		open(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := g.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		open(false)
		done = startWait(ctx, g)
		waitBlocked(t, g, 1)
		open(true)
		g.SetChecks(false)
		open(false)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
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
