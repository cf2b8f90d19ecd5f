package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/deliver"
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
// discoverer take them. It holds at most one pending evaluation. A new
// window due while the previous one still waits replaces it (counted as
// skipped): the evaluator always works on the newest window and
// consumption never waits for it. A replayed evaluation (lost in a crash)
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

// notify wakes the evaluator (it looks at the whole mailbox when it wakes,
// so one pending wake is enough).
func (mb *mailbox) notify() {
	select {
	case mb.wake <- struct{}{}:
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
	// chk is the checker of two cadences (runChecks).
	chk checker
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
		tracker:    newTracker(base.cfg),
		chk:        checker{typing: base.cfg.Typing},
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
	if len(w.checks) == 0 {
		return nil
	}
	if err := e.runChecks(ctx, &e.chk, w.checks); err != nil {
		return err
	}
	e.mb.mu.Lock()
	if len(e.mb.feed.checks) == 0 {
		e.mb.feed.gate.setChecks(false) // discovery may go on
	}
	e.mb.mu.Unlock()
	return nil
}

// dependencyLevel is the lattice level of a dependency (FASTOD): the number
// of columns it mentions.
func dependencyLevel(d discovery.Dependency) int { return len(d.Columns()) }

// newTracker is the tracker of a validated stream configuration.
func newTracker(cfg StreamConfig) *alerts.Tracker {
	return alerts.NewTracker(alerts.Config{
		Stream:        cfg.Name,
		Epsilon:       cfg.Epsilon,
		Margin:        cfg.Margin,
		K:             cfg.K,
		RetireAfter:   cfg.RetireAfter,
		Pinned:        cfg.pinned,
		DiscoverAfter: cfg.DiscoverAfter,
	})
}

// evalEnv is what the evaluation of a window needs besides the window: the
// stream's name, configuration, logger and tracker. The monitor
// (evaluator.evaluate) and replay share it, so that both run the same steps.
type evalEnv struct {
	name    string
	cfg     *StreamConfig
	log     *slog.Logger
	tracker *alerts.Tracker
	// workers is discovery's worker count; 0 means discoveryWorkers().
	workers int
	// pause is discovery's Pause (two cadences: the check gate), or nil.
	pause func(ctx context.Context) error
}

func (s *evaluator) env() evalEnv {
	return evalEnv{name: s.name, cfg: &s.cfg, log: s.log, tracker: s.tracker}
}

// stepError is a failed step of one evaluation: the window is not
// evaluated (counted and logged), the pipeline goes on.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// evalOutcome is one window evaluated up to the tracker's events.
type evalOutcome struct {
	info   alerts.WindowInfo
	table  *table.Table
	obs    []alerts.Observation
	events []alerts.Event
	// result is the evaluations metric's label: "ok", or "error" when
	// discovery failed (tracked dependencies were still checked).
	result string
	// tracked, found, checked count the tracked dependencies, the minimal
	// ones discovery found and the tracked ones the check path validated.
	tracked, found, checked int
	// merged: a check (two cadences) that took in a discovery's result.
	merged bool
	// prepared: the dependencies a check's engine kept ahead of their
	// merge; builds: what it built from the whole window (debug log, tests).
	prepared int
	builds   incremental.Builds
	// chk: a check's window to take samples on (its checker's, which is
	// the check's until the evaluator applies the next check); the samples
	// of the events' related dependencies are taken on the columns it
	// copies after delivery, off the evaluator (takeRelated; a full
	// evaluation takes them on table).
	chk *checkSampler
	// Step durations, for the debug log and benchmarks.
	encodeTime, discoverTime, checkTime time.Duration
	// delivered: when record's delivery of the events ended (before the
	// status history's hand-off), for the debug log.
	delivered time.Time
}

// evaluateWindow runs the pipeline's steps on one window: encode it, run
// discovery (the discovery path), re-validate the tracked dependencies
// discovery did not measure (the check path), build the observations, feed
// the tracker and attach samples to its events. It returns a *stepError
// when a step fails, ctx's error when ctx is done.
//
// A tracked dependency that mentions a column the window does not have (a
// field that stopped arriving) is not observed in that window: no event is
// raised for it, and an unpinned one is retired by the tracker after
// RetireAfter windows without observation. Reporting it as violated would
// page people for a schema change, which is not a data error.
func (e evalEnv) evaluateWindow(ctx context.Context, snap *window.Snapshot, endSeq uint64) (*evalOutcome, error) {
	start := time.Now()
	out := &evalOutcome{info: e.windowInfo(snap, endSeq), result: "ok"}
	table, err := table.EncodeTyped(snap.Columns(), e.cfg.typingFor(snap.Columns()))
	if err != nil {
		return nil, &stepError{"encode", err}
	}
	out.table = table
	encoded := time.Now()

	disc, err := e.discover(ctx, table, endSeq)
	if err != nil {
		return nil, err
	}
	if disc.failed {
		out.result = "error"
	}
	discovered := time.Now()

	tracked := e.tracker.Tracked()
	deps := toCheck(tracked, disc.found, table)
	checked, err := e.check(ctx, table, deps)
	if err != nil {
		return nil, err
	}
	checkedAt := time.Now()

	out.obs = observations(tracked, checked, disc, e.cfg.minScore(table.Rows))
	out.events = e.tracker.Observe(out.info, out.obs)
	e.attachSamples(ctx, out, snap)
	out.tracked, out.found, out.checked = len(tracked), len(disc.found), len(deps)
	out.encodeTime, out.discoverTime, out.checkTime = encoded.Sub(start), discovered.Sub(encoded), checkedAt.Sub(discovered)
	return out, nil
}

// discoveryOutcome is the discovery path's result on one window.
type discoveryOutcome struct {
	// results is the minimal set in discovery's order (by score), ids[i]
	// results[i]'s DependencyID (computed once: the checks before the
	// merge read them again and again, prepareRules), found the results by
	// it (setResults).
	results []discovery.Result
	ids     []string
	found   map[string]discovery.Result
	// complete: every level was searched; levels: the levels completed.
	complete bool
	levels   int
	// failed: discovery returned an error other than its time budget.
	failed bool
}

// discover runs full discovery on the window within the evaluation
// timeout. A run the timeout stops keeps the levels it completed; a failed
// run is logged and yields what it found (the check path still runs).
// Only ctx's error is returned.
func (e evalEnv) discover(ctx context.Context, table *table.Table, endSeq uint64) (discoveryOutcome, error) {
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if e.cfg.EvaluationTimeout > 0 {
		dctx, cancel = context.WithTimeout(ctx, e.cfg.EvaluationTimeout)
	}
	disc, derr := discovery.Discover(dctx, table, discovery.Options{
		Epsilon: e.cfg.Epsilon, MaxLevel: e.cfg.MaxLevel, Workers: cmp.Or(e.workers, discoveryWorkers()),
		MinStrength: e.cfg.MinStrength, Pause: e.pause,
	})
	cancel()
	var out discoveryOutcome
	if derr != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if errors.Is(derr, context.DeadlineExceeded) {
			e.log.Warn("discovery stopped at the evaluation timeout; later levels not searched",
				"window_end", endSeq, "timeout", e.cfg.EvaluationTimeout)
		} else {
			out.failed = true
			e.log.Error("discovery failed; tracked dependencies are still validated", "window_end", endSeq, "err", derr)
		}
	}
	out.found = map[string]discovery.Result{}
	if disc != nil {
		out.complete, out.levels = disc.Complete && derr == nil, disc.Stats.Levels
		out.setResults(disc.Dependencies)
	}
	return out, nil
}

