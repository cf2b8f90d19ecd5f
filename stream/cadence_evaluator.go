package stream

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// waitMerge waits, before the check of the window ending at endSeq, for
// the discovery that check merges when it was re-run after a restart (or,
// with inOrder, whenever it is running): the uninterrupted run merged it
// there. The check gate is open while it waits. It returns ctx's error.
func (s *evaluator) waitMerge(ctx context.Context, endSeq uint64) error {
	d := uint64(s.cfg.DiscoverEvery)
	if endSeq < d {
		return nil
	}
	start := endSeq - d
	f := &s.mb.feed
	for {
		s.mb.mu.Lock()
		wait := f.rerun[start]
		if wait && slices.ContainsFunc(f.done, func(d discoveryDone) bool { return d.endSeq == start }) {
			wait = false
		}
		if !wait {
			delete(f.rerun, start)
		}
		f.gate.setMerging(wait)
		s.mb.mu.Unlock()
		if !wait {
			return nil
		}
		select {
		case <-ctx.Done():
			s.mb.mu.Lock()
			f.gate.setMerging(false)
			s.mb.mu.Unlock()
			return ctx.Err()
		case <-f.discDone:
		}
	}
}

// checker is the evaluator's state for two cadences: the incremental
// window and the metadata of its rows (oldest first).
type checker struct {
	// typing is the stream's: the checks order columns as discovery does.
	typing table.Typing
	eng    *incremental.Engine
	col    map[string]int
	// metas[head:] are the rows' metadata, oldest first.
	metas []window.RowMeta
	head  int
	vals  []string
	codes []uint32
	// prepared are the ids of the dependencies handed to the engine to
	// build ahead of their merge so far (prepareRules).
	prepared map[string]bool
}

// rows is the number of rows in the checker's window.
func (c *checker) rows() int { return len(c.metas) - c.head }

// meta is the metadata of row i (0 = oldest).
func (c *checker) meta(i int) window.RowMeta { return c.metas[c.head+i] }

// apply brings the checker's window to the job's. It reports false when
// the job does not fit (rows missing): the consumer is then asked for the
// whole window.
func (c *checker) apply(job *checkJob, exact bool) bool {
	if job.reset {
		if err := c.build(job.names, job.codes, job.values, exact); err != nil {
			return false
		}
		c.metas, c.head = append([]window.RowMeta(nil), job.metas...), 0
		return c.rows() == 0 || c.meta(0).Seq == job.oldest
	}
	if c.eng == nil || job.evict > c.rows() {
		return false
	}
	c.eng.Evict(job.evict)
	c.head += job.evict
	if c.head > len(c.metas)/2 {
		// Into a new array: a check's sampler may still read the old one
		// (newCheckSampler), so the elements of metas are never
		// overwritten.
		c.metas = slices.Clone(c.metas[c.head:])
		c.head = 0
	}
	c.append(job.names, job.codes, job.values)
	c.metas = append(c.metas, job.metas...)
	// The window may have been reset and refilled (a takeover's read-back)
	// with counts that happen to add up: then its oldest row is not ours.
	return c.rows() == 0 || c.meta(0).Seq == job.oldest
}

// build starts the checker's Incremental over again with the rows given by
// columns (names[i]'s codes and values, as in a checkJob): the columns that
// have a value, in name order, so that the engine depends on the rows
// alone.
func (c *checker) build(names []string, codes [][]uint32, values [][]string, exact bool) error {
	eng, err := incremental.New(nil, incremental.Options{Exact: exact, Typing: c.typing})
	if err != nil {
		return err
	}
	c.eng, c.col, c.prepared = eng, map[string]int{}, nil
	c.append(names, codes, values)
	return nil
}

