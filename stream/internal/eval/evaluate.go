package eval

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// dependencyLevel is the lattice level of a dependency (FASTOD): the number
// of columns it mentions.
func dependencyLevel(d discovery.Dependency) int { return len(d.Columns()) }

// Env is what the evaluation of a window needs besides the window: the
// stream's name, configuration, logger and tracker. The monitor
// (evaluator.evaluate) and replay share it, so that both run the same steps.
type Env struct {
	Name    string
	Cfg     *Config
	Log     *slog.Logger
	Tracker *alerts.Tracker
	// Workers is discovery's worker count; 0 means DiscoveryWorkers().
	Workers int
	// Pause is discovery's Pause (two cadences: the check gate), or nil.
	Pause func(ctx context.Context) error
}

// StepError is a failed step of one evaluation: the window is not
// evaluated (counted and logged), the pipeline goes on.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Outcome is one window evaluated up to the tracker's events.
type Outcome struct {
	Info   alerts.WindowInfo
	Table  *table.Table
	Obs    []alerts.Observation
	Events []alerts.Event
	// Result is the evaluations metric's label: "ok", or "error" when
	// discovery failed (tracked dependencies were still checked).
	Result string
	// Tracked, Found, Checked count the tracked dependencies, the minimal
	// ones discovery found and the tracked ones the check path validated.
	Tracked, Found, Checked int
	// Merged: a check (two cadences) that took in a discovery's result;
	// Again: on a window recorded before (MergeFound).
	Merged, Again bool
	// Prepared: the dependencies a check's engine kept ahead of their
	// merge; Builds: what it built from the whole window (debug log, tests).
	Prepared int
	Builds   incremental.Builds
	// chk: a check's window to take samples on (its checker's, which is
	// the check's until the evaluator applies the next check); the samples
	// of the events' related dependencies are taken on the columns it
	// copies after delivery, off the evaluator (TakeRelated; a full
	// evaluation takes them on Table).
	chk *checkSampler
	// Step durations, for the debug log and benchmarks.
	EncodeTime, DiscoverTime, CheckTime time.Duration
	// Delivered: when the evaluator's record of the outcome ended its
	// delivery of the events (before the status history's hand-off), for
	// the debug log; set by the evaluator.
	Delivered time.Time
}

// EvaluateWindow runs the pipeline's steps on one window: encode it, run
// discovery (the discovery path), re-validate the tracked dependencies
// discovery did not measure (the check path), build the observations, feed
// the tracker and attach samples to its events. It returns a *StepError
// when a step fails, ctx's error when ctx is done.
//
// A tracked dependency that mentions a column the window does not have (a
// field that stopped arriving) is not observed in that window: no event is
// raised for it, and an unpinned one is retired by the tracker after
// RetireAfter windows without observation. Reporting it as violated would
// page people for a schema change, which is not a data error.
func (e Env) EvaluateWindow(ctx context.Context, snap *window.Snapshot, endSeq uint64) (*Outcome, error) {
	start := time.Now()
	out := &Outcome{Info: e.WindowInfo(snap, endSeq), Result: "ok"}
	table, err := table.EncodeTyped(snap.Columns(), e.Cfg.typingFor(snap.Columns()))
	if err != nil {
		return nil, &StepError{Step: "encode", Err: err}
	}
	out.Table = table
	encoded := time.Now()

	disc, err := e.discover(ctx, table, endSeq)
	if err != nil {
		return nil, err
	}
	if disc.Failed {
		out.Result = "error"
	}
	discovered := time.Now()

	tracked := e.Tracker.Watched()
	deps := toCheck(tracked, disc.Found, table)
	checked, err := e.check(ctx, table, deps)
	if err != nil {
		return nil, err
	}
	checkedAt := time.Now()

	out.Obs = observations(tracked, checked, disc, e.Cfg.minScore(table.Rows))
	e.measureNeeds(ctx, out.Info, out.Obs, alerts.Discovered, whole(table))
	out.Events = e.Tracker.Observe(out.Info, out.Obs)
	e.attachSamples(ctx, out, snap)
	out.Tracked, out.Found, out.Checked = len(tracked), len(disc.Found), len(deps)
	out.EncodeTime, out.DiscoverTime, out.CheckTime = encoded.Sub(start), discovered.Sub(encoded), checkedAt.Sub(discovered)
	return out, nil
}

// DiscoveryOutcome is the discovery path's result on one window.
type DiscoveryOutcome struct {
	// Results is the minimal set in discovery's order (by score), ids[i]
	// Results[i]'s DependencyID (computed once: the checks before the
	// merge read them again and again, prepareRules), Found the results by
	// it (setResults).
	Results []discovery.Result
	ids     []string
	Found   map[string]discovery.Result
	// Complete: every level was searched; Levels: the levels completed.
	Complete bool
	Levels   int
	// Failed: discovery returned an error other than its time budget.
	Failed bool
}