// setResults sets o's results and indexes them by id (ids, found).
func (o *discoveryOutcome) setResults(results []discovery.Result) {
	o.results, o.ids = results, make([]string, len(results))
	o.found = make(map[string]discovery.Result, len(results))
	for i, r := range results {
		o.ids[i] = alerts.DependencyID(r.Dependency)
		o.found[o.ids[i]] = r
	}
}

// toCheck lists the tracked dependencies the check path validates: those
// discovery did not find (one it found minimal is valid, so its removal
// count is exact: the early exit only cuts counts above floor(eps*n)) and
// whose columns are all in the table.
func toCheck(tracked []discovery.Dependency, found map[string]discovery.Result, table *table.Table) []discovery.Dependency {
	have := make(map[string]bool, len(table.Columns))
	for _, c := range table.Columns {
		have[c.Name] = true
	}
	var out []discovery.Dependency
	for _, d := range tracked {
		if _, ok := found[alerts.DependencyID(d)]; ok {
			continue
		}
		if !slices.ContainsFunc(d.Columns(), func(c string) bool { return !have[c] }) {
			out = append(out, d)
		}
	}
	return out
}

// check measures deps on the whole window (exact error), by DependencyID.
// A dependency that cannot be validated is logged and left out (not
// observed). Only ctx's error is returned.
func (e evalEnv) check(ctx context.Context, table *table.Table, deps []discovery.Dependency) (map[string]discovery.Result, error) {
	results, errs, err := discovery.ValidateEach(ctx, table, deps, discovery.Options{Epsilon: e.cfg.Epsilon, MinStrength: e.cfg.MinStrength})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &stepError{"validate", err}
	}
	out := make(map[string]discovery.Result, len(deps))
	for i, d := range deps {
		if errs[i] != nil {
			e.log.Warn("validate tracked dependency", "dependency", d.String(), "err", errs[i])
			continue
		}
		out[alerts.DependencyID(d)] = results[i]
	}
	return out, nil
}