// append appends the rows given by columns (as in a checkJob) to the
// engine, coded: the window's codes are hints the engine checks against
// the strings (incremental.Engine.AppendCoded), so a code the window
// has since reused for another value, or a column it dropped and made
// again, is never mistaken. A column the engine does not know is added
// when it has a value in these rows, new ones in name order, so that the
// engine's columns depend on the rows alone (not on which columns the
// window's mirror remembers).
func (c *checker) append(names []string, codes [][]uint32, values [][]string) {
	var fresh []int
	for i, name := range names {
		if _, ok := c.col[name]; !ok && slices.ContainsFunc(codes[i], func(k uint32) bool { return k != 0 }) {
			fresh = append(fresh, i)
		}
	}
	slices.SortFunc(fresh, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range fresh {
		c.col[names[i]] = c.eng.Column(names[i])
	}
	// The engine may know more columns (a dependency's that has no value
	// yet): Append takes the ones past values as NULL.
	idx, width := make([]int, len(names)), 0
	for i, name := range names {
		j, ok := c.col[name]
		if !ok {
			j = -1
		}
		idx[i], width = j, max(width, j+1)
	}
	c.vals, c.codes = make([]string, width), make([]uint32, width)
	rows := 0
	if len(codes) > 0 {
		rows = len(codes[0])
	}
	for r := range rows {
		clear(c.codes)
		for i, j := range idx {
			if j >= 0 {
				c.vals[j], c.codes[j] = values[i][r], codes[i][r]
			}
		}
		c.eng.AppendCoded(c.vals, c.codes)
	}
}

// removalCuts are the removal counts the tracker's verdicts turn on for a
// window of n records: violated above eps+margin, restored at or below
// eps-margin, held at or below floor(eps*n).
func (e evalEnv) removalCuts(n int) []int {
	if n == 0 {
		return nil
	}
	eps, m := e.cfg.Epsilon, e.cfg.Margin
	if m < 0 { // AutoMargin, as the tracker reads it
		m = alerts.NoiseMargin(eps, n)
	}
	// largest r with r/n <= x, as the tracker compares errors
	below := func(x float64) int {
		r := int(math.Floor(x * float64(n)))
		for r+1 <= n && float64(r+1)/float64(n) <= x {
			r++
		}
		for r >= 0 && float64(r)/float64(n) > x {
			r--
		}
		return r
	}
	return []int{below(eps + m), below(eps - m), int(math.Floor(eps * float64(n)))}
}

// runChecks applies the queued check jobs in order and checks the last
// window; the earlier ones are counted as skipped, except replayed ones
// (and all with inOrder), which are checked each.
func (s *evaluator) runChecks(ctx context.Context, c *checker, jobs []*checkJob) error {
	for i, job := range jobs {
		if job.gen != s.mb.gen.Load() {
			continue // a dropped window's: the next live job is a reset
		}
		if !c.apply(job, s.m.hooks.exact()) {
			s.mb.mu.Lock()
			if job.gen == s.mb.gen.Load() { // else the next job is a reset
				s.mb.feed.resync = true
			}
			s.mb.mu.Unlock()
			c.eng = nil
			s.log.Warn("check skipped: the window changed under the checker; resynchronizing", "window_end", job.endSeq)
			return nil
		}
		switch {
		case i < len(jobs)-1 && !job.replay && !s.m.hooks.ordered():
			s.m.metrics.Evaluations.WithLabelValues(s.name, "skipped").Inc()
		default:
			if err := s.runCheck(ctx, c, job); err != nil {
				return err
			}
		}
	}
	return nil
}

// runCheck checks the checker's window (job's), after the discovery it
// merges when that one must be waited for (waitMerge), and records the
// outcome.
func (s *evaluator) runCheck(ctx context.Context, c *checker, job *checkJob) error {
	if s.hasTracker && job.endSeq <= s.trackerEnd {
		return nil // evaluated and saved before a restart
	}
	if err := s.waitMerge(ctx, job.endSeq); err != nil {
		return err
	}
	s.m.hooks.checkStarts(ctx, job.endSeq)
	if job.gen != s.mb.gen.Load() {
		return nil // dropped meanwhile (record checks again, as it saves)
	}
	start := time.Now()
	out, err := s.check(ctx, c, job)
	if err != nil {
		return err
	}
	checked := time.Now()
	if err := s.record(ctx, &evalJob{endSeq: job.endSeq, next: job.next, replay: job.replay, gen: job.gen}, out); err != nil {
		return err
	}
	d := time.Since(start)
	s.observeEval(d, out.result)
	s.m.metrics.LastEval.WithLabelValues(s.name).Set(float64(time.Now().UnixNano()) / 1e9)
	s.log.Debug("check done", "window_end", job.endSeq, "records", c.rows(), "tracked", out.tracked,
		"discovery_merged", out.merged, "events", len(out.events), "seconds", d.Seconds(),
		"check_s", checked.Sub(start).Seconds(), "delivered_s", out.delivered.Sub(start).Seconds(),
		"record_s", time.Since(checked).Seconds(), "prepared", out.prepared,
		"built_nodes", out.builds.Nodes, "built_fds", out.builds.FDs, "built_ocs", out.builds.Rebuilt,
		"restarted_ocs", out.builds.Restarted)
	return nil
}

// dueDiscovery takes the discovery results due at window endSeq (finished
// and ending DiscoverEvery records or more before it) and returns the
// newest; older due ones are dropped unmerged.
func (s *evaluator) dueDiscovery(endSeq uint64) (discoveryDone, bool) {
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	var due discoveryDone
	found := false
	kept := s.mb.feed.done[:0]
	for _, d := range s.mb.feed.done {
		if d.endSeq+uint64(s.cfg.DiscoverEvery) <= endSeq {
			delete(s.mb.feed.rerun, d.endSeq)
			if found {
				s.log.Warn("discovery result superseded before it was merged", "window_end", due.endSeq)
			}
			due, found = d, true
			continue
		}
		kept = append(kept, d)
	}
	s.mb.feed.done = kept
	if found && due.endSeq+uint64(s.cfg.DiscoverEvery) < endSeq {
		s.m.metrics.Discoveries.WithLabelValues(s.name, "late").Inc()
		s.log.Warn("discovery merged late: it took longer than discover-every records",
			"window_end", due.endSeq, "merged_at", endSeq, "seconds", due.took.Seconds(), "held_s", due.held.Seconds())
	}
	return due, found
}

// check runs one check on the checker's window: the tracked dependencies'
// counts (with the newly minimal ones of a due discovery), the
// observations, the tracker and samples.
func (s *evaluator) check(ctx context.Context, c *checker, job *checkJob) (*evalOutcome, error) {
	done, merging := s.dueDiscovery(job.endSeq)
	var merge *discoveryOutcome
	if merging {
		merge = &done.outcome
	}
	var pending []discoveryDone
	if !s.m.hooks.unprepared() {
		pending = s.pendingDiscoveries()
	}
	out, err := s.env().checkWindow(ctx, c, job, merge, pending)
	if err == nil {
		s.m.hooks.checkDone(job.endSeq, out)
	}
	return out, err
}

// pendingDiscoveries are the discovery results finished and not merged
// yet, oldest first (after dueDiscovery took the due one: none is due).
func (s *evaluator) pendingDiscoveries() []discoveryDone {
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	out := slices.Clone(s.mb.feed.done)
	slices.SortFunc(out, func(x, y discoveryDone) int { return cmp.Compare(x.endSeq, y.endSeq) })
	return out
}

// prepareRules are the dependencies the check of the window ending at
// endSeq hands to the checker's engine to build ahead of their merge
// (incremental.Engine.Prepare): the newly minimal ones of each pending
// discovery result (as checkWindow will select them at its merge; tracked
// are the ids of the tracked ones),
// the ones handed over before, and of the others an even share over the
// checks left before the merge (prepareShare). What the engine builds
// ahead changes no count it reports (see Prepare), so the merge's events
// are the same whenever discovery finished; the merge check then costs
// about an incremental check.
func (e evalEnv) prepareRules(c *checker, endSeq uint64, pending []discoveryDone, tracked map[string]bool) []discovery.Dependency {
	if len(pending) == 0 {
		c.prepared = nil
		return nil
	}
	inDeps := maps.Clone(tracked)
	minScore := e.cfg.minScore(c.eng.Len())
	var out []discovery.Dependency
	handed := make(map[string]bool, len(c.prepared))
	for _, p := range pending {
		var fresh []int
		deps, ids := newlyMinimal(&p.outcome, minScore, inDeps)
		for i, d := range deps {
			if c.prepared[ids[i]] {
				out, handed[ids[i]] = append(out, d), true
			} else {
				fresh = append(fresh, i)
			}
		}
		mergeAt := p.endSeq + uint64(e.cfg.DiscoverEvery)
		checks := uint64(1)
		if mergeAt > endSeq && e.cfg.Every > 0 {
			checks = max((mergeAt-endSeq)/uint64(e.cfg.Every), 1)
		}
		for _, i := range fresh[:prepareShare(len(fresh), checks)] {
			out, handed[ids[i]] = append(out, deps[i]), true
		}
	}
	c.prepared = handed
	return out
}

// prepareShare is how many of left rules not yet built ahead a check hands
// to the engine when checks checks (this one included) come before their
// merge: an even share, rounded up. Each rule's state (its partitions, FD
// block, an OC's sorted classes) is built once, at about the cost of a
// pass over the window, whenever it is built; an even share keeps the
// largest cost a check adds as small as the checks left allow, and has
// every rule built by the merge. A discovery that finishes a check before
// its merge hands every rule to that check.
func prepareShare(left int, checks uint64) int {
	if checks <= 1 {
		return left
	}
	return int((uint64(left) + checks - 1) / checks)
}

// newlyMinimal are the dependencies of a discovery's results a merge adds
// to the checked ones: those not in inDeps (ids) scoring at least
// minScore, reliable, OFDs and OCs, in discovery's order (by score), as
// observations does, and their ids; each one's id is added to inDeps.
func newlyMinimal(o *discoveryOutcome, minScore float64, inDeps map[string]bool) (deps []discovery.Dependency, ids []string) {
	for i, r := range o.results {
		id := o.ids[i]
		if r.Score < minScore || !r.Reliable || inDeps[id] {
			continue
		}
		if r.Kind == discovery.KindOFD || r.Kind == discovery.KindOC {
			inDeps[id] = true
			deps, ids = append(deps, r.Dependency), append(ids, id)
		}
	}
	return deps, ids
}

// checkWindow is a check of the checker's window (job's): the tracked
// dependencies' counts, with the newly minimal ones of merge (a
// discovery's result, or nil), the rules of the pending discovery results
// built ahead of their merge (prepareRules; none for nil), the
// observations, the tracker and samples. The monitor (evaluator.check) and
// replay share it.
func (e evalEnv) checkWindow(ctx context.Context, c *checker, job *checkJob, merge *discoveryOutcome, pending []discoveryDone) (*evalOutcome, error) {
	tracked := e.tracker.Tracked()
	deps := checkable(tracked)
	inDeps := make(map[string]bool, len(deps))
	for _, d := range deps {
		inDeps[alerts.DependencyID(d)] = true
	}
	prepare := e.prepareRules(c, job.endSeq, pending, inDeps)
	merging := merge != nil
	if merging {
		fresh, _ := newlyMinimal(merge, e.cfg.minScore(c.eng.Len()), inDeps)
		deps = append(deps, fresh...)
	}
	res, prepared, err := e.count(c, deps, prepare)
	if err != nil {
		return nil, err
	}
	n := c.eng.Len()
	out := &evalOutcome{info: job.info, result: "ok", tracked: len(tracked), chk: newCheckSampler(c),
		prepared: prepared, builds: c.eng.LastBuilds()}
	for _, r := range res {
		if !r.Present {
			continue // a column left the stream: not observed
		}
		o := alerts.Observation{Dependency: r.Dependency, Removals: r.Removals}
		if n > 0 {
			o.Error = float64(r.Removals) / float64(n)
		}
		if merging {
			id := alerts.DependencyID(r.Dependency)
			if f, ok := merge.found[id]; ok {
				o.Minimal, o.Strength, o.Score = true, f.Strength, f.Score
			} else {
				o.Minimal = !merge.complete && dependencyLevel(r.Dependency) > merge.levels
			}
		}
		out.obs = append(out.obs, o)
	}
	if merging {
		out.found, out.merged = len(merge.found), true
		out.events = e.tracker.Observe(out.info, out.obs)
	} else {
		out.events = e.tracker.ObserveCheck(out.info, out.obs)
	}
	out.checked = len(res)
	e.attachSamples(ctx, out, nil)
	return out, nil
}

// checkable are the dependencies of tracked a check counts: OFDs and OCs.
func checkable(tracked []discovery.Dependency) []discovery.Dependency {
	var deps []discovery.Dependency
	for _, d := range tracked {
		if d.Kind == discovery.KindOFD || d.Kind == discovery.KindOC {
			deps = append(deps, d)
		}
	}
	return deps
}

// count brings the checker's counts of deps up to date on its window, and
// has the engine build the state of prepare ahead (not reported); prepared
// is how many of those the engine took.
func (e evalEnv) count(c *checker, deps, prepare []discovery.Dependency) (res []incremental.Result, prepared int, err error) {
	if err := c.eng.SetDependencies(deps); err != nil {
		return nil, 0, &stepError{"check", err}
	}
	prepared, err = c.eng.Prepare(prepare)
	if err != nil {
		e.log.Warn("check: rules not built ahead of their merge", "err", err) // built at the merge
	}
	return c.eng.Check(e.removalCuts(c.eng.Len())), prepared, nil
}

// checkSampler is a check's window to take removal samples on: its
// checker's rows, which stay the check's until the evaluator applies the
// next check (after record). It keeps the columns it copied from the
// checker and encoded, so that the related rules' samples copy and encode
// only the columns the events' own did not mention (related rules share
// columns with the event's: see alerts.Tracker). Once detached from the
// checker (c nil: takeRelated, on the evaluator) it reads only what it
// copied and metas, and can go on off the evaluator.
type checkSampler struct {
	c *checker
	// metas are the check's rows' metadata: a view of the checker's, whose
	// elements it never overwrites (checker.apply).
	metas []window.RowMeta
	// cols are the columns copied so far, the first encoded of them encoded
	// in table (the same columns, in the same order; nil before the first).
	cols    []table.DictColumn
	encoded int
	table   *table.Table
}

// newCheckSampler is a sampler of c's window as it is now.
func newCheckSampler(c *checker) *checkSampler {
	n := len(c.metas)
	return &checkSampler{c: c, metas: c.metas[c.head:n:n]}
}

// attached reports whether s (possibly nil) still reads its checker,
// which then holds a checked window.
func (s *checkSampler) attached() bool {
	return s != nil && s.c != nil && s.c.eng != nil
}

// take copies from the checker the named columns (those it knows) that s
// does not hold yet; a detached sampler takes nothing.
func (s *checkSampler) take(names []string) {
	if !s.attached() {
		return
	}
	var missing []string
	for _, n := range names {
		if !slices.ContainsFunc(s.cols, func(c table.DictColumn) bool { return c.Name == n }) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 { // DictColumns() would copy every column
		s.cols = append(s.cols, s.c.eng.DictColumns(missing...)...)
	}
}

// encode encodes the columns s copied and has not encoded yet.
func (s *checkSampler) encode(typingFor func([]table.DictColumn) table.Typing) error {
	if s.encoded < len(s.cols) {
		cols := s.cols[s.encoded:]
		t, err := table.EncodeTyped(cols, typingFor(cols))
		if err != nil {
			return err
		}
		if s.table == nil {
			s.table = t
		} else {
			s.table.Columns = append(s.table.Columns, t.Columns...)
		}
		s.encoded = len(s.cols)
	}
	if s.table == nil {
		s.table = &table.Table{}
	}
	return nil
}

// checkerSamples takes a sample of a minimal removal set of each of deps
// on a check's window: only deps' columns are copied from the checker and
// encoded (sampledColumns; once per check, checkSampler), and one
// validation measures them all, so that the partitions of shared contexts
// are built once. samples[i] is deps[i]'s (nil when it could not be
// validated, logged); the result is nil when the window could not be
// encoded or ctx is done.
func (e evalEnv) checkerSamples(ctx context.Context, s *checkSampler, deps []discovery.Dependency) [][]alerts.Sample {
	s.take(sampledColumns(deps))
	if err := s.encode(e.cfg.typingFor); err != nil {
		e.log.Warn("removal sample: encode", "err", err)
		return nil
	}
	metas, cols := s.metas, s.cols
	opts := discovery.Options{Epsilon: e.cfg.Epsilon, RemovalSample: e.cfg.Sample}
	results, errs, err := discovery.ValidateEach(ctx, s.table, deps, opts)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.log.Warn("removal sample", "err", err)
		}
		return nil
	}
	byName := make(map[string]int, len(cols))
	for i, col := range cols {
		byName[col.Name] = i
	}
	samples := make([][]alerts.Sample, len(deps))
	for i, d := range deps {
		if errs[i] != nil {
			e.log.Warn("removal sample", "dependency", d.String(), "err", errs[i])
			continue
		}
		names := d.Columns()
		for _, row := range results[i].RemovalSample {
			if len(samples[i]) == e.cfg.Sample || row < 0 || row >= len(metas) {
				break
			}
			m := metas[row]
			values := make(map[string]string, len(names))
			for _, name := range names {
				if ci, ok := byName[name]; ok {
					if code := cols[ci].Codes[row]; code != 0 {
						values[name] = cols[ci].Dict[code-1]
					}
				}
			}
			samples[i] = append(samples[i], alerts.Sample{Topic: e.cfg.Topic, Partition: m.Partition, Offset: m.Offset, Values: values})
		}
	}
	return samples
}

