package stream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// How long a discovery is held back while checks run back to back: after
// discoveryMaxHold in a row it is let through for discoverySlice, then held
// again, so that it still gets about a tenth of the time when the checks
// never stop (and so still ends, late) instead of starving.
const (
	discoveryMaxHold = time.Second
	discoverySlice   = 100 * time.Millisecond
)

// checkGate makes a stream's running discovery (two cadences) yield the
// CPU to its checks: discovery only uses what the checks leave.
//
// Who touches it: the consumer goroutine holds it when it queues a check
// (dispatchCheck); the evaluator releases it once the check queue is empty
// after running the checks, and opens it while a check waits for the
// discovery it merges (waitMerge: the check needs that discovery to end).
// Both call it under mailbox.mu, so that the queue and the gate change
// together. The discovery goroutine waits on it before encoding each
// column of its snapshot (encodeSnapshot), and its workers
// (discovery.Options.Pause) before each unit of work: one node's
// partition, one candidate's validation.
//
// Guarantee: while the gate is held no discovery worker starts a unit of
// work, except during a slice of discoverySlice after the gate has been
// held discoveryMaxHold in a row (measured from when it was held, or from
// the end of the last slice). A check thus shares the CPU, from its
// dispatch to its save, with at most the units already under way (one per
// worker: on a 100k-row window of 20 fields, a lattice unit takes 2.5 ms
// at p99 and 25 ms at most, a column's encoding under 1 ms to 60 ms, but
// 0.2 s for a timestamp column of 100k distinct values, whose parse is
// one unit) and with ingest, not with the rest of the discovery. Waiting changes no discovery result, only when it ends.
type checkGate struct {
	held atomic.Bool // checks && !merging: the fast path of wait

	mu sync.Mutex
	// checks: checks are queued or running; merging: the running check
	// waits for a discovery.
	checks, merging bool
	opened          chan struct{} // closed when the gate opens; a new one when held
	since           time.Time     // start of the current hold (or end of the last slice)
	sliceEnd        time.Time
	maxHold, slice  time.Duration

	waiting atomic.Int32 // workers blocked in wait (tests)
}

// newCheckGate returns an open gate with the package's hold and slice.
func newCheckGate() *checkGate {
	return &checkGate{opened: make(chan struct{}), maxHold: discoveryMaxHold, slice: discoverySlice}
}

// setChecks records whether checks are queued or running (the consumer
// holds the gate, the evaluator releases it).
func (g *checkGate) setChecks(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checks = on
	g.update()
}

// setMerging records whether the running check waits for a discovery.
func (g *checkGate) setMerging(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.merging = on
	g.update()
}

// update applies a change of checks or merging; under g.mu.
func (g *checkGate) update() {
	held := g.checks && !g.merging
	switch {
	case held && !g.held.Load():
		g.opened = make(chan struct{})
		g.since = time.Now()
		g.held.Store(true)
	case !held && g.held.Load():
		g.held.Store(false)
		close(g.opened)
	}
}

// wait returns once the gate lets a unit of discovery work through: at
// once when it is open (one atomic load) or during a slice, else when it
// opens or its hold reaches maxHold. It returns ctx's error when ctx is
// done first.
func (g *checkGate) wait(ctx context.Context) error {
	if !g.held.Load() {
		return nil
	}
	for {
		g.mu.Lock()
		if !g.held.Load() {
			g.mu.Unlock()
			return nil
		}
		now := time.Now()
		if now.Before(g.sliceEnd) {
			g.mu.Unlock()
			return nil
		}
		if now.Sub(g.since) >= g.maxHold {
			g.sliceEnd = now.Add(g.slice)
			g.since = g.sliceEnd
			g.mu.Unlock()
			return nil
		}
		opened, left := g.opened, g.since.Add(g.maxHold).Sub(now)
		g.mu.Unlock()
		if err := g.block(ctx, opened, left); err != nil {
			return err
		}
	}
}

// block waits for opened, for d, or for ctx, counted in waiting.
func (g *checkGate) block(ctx context.Context, opened <-chan struct{}, d time.Duration) error {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-opened:
	case <-t.C:
	}
	return nil
}
