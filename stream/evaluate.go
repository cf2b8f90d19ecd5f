package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/internal/deliver"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/internal/history"
	"github.com/odwatch/odwatch/stream/internal/takeover"
	"github.com/odwatch/odwatch/stream/window"
)

// evalJob is one window to evaluate: an immutable snapshot and the
// sequence number of its last record.
type evalJob struct {
	snap   *window.Snapshot
	endSeq uint64
	// bounds: the window's eviction bounds at the snapshot (evictHold).
	bounds map[int32]int64
	next   map[int32]int64 // the stream's next offsets at the snapshot
	// replay: the evaluation lost in a crash, replayed on start before the
	// consumer knows whether this member still owns the stream, so it is
	// not published to the state topic (it could shadow a newer owner's).
	replay bool
	// gen is the window's generation (mailbox.gen) at dispatch.
	gen uint64
}

// mailbox is what the owners of a stream hand each other (see the package
// doc, "Goroutines and their owners", for the lock order): the consumer
// puts windows, checks and discoveries in it, the evaluator and the
// discoverer take them. It holds at most one pending evaluation: a count
// window's next waits for it (awaitDiscovery, woken by take: each runs a
// discovery), a time window's replaces it (counted as skipped), so that
// the evaluator works on the newest. A replayed evaluation (lost in a crash)
// has its own slot and goes first, so that the first live window does not
// replace it.
type mailbox struct {
	// mu guards pending, replay, restore and feed's queues.
	mu      sync.Mutex
	pending *evalJob
	replay  *evalJob
	restore *takeover.StateRecord // a tracker state to restore before the next evaluation
	// wake tells the evaluator that the mailbox holds work.
	wake chan struct{}
	feed cadenceFeed // two cadences: checks and discoveries (cadence.go)
	// gen counts the windows dropped (streamRun.drop): every job carries
	// the generation it was dispatched in, and one of an older generation
	// is a dropped window's, never saved (record) nor merged. drop changes
	// it holding saveMu and mu; the consumer reads it freely (it is the
	// only writer), the evaluator and the discoverer under one of them.
	gen atomic.Uint64
	// saveMu makes an evaluation's generation check and its save one step
	// with respect to drop: once drop returns, no evaluation of the
	// dropped window is saved.
	saveMu sync.Mutex
}

func newMailbox() *mailbox {
	return &mailbox{wake: make(chan struct{}, 1), feed: newCadenceFeed()}
}

// notify wakes the evaluator, which then looks at the whole mailbox.
func (mb *mailbox) notify() { wake(mb.wake) }

// wake signals ch without blocking: its receiver looks at the state behind
// it when it wakes, so one pending signal is enough.
func wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// evictHold is a dispatched count window not saved yet: the store keeps
// its records (offsets from bounds on, per partition) until the evaluation
// of end is saved.
type evictHold struct {
	end    uint64
	bounds map[int32]int64
}

// maxHolds bounds the windows whose records the store keeps for a replay:
// the running evaluation, the pending one and a replay (a skipped one is
// released at once). Beyond it the oldest is given up, so that the store
// stays bounded whatever the evaluator does.
const maxHolds = 4

// dispatch snapshots the window (ending at record endSeq) for the
// evaluator.
func (s *streamRun) dispatch(endSeq uint64) {
	if s.cfg.twoCadence() {
		s.dispatchCheck(endSeq, false)
		return
	}
	job := &evalJob{snap: s.win.Snapshot(), endSeq: endSeq, bounds: s.win.EvictionBounds(), gen: s.mb.gen.Load()}
	if s.m.stateWriter != nil {
		job.next = make(map[int32]int64, len(s.next))
		for p, o := range s.next {
			job.next[p] = o
		}
	}
	s.dispatchJob(job)
}

