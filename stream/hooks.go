package stream

import (
	"context"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/odwatch/odwatch/stream/internal/pace"
	"github.com/segmentio/kafka-go"
)

// hooks are a Monitor's test hooks, in one place: production leaves
// Monitor.hooks nil, and every method below is then a no-op or the
// production default. Tests set them before the goroutines that read
// them start, or before dispatching the work that runs them (the mailbox's
// lock orders the write before the read).
type hooks struct {
	// beforeDiscovery runs before each discovery (discoverer).
	beforeDiscovery func(ctx context.Context, endSeq uint64)
	// discoveryStep runs before each unit of a discovery's work, before
	// the gate (discoverer).
	discoveryStep func(ctx context.Context)
	// beforeCheck runs before each check (evaluator).
	beforeCheck func(ctx context.Context, endSeq uint64)
	// afterCheck runs after each check's counts and tracker, before its
	// record (evaluator).
	afterCheck func(endSeq uint64, out *eval.Outcome)
	// beforeRelated runs on the historian for every evaluation, before
	// the samples of its events' related dependencies are taken and its
	// status history appended (appendStatus).
	beforeRelated func(ctx context.Context, endSeq uint64, events []alerts.Event)
	// noPrepare keeps the checks from building the rules of a finished
	// discovery ahead of its merge (eval.Env.CheckWindow's pending).
	noPrepare bool
	// exactChecks makes every check recount what changed, so that each
	// observed error can be compared with a full validation.
	exactChecks bool
	// inOrder makes every check of a queue run (none coalesced), every
	// discovery run (none skipped) and every merge wait for its
	// discovery, so that a run's events do not depend on the machine's
	// load.
	inOrder bool
	// pace replaces pace.Default (the pacer's and the catch-up's options).
	pace *pace.Options
	// retryBase is the first wait before delivering again events a sink
	// failed to take (deliver.DefaultRetryBase when 0).
	retryBase time.Duration
	// commitVia stands between a generation and its offset commits.
	commitVia func(*kafka.Generation) fetch.OffsetCommitter
}

func (h *hooks) discoveryStarts(ctx context.Context, endSeq uint64) {
	if h != nil && h.beforeDiscovery != nil {
		h.beforeDiscovery(ctx, endSeq)
	}
}

func (h *hooks) discoveryStepped(ctx context.Context) {
	if h != nil && h.discoveryStep != nil {
		h.discoveryStep(ctx)
	}
}

func (h *hooks) checkStarts(ctx context.Context, endSeq uint64) {
	if h != nil && h.beforeCheck != nil {
		h.beforeCheck(ctx, endSeq)
	}
}

func (h *hooks) checkDone(endSeq uint64, out *eval.Outcome) {
	if h != nil && h.afterCheck != nil {
		h.afterCheck(endSeq, out)
	}
}

func (h *hooks) relatedStarts(ctx context.Context, endSeq uint64, events []alerts.Event) {
	if h != nil && h.beforeRelated != nil {
		h.beforeRelated(ctx, endSeq, events)
	}
}

func (h *hooks) unprepared() bool { return h != nil && h.noPrepare }

func (h *hooks) exact() bool { return h != nil && h.exactChecks }

func (h *hooks) ordered() bool { return h != nil && h.inOrder }

// paceOptions is pace.Default, or the test's.
func (h *hooks) paceOptions() pace.Options {
	if h == nil || h.pace == nil {
		return pace.Default
	}
	return *h.pace
}

// retryBaseOr is retryBase, or def when unset.
func (h *hooks) retryBaseOr(def time.Duration) time.Duration {
	if h == nil || h.retryBase <= 0 {
		return def
	}
	return h.retryBase
}

// offsetCommitter is what a generation's offsets are committed through:
// gen itself, unless a test stands between (commitVia).
func (h *hooks) offsetCommitter(gen *kafka.Generation) fetch.OffsetCommitter {
	if h == nil || h.commitVia == nil {
		return gen
	}
	return h.commitVia(gen)
}
