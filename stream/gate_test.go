package stream

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery/table"
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

// TestEncodeSnapshot: discovery's encoding with the gate's pause gives
// EncodeTyped's table, a pause's error stops it as it is, and an encoding
// error is the encode step's.
func TestEncodeSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const rows = 300
	gen := map[string]func() string{
		"num":  func() string { return strconv.Itoa(rng.IntN(50) - 10) },
		"ts":   func() string { return time.Unix(int64(rng.IntN(1e6)), 0).UTC().Format(time.RFC3339) },
		"size": func() string { return []string{"S", "M", "L"}[rng.IntN(3)] },
	}
	var cols []table.DictColumn
	for _, name := range []string{"num", "size", "ts"} {
		c := table.DictColumn{Name: name, Codes: make([]uint32, rows)}
		at := map[string]uint32{}
		for r := range rows {
			v := gen[name]()
			if _, ok := at[v]; !ok {
				c.Dict = append(c.Dict, v)
				at[v] = uint32(len(c.Dict))
			}
			c.Codes[r] = at[v]
		}
		cols = append(cols, c)
	}
	ty := table.Typing{Ordinal: map[string][]string{"size": {"S", "M", "L"}}}
	want, err := table.EncodeTyped(cols, ty)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, err := encodeSnapshot(context.Background(), cols, ty, func(context.Context) error { calls++; return nil })
	// Before each column and after typing and sorting it (these columns
	// are too short to pause while typed).
	if err != nil || !reflect.DeepEqual(got, want) || calls != 3*len(cols) {
		t.Fatalf("err %v, %d pauses for %d columns; equal to EncodeTyped: %v", err, calls, len(cols), reflect.DeepEqual(got, want))
	}
	errStop := errors.New("stop")
	_, err = encodeSnapshot(context.Background(), cols, ty, func(context.Context) error { return errStop })
	if err != errStop {
		t.Fatalf("err %v, want the pause's error as it is", err)
	}
	_, err = encodeSnapshot(context.Background(), cols, table.Typing{Ordinal: map[string][]string{"size": {"S", "M"}}}, nil)
	var se *stepError
	if !errors.As(err, &se) || !errors.Is(err, table.ErrOrdinal) {
		t.Fatalf("err %v, want the encode step's ErrOrdinal", err)
	}
}