// dispatchJob hands job to the evaluator and, for a count window, keeps
// its records in the store until it is saved.
func (s *streamRun) dispatchJob(job *evalJob) {
	s.evalSeq = max(s.evalSeq, job.endSeq+1)
	s.mb.mu.Lock()
	switch {
	case job.replay:
		s.mb.replay = job
	case s.mb.pending != nil:
		skipped := s.mb.pending.endSeq
		s.m.metrics.Evaluations.WithLabelValues(s.name, "skipped").Inc()
		s.log.Debug("evaluation skipped: the previous one is still running", "window_end", skipped)
		// Never evaluated, so nothing to replay: its records can go.
		s.holds = slices.DeleteFunc(s.holds, func(h evictHold) bool { return h.end == skipped })
		fallthrough
	default:
		s.mb.pending = job
	}
	s.mb.mu.Unlock()
	if s.cfg.Interval == 0 {
		if len(s.holds) == maxHolds {
			s.holds = slices.Delete(s.holds, 0, 1)
		}
		s.holds = append(s.holds, evictHold{end: job.endSeq, bounds: job.bounds})
	}
	s.mb.notify()
}

// evictionBounds are the store's eviction bounds for the next commit: the
// window's, held back to the first records of the dispatched windows whose
// evaluation is not saved yet.
func (s *streamRun) evictionBounds() map[int32]int64 {
	b := s.win.EvictionBounds()
	done := s.evaluated.Load() // window end of the last saved evaluation + 1
	s.holds = slices.DeleteFunc(s.holds, func(h evictHold) bool { return h.end < done })
	for _, h := range s.holds {
		for p, o := range h.bounds {
			if cur, ok := b[p]; ok && o < cur {
				b[p] = o
			}
		}
	}
	return b
}

// evaluator is one stream's evaluation, owned by its evaluator goroutine
// (run): the tracker, the end of the last saved evaluation, the checker of
// two cadences and the counters of saved evaluations. It takes the work
// the consumer put in the mailbox (under mb.mu), saves each outcome
// (record: under mb.saveMu, against drop), delivers its events (del, on
// this goroutine) and hands the status history's part to hist. It starts
// the stream's discoverer and historian and waits for them. Before run
// starts, Run's goroutine restores the tracker (loadTracker, applied by
// restore) and delivers the outbox left by the last run.
type evaluator struct {
	*streamBase
	tracker     *alerts.Tracker
	trackerEnd  uint64
	hasTracker  bool
	evaluations int
	// chk is the checker of two cadences (runChecks), last the job whose
	// window it holds (mergeFound).
	chk  eval.Checker
	last *checkJob
	// del is the stream's outbox delivery, a unit of its own on this
	// goroutine (built at its first use: outbox).
	del  *deliver.Outbox
	disc *discoverer
	// hist appends the status history off the evaluator (started and
	// closed by run).
	hist *history.Historian[*historyJob]
}

func newEvaluator(base *streamBase) *evaluator {
	return &evaluator{
		streamBase: base,
		tracker:    eval.NewTracker(base.cfg.evalConfig()),
		chk:        eval.NewChecker(base.cfg.Typing),
		disc:       &discoverer{streamBase: base},
	}
}

// outbox is the stream's delivery, built at its first use: NewMonitor
// opens the store and the sinks after the evaluator. Run's goroutine uses
// it before run starts (the outbox left by the last run), run after.
func (e *evaluator) outbox() *deliver.Outbox {
	if e.del == nil {
		e.del = deliver.New(e.m.store, e.name, e.log, e.m.sinks, e.m.metrics.Alerts,
			func() time.Duration { return e.m.hooks.retryBaseOr(deliver.DefaultRetryBase) })
	}
	return e.del
}

// savedTracker is what the store holds of a stream's evaluations when it
// is restored: the window end of the last one saved (ok: there is one),
// and how many dependencies its tracker tracks.
type savedTracker struct {
	end     uint64
	ok      bool
	tracked int
}

// loadTracker restores the tracker the store saved last (restore, before
// run starts).
func (e *evaluator) loadTracker() (savedTracker, error) {
	data, end, err := e.m.store.LoadTracker(e.name)
	if err != nil {
		return savedTracker{}, fmt.Errorf("stream %s: read tracker: %w", e.name, err)
	}
	if data != nil {
		if err := e.tracker.UnmarshalJSON(data); err != nil {
			return savedTracker{}, fmt.Errorf("stream %s: %w", e.name, err)
		}
		e.trackerEnd, e.hasTracker = end, true
		e.evaluated.Store(end + 1)
	}
	return savedTracker{end: e.trackerEnd, ok: e.hasTracker, tracked: len(e.tracker.Tracked())}, nil
}