// ownDependencies are the dependencies of the events that carry a sample
// (carriesSample), each once, and the index of each one's id in them.
func ownDependencies(events []alerts.Event) ([]discovery.Dependency, map[string]int) {
	var ds depSet
	for i := range events {
		if ev := &events[i]; carriesSample(ev) {
			ds.add(ev.Dependency)
		}
	}
	return ds.deps, ds.at
}

// relatedDependencies are the related dependencies with removals of the
// events that carry a sample (carriesSample), each once, and the index of
// each one's id in them: the ones the status history keeps samples of.
func relatedDependencies(events []alerts.Event) ([]discovery.Dependency, map[string]int) {
	var ds depSet
	for i := range events {
		ev := &events[i]
		if !carriesSample(ev) {
			continue
		}
		for _, r := range ev.Related {
			if r.Removals != 0 {
				ds.add(r.Dependency)
			}
		}
	}
	return ds.deps, ds.at
}

// depSet is a list of dependencies without repeats, with the index of
// each one's id.
type depSet struct {
	deps []discovery.Dependency
	at   map[string]int
}

func (s *depSet) add(d discovery.Dependency) {
	id := alerts.DependencyID(d)
	if _, ok := s.at[id]; ok {
		return
	}
	if s.at == nil {
		s.at = map[string]int{}
	}
	s.at[id] = len(s.deps)
	s.deps = append(s.deps, d)
}

// sampledColumns are the names of the columns deps (ownDependencies or
// relatedDependencies) mention: only those are copied from the checker and
// encoded for the samples, since copying and encoding every column of the
// window (a timestamp column's parse above all) cost more than the check
// itself.
func sampledColumns(deps []discovery.Dependency) []string {
	var names []string
	for _, d := range deps {
		for _, n := range d.Columns() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}
