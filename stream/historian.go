package stream

import (
	"context"
	"sync"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/window"
)

// defaultRelatedPending bounds the status history's jobs that carry the
// copies of a window for their related samples (queued or running): past
// it, a job is appended without them (historian.reserve).
const defaultRelatedPending = 2

// historyJob is one evaluation's part of the status history: the append
// with its rule points and dropped rules (taken on the evaluator, from the
// tracker of that evaluation), the events to store, and what their related
// rules' samples need (nil: none to take, or skipped).
type historyJob struct {
	h       *state.HistoryAppend
	events  []alerts.Event
	related *relatedWork
	// reserved: the job holds one of the historian's related slots.
	reserved bool
}

// relatedWork is what the samples of an evaluation's related rules need
// from its window, taken on the evaluator so that the historian reads
// nothing the evaluator changes: a check's sampler, detached from the
// checker once it copied the columns the rules mention (checkSampler.take),
// or a full evaluation's encoded window and its immutable snapshot.
type relatedWork struct {
	deps []discovery.Dependency
	at   map[string]int
	chk  *checkSampler
	// a full evaluation's
	table *table.Table
	snap  *window.Snapshot
}

// historian runs a stream's status-history jobs on a goroutine of its own,
// one at a time in the order they were added (so the history's appends
// keep window order), so that an evaluation never waits for its related
// samples or its append. add never blocks; the jobs that carry a window's
// copies are bounded (reserve), the others are small (rule points and
// events). close stops it once the queue is drained.
type historian struct {
	do func(context.Context, *historyJob)
	// maxRelated bounds the jobs holding a related slot (defaultRelatedPending).
	maxRelated int

	mu      sync.Mutex
	queue   []*historyJob
	related int // jobs holding a related slot, queued or running
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

// startHistorian starts a historian that runs do on each job with ctx (do
// still runs for the jobs left when ctx is done: it must then finish
// quickly; the history's append needs no ctx).
func startHistorian(ctx context.Context, maxRelated int, do func(context.Context, *historyJob)) *historian {
	h := &historian{do: do, maxRelated: maxRelated, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go h.run(ctx)
	return h
}

// reserve takes a related slot for a job about to be added, or reports
// false when the historian is that far behind.
func (h *historian) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.related >= h.maxRelated {
		return false
	}
	h.related++
	return true
}

// add queues job (job.reserved when reserve gave it a slot). After close
// the job is dropped, its slot released.
func (h *historian) add(job *historyJob) {
	h.mu.Lock()
	if h.closed {
		if job.reserved {
			h.related--
		}
		h.mu.Unlock()
		return
	}
	h.queue = append(h.queue, job)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *historian) run(ctx context.Context) {
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
		job := h.queue[0]
		h.queue[0] = nil
		h.queue = h.queue[1:]
		h.mu.Unlock()
		h.do(ctx, job)
		if job.reserved {
			h.mu.Lock()
			h.related--
			h.mu.Unlock()
		}
	}
}

// close stops taking jobs and returns once the queued ones are done (their
// related samples are skipped quickly when the context is done). It is
// idempotent.
func (h *historian) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	<-h.done
}