// run runs the stream's evaluations, and the delivery retries, until ctx
// is done, with the stream's discoverer and historian beside it. It
// returns an error only for failures that must stop the pipeline (the
// store).
func (e *evaluator) run(ctx context.Context) error {
	defer e.outbox().StopRetries()
	e.outbox().Rearm()
	wait := e.disc.start(ctx, e.cfg.twoCadence())
	defer wait()
	e.hist = history.Start(ctx, history.DefaultRelatedPending, e.appendStatus)
	defer e.hist.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-e.outbox().Retries():
			if err := e.outbox().Retry(ctx); err != nil {
				return stopped(ctx, err)
			}
			continue
		case <-e.mb.wake:
		}
		w := e.take()
		if w.restore != nil {
			if err := e.applyState(w.restore); err != nil {
				return err
			}
		}
		if err := e.step(ctx, w); err != nil {
			return stopped(ctx, err)
		}
		e.outbox().Rearm()
	}
}

// stopped is err, or nil when ctx is done (the run ends, not fails).
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// work is what the evaluator takes from the mailbox in one go.
type work struct {
	replay, pending *evalJob
	restore         *takeover.StateRecord
	checks          []*checkJob
}

// take empties the mailbox.
func (e *evaluator) take() work {
	e.mb.mu.Lock()
	defer e.mb.mu.Unlock()
	w := work{replay: e.mb.replay, pending: e.mb.pending, restore: e.mb.restore, checks: e.mb.feed.checks}
	e.mb.replay, e.mb.pending, e.mb.restore, e.mb.feed.checks = nil, nil, nil, nil
	if w.pending != nil {
		wake(e.mb.feed.consumerWake) // a consumer waiting to hand over the next window (awaitDiscovery)
	}
	return w
}

// step does the work the mailbox held after its tracker state (restored
// first, by run): the replayed and the pending evaluation, then the
// checks; once the check queue is empty the gate lets discovery go on.
func (e *evaluator) step(ctx context.Context, w work) error {
	for _, j := range []*evalJob{w.replay, w.pending} {
		if j == nil {
			continue
		}
		if err := e.evaluate(ctx, j); err != nil {
			return err
		}
	}
	if len(w.checks) > 0 {
		if err := e.runChecks(ctx, &e.chk, w.checks); err != nil {
			return err
		}
		e.mb.mu.Lock()
		if len(e.mb.feed.checks) == 0 {
			e.mb.feed.gate.SetChecks(false) // discovery may go on
		}
		e.mb.mu.Unlock()
	}
	return e.mergeFound(ctx)
}

func (s *evaluator) env() eval.Env {
	return eval.Env{Name: s.name, Cfg: s.cfg.evalConfig(), Log: s.log, Tracker: s.tracker}
}

// observeEval counts an evaluation that took d and ended in result, and
// keeps the longest evaluation's time.
func (s *evaluator) observeEval(d time.Duration, result string) {
	if int64(d) > s.maxEval.Load() {
		s.maxEval.Store(int64(d))
	}
	s.m.metrics.EvalDuration.WithLabelValues(s.name).Observe(d.Seconds())
	s.m.metrics.Evaluations.WithLabelValues(s.name, result).Inc()
}

