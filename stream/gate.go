package stream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// checkGate makes a stream's running discovery (two cadences) yield the
// CPU to its checks: discovery only uses what the checks leave.
//
// Who touches it: the consumer goroutine holds it when it queues a check
// (dispatchCheck); the evaluator releases it once the check queue is empty
// after running the checks, and opens it while a check waits for the
// discovery it merges (waitMerge: the check needs that discovery to end).
// Both call it under mailbox.mu, so that the queue and the gate change
// together. The discovery goroutine waits on it while it encodes its
// snapshot (eval.Env.DiscoverSnapshot: before each column, and within one every few
// thousand values typed and between its steps), and its workers
// (discovery.Options.Pause) before each unit of work (one node's
// partition, one candidate's validation) and within a long validation
// every few thousand rows of work.
//
// Guarantee: while the gate is held no discovery worker goes on with its
// work, however long the checks run back to back. A check thus shares the
// CPU, from its dispatch to its save, with ingest and with at most the
// pieces of discovery work under way when it was dispatched (one per
// worker, each small: a node's partition, a candidate's validation, a
// column's sort while the snapshot is encoded), not with the rest of the
// discovery. There is no starvation
// guard: while the checks cannot keep up (they are coalesced), discovery
// waits, and ends once they catch up (merged late, or the discoveries due
// meanwhile skipped; both counted and logged). Waiting changes no
// discovery result, only when it ends.
type checkGate struct {
	held atomic.Bool // checks && !merging: the fast path of wait

	mu sync.Mutex
	// checks: checks are queued or running; merging: the running check
	// waits for a discovery.
	checks, merging bool
	opened          chan struct{} // closed when the gate opens; a new one when held

	waiting atomic.Int32 // workers blocked in wait (tests)
	// waited is the time discovery's workers spent blocked in wait, in
	// nanoseconds, summed over the workers (the discovery log's held_s).
	waited atomic.Int64
}

// newCheckGate returns an open gate.
func newCheckGate() *checkGate {
	return &checkGate{opened: make(chan struct{})}
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
		g.held.Store(true)
	case !held && g.held.Load():
		g.held.Store(false)
		close(g.opened)
	}
}

// wait returns once the gate is open: at once when it is (one atomic
// load), else when it opens. It returns ctx's error when ctx is done
// first.
func (g *checkGate) wait(ctx context.Context) error {
	if !g.held.Load() {
		return nil
	}
	g.mu.Lock()
	opened, held := g.opened, g.held.Load()
	g.mu.Unlock()
	if !held {
		return nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	start := time.Now()
	defer func() { g.waited.Add(int64(time.Since(start))) }()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-opened:
		return nil
	}
}