// observations builds the tracker's input for one window from the two
// paths' results: every tracked dependency measured by discovery or by the
// check path (in tracked order; one measured by neither is not observed),
// then the newly minimal ones in discovery's order, the reliable ones only
// (discovery.Result.Reliable: the stream tracks rules, not chance) and
// unless their context is too close to a key (score below minScore). Minimal is whether
// discovery found it; when discovery did not finish, a dependency above the
// levels it completed counts as minimal (unknown), so that it is not
// retired for want of search.
func observations(tracked []discovery.Dependency, checked map[string]discovery.Result, disc discoveryOutcome, minScore float64) []alerts.Observation {
	obs := make([]alerts.Observation, 0, len(tracked)+len(disc.results))
	in := make(map[string]bool, len(tracked)+len(disc.results))
	for _, d := range tracked {
		id := alerts.DependencyID(d)
		r, ok := disc.found[id]
		if !ok {
			r, ok = checked[id]
		}
		if !ok || in[id] {
			continue
		}
		in[id] = true
		obs = append(obs, alerts.Observation{Dependency: d, Removals: r.Removals, Error: r.Error, Strength: r.Strength, Score: r.Score})
	}
	for _, r := range disc.results {
		if r.Score < minScore || !r.Reliable {
			continue
		}
		if id := alerts.DependencyID(r.Dependency); !in[id] {
			in[id] = true
			obs = append(obs, alerts.Observation{Dependency: r.Dependency, Removals: r.Removals, Error: r.Error, Strength: r.Strength, Score: r.Score})
		}
	}
	for i := range obs {
		d := obs[i].Dependency
		_, ok := disc.found[alerts.DependencyID(d)]
		obs[i].Minimal = ok || (!disc.complete && dependencyLevel(d) > disc.levels)
	}
	return obs
}

// windowInfo describes a snapshot for events.
func (e evalEnv) windowInfo(snap *window.Snapshot, endSeq uint64) alerts.WindowInfo {
	w := alerts.WindowInfo{
		Stream:       e.name,
		Topic:        e.cfg.Topic,
		StartOffsets: map[int32]int64{},
		EndOffsets:   map[int32]int64{},
		Records:      snap.Len(),
		EndSeq:       endSeq,
	}
	for row := range snap.Len() {
		m := snap.Meta(row)
		if o, ok := w.StartOffsets[m.Partition]; !ok || m.Offset < o {
			w.StartOffsets[m.Partition] = m.Offset
		}
		if o, ok := w.EndOffsets[m.Partition]; !ok || m.Offset > o {
			w.EndOffsets[m.Partition] = m.Offset
		}
		if w.StartTime.IsZero() || m.Time.Before(w.StartTime) {
			w.StartTime = m.Time
		}
		if m.Time.After(w.EndTime) {
			w.EndTime = m.Time
		}
	}
	return w
}

