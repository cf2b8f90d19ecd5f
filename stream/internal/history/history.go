// Package history holds the machinery of the status page's history: the
// historian, which runs a stream's status-history jobs on a goroutine of
// their own so that an evaluation never waits for the samples of its
// events' related rules or for its append to the store's status history;
// the encoding of the events it stores (EncodeEvent, DecodeEvent); and the
// monitor's board of every stream's last evaluation (Board, its own lock).
//
// Who touches it: the evaluator goroutine starts a stream's Historian,
// reserves its related slots (Reserve) and adds the jobs (Add); the
// historian goroutine runs them, one at a time in the order they were
// added; the evaluator closes it (Close) when it ends. The queue, the
// slots and the closed flag are under Historian.mu, a leaf lock: nothing
// else is taken while it is held, and the job runs without it.
//
// Guarantee: jobs run in the order Add was called (so the history's appends
// keep window order), Add never blocks, at most maxRelated jobs hold a
// related slot (queued or running), and Close returns once every job added
// before it ran.
//
// It is a package of its own because the queue is a goroutine's protocol
// that knows nothing of what a job is (the stream decides what a job holds
// and what running it means, this package only when it runs), and the
// stored form of the history is read in one place.
package history

import (
	"context"
	"sync"
)

// DefaultRelatedPending bounds the jobs that carry the copies of a window
// for their related samples (queued or running): past it, a job is added
// without them (Reserve refuses).
const DefaultRelatedPending = 2

// Historian runs jobs of type J on a goroutine of its own. Its jobs that
// carry a window's copies are bounded (Reserve), the others are small
// (rule points and events). Close stops it once the queue is drained.
type Historian[J any] struct {
	do func(context.Context, J)
	// maxRelated bounds the jobs holding a related slot.
	maxRelated int

	mu      sync.Mutex
	queue   []entry[J]
	related int // jobs holding a related slot, queued or running
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

type entry[J any] struct {
	job J
	// reserved: the job holds one of the related slots.
	reserved bool
}

// Start starts a historian that runs do on each job with ctx (do still
// runs for the jobs left when ctx is done: it must then finish quickly).
func Start[J any](ctx context.Context, maxRelated int, do func(context.Context, J)) *Historian[J] {
	h := &Historian[J]{do: do, maxRelated: maxRelated, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go h.run(ctx)
	return h
}

// Reserve takes a related slot for a job about to be added, or reports
// false when the historian is that far behind.
func (h *Historian[J]) Reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.related >= h.maxRelated {
		return false
	}
	h.related++
	return true
}

// Add queues job (reserved when Reserve gave it a slot). After Close the
// job is dropped, its slot released.
func (h *Historian[J]) Add(job J, reserved bool) {
	h.mu.Lock()
	if h.closed {
		if reserved {
			h.related--
		}
		h.mu.Unlock()
		return
	}
	h.queue = append(h.queue, entry[J]{job: job, reserved: reserved})
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *Historian[J]) run(ctx context.Context) {
	defer close(h.done)
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			closed := h.closed
			h.mu.Unlock()
			if closed {
				return
			}
			<-h.wake
			continue
		}
		e := h.queue[0]
		h.queue[0] = entry[J]{}
		h.queue = h.queue[1:]
		h.mu.Unlock()
		h.do(ctx, e.job)
		if e.reserved {
			h.mu.Lock()
			h.related--
			h.mu.Unlock()
		}
	}
}

// Close stops taking jobs and returns once the queued ones are done (their
// related samples are skipped quickly when the context is done). It is
// idempotent.
func (h *Historian[J]) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	<-h.done
}