// evaluate runs one evaluation of the monitor: eval.Env.EvaluateWindow, then record
// saves the tracker and its events in one synced batch and delivers them.
func (s *evaluator) evaluate(ctx context.Context, job *evalJob) error {
	if s.hasTracker && job.endSeq <= s.trackerEnd {
		return nil // evaluated and saved before a restart
	}
	start := time.Now()
	if job.snap.Len() == 0 {
		return nil
	}
	out, err := s.env().EvaluateWindow(ctx, job.snap, job.endSeq)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *eval.StepError
		if errors.As(err, &se) {
			s.m.metrics.Evaluations.WithLabelValues(s.name, "error").Inc()
			s.log.Error("evaluation failed", "window_end", job.endSeq, "step", se.Step, "err", se.Err)
			return nil
		}
		return err
	}
	evaluated := time.Now()
	if err := s.record(ctx, job, out); err != nil {
		return err
	}
	d := time.Since(start)
	s.observeEval(d, out.Result)
	if out.Result == "ok" {
		s.m.metrics.LastEval.WithLabelValues(s.name).Set(float64(time.Now().UnixNano()) / 1e9)
	}
	s.log.Debug("evaluation done", "window_end", job.endSeq, "records", job.snap.Len(), "columns", len(out.Table.Columns),
		"tracked", out.Tracked, "discovered", out.Found, "events", len(out.Events), "seconds", d.Seconds(),
		"validated", out.Checked, "encode_s", out.EncodeTime.Seconds(), "discover_s", out.DiscoverTime.Seconds(),
		"validate_s", out.CheckTime.Seconds(), "persist_deliver_s", out.Delivered.Sub(evaluated).Seconds(),
		"status_s", time.Since(out.Delivered).Seconds())
	return nil
}

// record is the one place an evaluation's outcome leaves the evaluator:
// the tracker state and the events are saved in one synced batch (the
// outbox), the state is published to the state topic, the metrics are
// updated and the events delivered; only then is the status history's
// part handed to the stream's historian (recordStatus: the samples of the
// events' related dependencies, which no event carries, then the
// history's append, off the evaluator), so that neither an event's
// delivery nor the next evaluation waits for them. The evaluation of a
// window dropped meanwhile (job.gen older than the mailbox's) is not
// saved: it is discarded (discardDropped).
func (s *evaluator) record(ctx context.Context, job *evalJob, out *eval.Outcome) error {
	trackerState, err := s.tracker.MarshalJSON()
	if err != nil {
		return fmt.Errorf("stream %s: encode tracker: %w", s.name, err)
	}
	ev, err := deliver.Evaluation(s.name, job.endSeq, trackerState, out.Events)
	if err != nil {
		return err
	}
	s.mb.saveMu.Lock()
	if job.gen != s.mb.gen.Load() {
		s.mb.saveMu.Unlock()
		return s.discardDropped(job.endSeq, len(out.Events))
	}
	err = s.m.store.SaveEvaluation(ev)
	s.mb.saveMu.Unlock()
	if err != nil {
		return fmt.Errorf("stream %s: save evaluation: %w", s.name, err)
	}
	s.trackerEnd, s.hasTracker = job.endSeq, true
	if !job.replay {
		s.publishState(ctx, job.endSeq, job.next, trackerState)
	}
	s.evaluated.Store(job.endSeq + 1)
	s.evaluations++
	if s.evaluations%housekeepingEvery == 0 {
		s.outbox().Prune(time.Now())
	}
	s.m.metrics.Alerts.Observe(out.Events)
	s.m.metrics.Alerts.UpdateTracker(s.name, s.tracker)
	if err := s.outbox().Deliver(ctx); err != nil {
		return err
	}
	out.Delivered = time.Now()
	s.recordStatus(job.snap, out)
	return nil
}

// discardDropped forgets the evaluation of a window dropped while it ran
// (streamRun.drop): nothing of it is saved or delivered, and the tracker,
// which it changed, goes back to the state the store saved last (a fresh
// tracker's when none), as if it had not run.
func (s *evaluator) discardDropped(endSeq uint64, events int) error {
	data, _, err := s.m.store.LoadTracker(s.name)
	if err != nil {
		return fmt.Errorf("stream %s: read tracker: %w", s.name, err)
	}
	if data == nil {
		if data, err = eval.NewTracker(s.cfg.evalConfig()).MarshalJSON(); err != nil {
			return fmt.Errorf("stream %s: encode tracker: %w", s.name, err)
		}
	}
	if err := s.tracker.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("stream %s: %w", s.name, err)
	}
	s.log.Info("evaluation of a dropped window discarded", "window_end", endSeq, "events", events)
	return nil
}

// housekeepingEvery is how many evaluations go between two prunings of
// the stream's old delivery markers (deliver.Outbox.Prune).
const housekeepingEvery = 64