// samples maps removal-set rows to records with the dependency's values.
func (e evalEnv) samples(snap *window.Snapshot, d discovery.Dependency, rows []int) []alerts.Sample {
	if len(rows) == 0 {
		return nil
	}
	cols := d.Columns()
	out := make([]alerts.Sample, 0, min(len(rows), e.cfg.Sample))
	for _, row := range rows {
		if len(out) == e.cfg.Sample || row < 0 || row >= snap.Len() {
			break
		}
		m := snap.Meta(row)
		out = append(out, alerts.Sample{Topic: e.cfg.Topic, Partition: m.Partition, Offset: m.Offset, Values: snap.Values(row, cols)})
	}
	return out
}

// carriesSample says whether ev is an event that carries a sample of
// violating records: a violated or discovered dependency with removals.
func carriesSample(ev *alerts.Event) bool {
	return ev.Removals != 0 && (ev.Type == alerts.EventViolated || ev.Type == alerts.EventDiscovered)
}

// attachSamples gives the events that carry violating records (violated,
// discovered) a sample of a minimal removal set. It runs after the tracker,
// for the few dependencies that raise an event: a removal set costs a sort
// of the dependency's classes, and computing one for every observation made
// it a third of an evaluation's time. The samples are taken on the
// outcome's window (windowSamples) before the events are saved and
// delivered; their related dependencies' samples, which only the status
// history keeps, are taken after delivery, off the evaluator
// (recordStatus, relatedSamples).
func (e evalEnv) attachSamples(ctx context.Context, out *evalOutcome, snap *window.Snapshot) {
	deps, at := ownDependencies(out.events)
	if len(deps) == 0 {
		return
	}
	samples := e.windowSamples(ctx, out, snap, deps)
	if samples == nil {
		return
	}
	for i := range out.events {
		if ev := &out.events[i]; carriesSample(ev) {
			ev.Samples = samples[at[alerts.DependencyID(ev.Dependency)]]
		}
	}
}

// windowSamples takes a sample of a minimal removal set of each of deps
// on the outcome's window: the checker's for a check (out.chk:
// checkerSamples), the encoded window for a full evaluation (out.table,
// snap's: tableSamples). samples[i] is deps[i]'s (nil when it could not be
// validated); the result is nil when there is no window to take them on,
// it could not be encoded or ctx is done.
func (e evalEnv) windowSamples(ctx context.Context, out *evalOutcome, snap *window.Snapshot, deps []discovery.Dependency) [][]alerts.Sample {
	switch {
	case out.chk.attached():
		return e.checkerSamples(ctx, out.chk, deps)
	case out.table != nil && snap != nil:
		return e.tableSamples(ctx, out.table, snap, deps)
	}
	return nil
}

// tableSamples takes a sample of a minimal removal set of each of deps on
// an evaluation's encoded window (snap's): samples[i] is deps[i]'s (nil
// when it could not be validated, logged unless ctx is done).
func (e evalEnv) tableSamples(ctx context.Context, table *table.Table, snap *window.Snapshot, deps []discovery.Dependency) [][]alerts.Sample {
	opts := discovery.Options{Epsilon: e.cfg.Epsilon, RemovalSample: e.cfg.Sample}
	samples := make([][]alerts.Sample, len(deps))
	for i, d := range deps {
		r, err := discovery.Validate(ctx, table, d, opts)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("removal sample", "dependency", d.String(), "err", err)
			}
			continue
		}
		samples[i] = e.samples(snap, d, r.RemovalSample)
	}
	return samples
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

