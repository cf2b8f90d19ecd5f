package pace

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Gate makes a stream's running discovery (two cadences) yield the
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
// partition, one candidate's validation, and in Summarize one candidate
// key's partition or one validation) and within a long validation
// every few thousand rows of work. The evaluator also opens it while a
// check builds the checker from a whole window (SetBuilding: a cold
// start's first check, a resync): that check is long (every rule's
// partitions), and at a cold start the next check waits for the very
// discovery it would hold back, so on two cores both go on at once.
//
// Guarantee: while the gate is held no discovery worker goes on with its
// work, however long the checks run back to back. A check thus shares the
// CPU, from its dispatch to its save, with ingest and with at most the
// pieces of discovery work under way when it was dispatched (one per
// worker, each small: a node's partition, a candidate's validation, a
// column's sort while the snapshot is encoded), not with the rest of the
// discovery. The gate itself has no starvation guard: while the checks
// run back to back discovery waits. What keeps it from starving is the
// consumer, which hands over no check past an open discovery's wait point
// (streamRun.awaitDiscovery): the checks queued before it drain, the gate
// opens, and the discovery ends. Waiting changes no discovery result, only
// when it ends.
type Gate struct {
	held atomic.Bool // checks && !merging && !building: the fast path of wait

	mu sync.Mutex
	// checks: checks are queued or running; merging: the running check
	// waits for a discovery; building: it builds the checker.
	checks, merging, building bool
	opened                    chan struct{} // closed when the gate opens; a new one when held

	waiting atomic.Int32 // workers blocked in wait (tests)
	// waited is the time discovery's workers spent blocked in wait, in
	// nanoseconds, summed over the workers (the discovery log's held_s).
	waited atomic.Int64
}

// NewGate returns an open gate.
func NewGate() *Gate {
	return &Gate{opened: make(chan struct{})}
}

// SetChecks records whether checks are queued or running (the consumer
// holds the gate, the evaluator releases it).
func (g *Gate) SetChecks(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checks = on
	g.update()
}

// SetMerging records whether the running check waits for a discovery.
func (g *Gate) SetMerging(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.merging = on
	g.update()
}

// SetBuilding records whether the running check builds the checker from
// a whole window.
func (g *Gate) SetBuilding(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.building = on
	g.update()
}

// update applies a change of checks, merging or building; under g.mu.
func (g *Gate) update() {
	held := g.checks && !g.merging && !g.building
	switch {
	case held && !g.held.Load():
		g.opened = make(chan struct{})
		g.held.Store(true)
	case !held && g.held.Load():
		g.held.Store(false)
		close(g.opened)
	}
}

// Wait returns once the gate is open: at once when it is (one atomic
// load), else when it opens. It returns ctx's error when ctx is done
// first.
func (g *Gate) Wait(ctx context.Context) error {
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

// Waiting is the number of workers blocked in Wait now (tests).
func (g *Gate) Waiting() int32 { return g.waiting.Load() }

// Waited is the time discovery's workers spent blocked in Wait so far,
// summed over the workers.
func (g *Gate) Waited() time.Duration { return time.Duration(g.waited.Load()) }