// discover runs full discovery on the window within the evaluation
// timeout. A run the timeout stops keeps the levels it completed; a failed
// run is logged and yields what it found (the check path still runs).
// Only ctx's error is returned.
func (e Env) discover(ctx context.Context, table *table.Table, endSeq uint64) (DiscoveryOutcome, error) {
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if e.Cfg.EvaluationTimeout > 0 {
		dctx, cancel = context.WithTimeout(ctx, e.Cfg.EvaluationTimeout)
	}
	disc, derr := discovery.Discover(dctx, table, discovery.Options{
		Epsilon: e.Cfg.Epsilon, MaxLevel: e.Cfg.MaxLevel, Workers: cmp.Or(e.Workers, DiscoveryWorkers()),
		MinStrength: e.Cfg.MinStrength, Pause: e.Pause,
	})
	cancel()
	var out DiscoveryOutcome
	if derr != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if errors.Is(derr, context.DeadlineExceeded) {
			e.Log.Warn("discovery stopped at the evaluation timeout; later levels not searched",
				"window_end", endSeq, "timeout", e.Cfg.EvaluationTimeout)
		} else {
			out.Failed = true
			e.Log.Error("discovery failed; tracked dependencies are still validated", "window_end", endSeq, "err", derr)
		}
	}
	out.Found = map[string]discovery.Result{}
	if disc != nil && e.Cfg.MinStrength > 0 {
		if err := discovery.Summarize(ctx, table, disc, discovery.Options{Epsilon: e.Cfg.Epsilon, MaxLevel: e.Cfg.MaxLevel,
			MinStrength: e.Cfg.MinStrength, Pause: e.Pause}); err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			e.Log.Warn("summarize the discovery (keys, equivalences): its rules are kept as found", "window_end", endSeq, "err", err)
		}
	}
	if disc != nil {
		out.Complete, out.Levels = disc.Complete && derr == nil, disc.Stats.Levels
		out.setResults(disc.Dependencies)
	}
	return out, nil
}