// evaluate runs one evaluation of the monitor: evaluateWindow, then record
// saves the tracker and its events in one synced batch and delivers them.
func (s *evaluator) evaluate(ctx context.Context, job *evalJob) error {
	if s.hasTracker && job.endSeq <= s.trackerEnd {
		return nil // evaluated and saved before a restart
	}
	start := time.Now()
	if job.snap.Len() == 0 {
		return nil
	}
	out, err := s.env().evaluateWindow(ctx, job.snap, job.endSeq)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *stepError
		if errors.As(err, &se) {
			s.m.metrics.Evaluations.WithLabelValues(s.name, "error").Inc()
			s.log.Error("evaluation failed", "window_end", job.endSeq, "step", se.step, "err", se.err)
			return nil
		}
		return err
	}
	evaluated := time.Now()
	if err := s.record(ctx, job, out); err != nil {
		return err
	}
	d := time.Since(start)
	s.observeEval(d, out.result)
	if out.result == "ok" {
		s.m.metrics.LastEval.WithLabelValues(s.name).Set(float64(time.Now().UnixNano()) / 1e9)
	}
	s.log.Debug("evaluation done", "window_end", job.endSeq, "records", job.snap.Len(), "columns", len(out.table.Columns),
		"tracked", out.tracked, "discovered", out.found, "events", len(out.events), "seconds", d.Seconds(),
		"validated", out.checked, "encode_s", out.encodeTime.Seconds(), "discover_s", out.discoverTime.Seconds(),
		"validate_s", out.checkTime.Seconds(), "persist_deliver_s", out.delivered.Sub(evaluated).Seconds(),
		"status_s", time.Since(out.delivered).Seconds())
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
func (s *evaluator) record(ctx context.Context, job *evalJob, out *evalOutcome) error {
	trackerState, err := s.tracker.MarshalJSON()
	if err != nil {
		return fmt.Errorf("stream %s: encode tracker: %w", s.name, err)
	}
	ev := &state.Evaluation{Stream: s.name, WindowEnd: job.endSeq, TrackerState: trackerState}
	for _, e := range out.events {
		payload, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("stream %s: encode event %s: %w", s.name, e.ID, err)
		}
		ev.Events = append(ev.Events, state.OutboxEvent{ID: e.ID, Payload: payload})
	}
	s.mb.saveMu.Lock()
	if job.gen != s.mb.gen.Load() {
		s.mb.saveMu.Unlock()
		return s.discardDropped(job.endSeq, len(out.events))
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
		s.housekeeping(time.Now())
	}
	s.m.metrics.Alerts.Observe(out.events)
	s.m.metrics.Alerts.UpdateTracker(s.name, s.tracker)
	if err := s.outbox().Deliver(ctx); err != nil {
		return err
	}
	out.delivered = time.Now()
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
		if data, err = newTracker(s.cfg).MarshalJSON(); err != nil {
			return fmt.Errorf("stream %s: encode tracker: %w", s.name, err)
		}
	}
	if err := s.tracker.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("stream %s: %w", s.name, err)
	}
	s.log.Info("evaluation of a dropped window discarded", "window_end", endSeq, "events", events)
	return nil
}

// discoveryWorkers leaves one core to the consume path, so that ingest
// keeps its pace while a window is evaluated (docs/DESIGN.md: evaluation never
// blocks consumption).
func discoveryWorkers() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// Housekeeping of the store, every housekeepingEvery evaluations: delivery
// markers are kept for deliveredKeep.
const (
	housekeepingEvery = 64
	// deliveredKeep: a delivery marker only matters while the evaluation
	// that produced its event can be replayed (after a crash, the window
	// end of the last batch) or the event id can come back from the events
	// topic's tail; a week is far beyond both.
	deliveredKeep = 7 * 24 * time.Hour
)

// housekeeping prunes the stream's old delivery markers. Failures are
// logged: they cost disk, not correctness.
func (s *evaluator) housekeeping(now time.Time) {
	if err := s.m.store.PruneDelivered(s.name, now.Add(-deliveredKeep)); err != nil {
		s.log.Warn("prune delivery markers", "err", err)
	}
}