// setResults sets o's results and indexes them by id (ids, found).
func (o *DiscoveryOutcome) setResults(results []discovery.Result) {
	o.Results, o.ids = results, make([]string, len(results))
	o.Found = make(map[string]discovery.Result, len(results))
	for i, r := range results {
		o.ids[i] = alerts.DependencyID(r.Dependency)
		o.Found[o.ids[i]] = r
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
func (e Env) check(ctx context.Context, table *table.Table, deps []discovery.Dependency) (map[string]discovery.Result, error) {
	results, errs, err := discovery.ValidateEach(ctx, table, deps, discovery.Options{Epsilon: e.Cfg.Epsilon, MinStrength: e.Cfg.MinStrength})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &StepError{Step: "validate", Err: err}
	}
	out := make(map[string]discovery.Result, len(deps))
	for i, d := range deps {
		if errs[i] != nil {
			e.Log.Warn("validate tracked dependency", "dependency", d.String(), "err", errs[i])
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
// unless their context is too close to a key (tracks). Minimal and the rest
// of what discovery says of each are discoveryFacts'.
func observations(tracked []discovery.Dependency, checked map[string]discovery.Result, disc DiscoveryOutcome, minScore float64) []alerts.Observation {
	obs := make([]alerts.Observation, 0, len(tracked)+len(disc.Results))
	in := make(map[string]bool, len(tracked)+len(disc.Results))
	for _, d := range tracked {
		id := alerts.DependencyID(d)
		r, ok := disc.Found[id]
		if !ok {
			r, ok = checked[id]
		}
		if !ok || in[id] {
			continue
		}
		in[id] = true
		obs = append(obs, alerts.Observation{Dependency: d, Removals: r.Removals, Error: r.Error, Strength: r.Strength, Score: r.Score})
	}
	for _, r := range disc.Results {
		if !tracks(r, minScore) {
			continue
		}
		if id := alerts.DependencyID(r.Dependency); !in[id] {
			in[id] = true
			obs = append(obs, alerts.Observation{Dependency: r.Dependency, Removals: r.Removals, Error: r.Error, Strength: r.Strength, Score: r.Score})
		}
	}
	for i := range obs {
		discoveryFacts(&obs[i], &disc)
	}
	return obs
}

// WindowInfo describes a snapshot for events.
func (e Env) WindowInfo(snap *window.Snapshot, endSeq uint64) alerts.WindowInfo {
	w := alerts.WindowInfo{
		Stream:       e.Name,
		Topic:        e.Cfg.Topic,
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
func (e Env) samples(snap *window.Snapshot, d discovery.Dependency, rows []int) []alerts.Sample {
	if len(rows) == 0 {
		return nil
	}
	cols := d.Columns()
	out := make([]alerts.Sample, 0, min(len(rows), e.Cfg.Sample))
	for _, row := range rows {
		if len(out) == e.Cfg.Sample || row < 0 || row >= snap.Len() {
			break
		}
		m := snap.Meta(row)
		out = append(out, alerts.Sample{Topic: e.Cfg.Topic, Partition: m.Partition, Offset: m.Offset, Values: snap.Values(row, cols)})
	}
	return out
}

// CarriesSample says whether ev is an event that carries a sample of
// violating records: a violated or discovered dependency with removals.
func CarriesSample(ev *alerts.Event) bool {
	return ev.Removals != 0 && (ev.Type == alerts.EventViolated || ev.Type == alerts.EventDiscovered)
}

// attachSamples gives the events that carry violating records (violated,
// discovered) a sample of them. It runs after the tracker, for the few
// dependencies that raise an event: a removal set costs a sort of the
// dependency's classes, which no observation without an event needs. The
// violated events get their explanations first (explainEvents), whose
// samples are the violating records that entered last, each with what the
// rule expected; the others, and a violated one whose explanation failed,
// a sample of a minimal removal set (windowSamples), so that an explained
// event's removal set is computed once. Both are taken on the outcome's
// window before the events are saved and delivered; their related
// dependencies' samples, which only the status history keeps, are taken
// after delivery, off the evaluator (TakeRelated, RelatedSamples).
func (e Env) attachSamples(ctx context.Context, out *Outcome, snap *window.Snapshot) {
	deps, _ := ownDependencies(out.Events, false)
	if len(deps) == 0 {
		return
	}
	if s := out.chk; s.attached() { // the explanations read the rule columns' encoding
		s.take(sampledColumns(deps))
		if err := s.encode(e.Cfg.typingFor); err != nil {
			e.Log.Warn("removal sample: encode", "err", err)
			return
		}
	}
	e.explainEvents(ctx, out, snap)
	deps, at := ownDependencies(out.Events, true)
	if len(deps) == 0 {
		return
	}
	samples := e.windowSamples(ctx, out, snap, deps)
	if samples == nil {
		return
	}
	for i := range out.Events {
		if ev := &out.Events[i]; CarriesSample(ev) && ev.Explanation == nil {
			ev.Samples = samples[at[alerts.DependencyID(ev.Dependency)]]
		}
	}
}

// windowSamples takes a sample of a minimal removal set of each of deps
// on the outcome's window: the checker's for a check (out.chk:
// checkerSamples), the encoded window for a full evaluation (out.Table,
// snap's: tableSamples). samples[i] is deps[i]'s (nil when it could not be
// validated); the result is nil when there is no window to take them on,
// it could not be encoded or ctx is done.
func (e Env) windowSamples(ctx context.Context, out *Outcome, snap *window.Snapshot, deps []discovery.Dependency) [][]alerts.Sample {
	switch {
	case out.chk.attached():
		return e.checkerSamples(ctx, out.chk, deps)
	case out.Table != nil && snap != nil:
		return e.tableSamples(ctx, out.Table, snap, deps)
	}
	return nil
}

// tableSamples takes a sample of a minimal removal set of each of deps on
// an evaluation's encoded window (snap's): samples[i] is deps[i]'s (nil
// when it could not be validated, logged unless ctx is done).
func (e Env) tableSamples(ctx context.Context, table *table.Table, snap *window.Snapshot, deps []discovery.Dependency) [][]alerts.Sample {
	samples := make([][]alerts.Sample, len(deps))
	sets, errs, err := discovery.RemovalSets(ctx, table, deps, e.Cfg.Sample)
	if err != nil {
		if ctx.Err() == nil {
			e.Log.Warn("removal sample", "err", err)
		}
		return samples
	}
	for i, d := range deps {
		if errs[i] != nil {
			e.Log.Warn("removal sample", "dependency", d.String(), "err", errs[i])
			continue
		}
		samples[i] = e.samples(snap, d, sets[i].Sample)
	}
	return samples
}

// DiscoveryWorkers leaves one core to the consume path, so that ingest
// keeps its pace while a window is evaluated (docs/DESIGN.md: evaluation never
// blocks consumption).
func DiscoveryWorkers() int { return max(1, runtime.GOMAXPROCS(0)-1) }
