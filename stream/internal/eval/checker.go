package eval

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// Checker is the evaluator's state for two cadences: the incremental
// window and the metadata of its rows (oldest first). It is the evaluator
// goroutine's (or a replay's) alone; a check's checkSampler reads its rows
// until the next Apply.
type Checker struct {
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

// NewChecker is an empty checker whose checks type the window's columns
// by typing (the stream's).
func NewChecker(typing table.Typing) Checker { return Checker{typing: typing} }

// Rows is the number of rows in the checker's window.
func (c *Checker) Rows() int { return len(c.metas) - c.head }

// Forget drops the checker's window: the next delta it is given must be
// a whole window (Delta.Whole).
func (c *Checker) Forget() { c.eng = nil }

// meta is the metadata of row i (0 = oldest).
func (c *Checker) meta(i int) window.RowMeta { return c.metas[c.head+i] }

// Apply brings the checker's window to the delta's. It reports false when
// the delta does not fit (rows missing): the consumer is then asked for
// the whole window.
func (c *Checker) Apply(d *Delta, exact bool) bool {
	if d.reset {
		if err := c.build(d.names, d.codes, d.values, exact); err != nil {
			return false
		}
		c.metas, c.head = append([]window.RowMeta(nil), d.metas...), 0
		return c.Rows() == 0 || c.meta(0).Seq == d.oldest
	}
	if c.eng == nil || d.evict > c.Rows() {
		return false
	}
	c.eng.Evict(d.evict)
	c.head += d.evict
	if c.head > len(c.metas)/2 {
		// Into a new array: a check's sampler may still read the old one
		// (newCheckSampler), so the elements of metas are never
		// overwritten.
		c.metas = slices.Clone(c.metas[c.head:])
		c.head = 0
	}
	c.append(d.names, d.codes, d.values)
	c.metas = append(c.metas, d.metas...)
	// The window may have been reset and refilled (a takeover's read-back)
	// with counts that happen to add up: then its oldest row is not ours.
	return c.Rows() == 0 || c.meta(0).Seq == d.oldest
}

// build starts the checker's Incremental over again with the rows given by
// columns (names[i]'s codes and values, as in a Delta): the columns that
// have a value, in name order, so that the engine depends on the rows
// alone.
func (c *Checker) build(names []string, codes [][]uint32, values [][]string, exact bool) error {
	eng, err := incremental.New(nil, incremental.Options{Exact: exact, Typing: c.typing})
	if err != nil {
		return err
	}
	c.eng, c.col, c.prepared = eng, map[string]int{}, nil
	c.append(names, codes, values)
	return nil
}

// append appends the rows given by columns (as in a Delta) to the
// engine, coded: the window's codes are hints the engine checks against
// the strings (incremental.Engine.AppendCoded), so a code the window
// has since reused for another value, or a column it dropped and made
// again, is never mistaken. A column the engine does not know is added
// when it has a value in these rows, new ones in name order, so that the
// engine's columns depend on the rows alone (not on which columns the
// window's mirror remembers).
func (c *Checker) append(names []string, codes [][]uint32, values [][]string) {
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
func (e Env) removalCuts(n int) []int {
	if n == 0 {
		return nil
	}
	eps, m := e.Cfg.Epsilon, e.Cfg.Margin
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

// prepareRules are the dependencies the check of the window ending at
// endSeq hands to the checker's engine to build ahead of their merge
// (incremental.Engine.Prepare): the newly minimal ones of each pending
// discovery result (as CheckWindow will select them at its merge; tracked
// are the ids of the tracked ones),
// the ones handed over before, and of the others an even share over the
// checks left before the merge (prepareShare). What the engine builds
// ahead changes no count it reports (see Prepare), so the merge's events
// are the same whenever discovery finished; the merge check then costs
// about an incremental check.
func (e Env) prepareRules(c *Checker, endSeq uint64, pending []Pending, tracked map[string]bool) []discovery.Dependency {
	if len(pending) == 0 {
		c.prepared = nil
		return nil
	}
	inDeps := maps.Clone(tracked)
	minScore := e.Cfg.minScore(c.eng.Len())
	var out []discovery.Dependency
	handed := make(map[string]bool, len(c.prepared))
	for _, p := range pending {
		var fresh []int
		deps, ids := newlyMinimal(p.Outcome, minScore, inDeps)
		for i, d := range deps {
			if c.prepared[ids[i]] {
				out, handed[ids[i]] = append(out, d), true
			} else {
				fresh = append(fresh, i)
			}
		}
		mergeAt := p.MergeAt
		checks := uint64(1)
		if mergeAt > endSeq && e.Cfg.Every > 0 {
			checks = max((mergeAt-endSeq)/uint64(e.Cfg.Every), 1)
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
// to the checked ones: those not in inDeps (ids) the stream tracks
// (tracks), OFDs, OCs, keys and equivalences, in discovery's order (by
// score), as observations does, and their ids; each one's id is added to
// inDeps.
func newlyMinimal(o *DiscoveryOutcome, minScore float64, inDeps map[string]bool) (deps []discovery.Dependency, ids []string) {
	for i, r := range o.Results {
		id := o.ids[i]
		if !tracks(r, minScore) || inDeps[id] {
			continue
		}
		if r.Kind != discovery.KindListOD {
			inDeps[id] = true
			deps, ids = append(deps, r.Dependency), append(ids, id)
		}
	}
	return deps, ids
}

// Pending is a discovery result finished and not merged yet, of the
// window ending at EndSeq: merged into the check of MergeAt, built ahead
// by the checks before (prepareRules).
type Pending struct {
	// EndSeq is the window end of the discovery, MergeAt the check that
	// merges it (the monitor's pacer says which).
	EndSeq, MergeAt uint64
	Outcome         *DiscoveryOutcome
}

// CheckWindow is a check of the checker's window (info's): the watched
// dependencies' counts (tracked and candidates: alerts.Tracker.Watched),
// with the newly minimal ones of merge (a discovery's result, or nil), the
// rules of the pending discovery results built ahead of their merge
// (prepareRules; none for nil), the observations with what merge says of
// them and what the tracker needs measured (measureNeeds), the tracker and
// samples. The engine counts OFDs and OCs; keys and equivalences are
// validated on the check's window (uncounted). The monitor
// (evaluator.check) and replay share it.
func (e Env) CheckWindow(ctx context.Context, c *Checker, info alerts.WindowInfo, merge *DiscoveryOutcome, pending []Pending) (*Outcome, error) {
	watched := e.Tracker.Watched()
	inDeps := make(map[string]bool, len(watched))
	for _, d := range watched {
		inDeps[alerts.DependencyID(d)] = true
	}
	prepare := e.prepareRules(c, info.EndSeq, pending, inDeps)
	deps := watched
	if merge != nil {
		fresh, _ := newlyMinimal(merge, e.Cfg.minScore(c.eng.Len()), inDeps)
		deps = append(slices.Clip(deps), fresh...)
	}
	counted, others := checkable(deps)
	toPrepare, _ := checkable(prepare)
	res, prepared, err := e.count(c, counted, toPrepare)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Info: info, Result: "ok", Tracked: len(watched), chk: newCheckSampler(c),
		Prepared: prepared, Builds: c.eng.LastBuilds()}
	out.Obs = append(countedObservations(res, c.eng.Len()), e.uncounted(ctx, out.chk, others)...)
	src := alerts.Checked
	if merge != nil {
		src, out.Found, out.Merged = alerts.Merged, len(merge.Found), true
		for i := range out.Obs {
			discoveryFacts(&out.Obs[i], merge)
		}
	}
	e.measureNeeds(ctx, info, out.Obs, src, e.samplerTable(out.chk, keyRules(deps)))
	if merge != nil {
		out.Events = e.Tracker.ObserveMerge(info, out.Obs)
	} else {
		out.Events = e.Tracker.ObserveCheck(info, out.Obs)
	}
	out.Checked = len(out.Obs)
	e.attachSamples(ctx, out, nil)
	return out, nil
}

// MergeFound merges merge, a discovery that ended after the check that
// was to merge it with no check since, into the checker's window (that
// check's, info's) again: the rules it newly proposes are counted there
// and observed as alerts.Tracker.ObserveFound says (the watched ones are
// counted with them, so that the engine keeps their state, but not
// observed again). The next check merges it as usual (CheckWindow). It
// does nothing before the checker's first window.
func (e Env) MergeFound(ctx context.Context, c *Checker, info alerts.WindowInfo, merge *DiscoveryOutcome) (*Outcome, error) {
	watched := e.Tracker.Watched()
	out := &Outcome{Info: info, Result: "ok", Tracked: len(watched), Found: len(merge.Found), Merged: true, Again: true}
	if c.eng == nil {
		return out, nil
	}
	inDeps := make(map[string]bool, len(watched))
	for _, d := range watched {
		inDeps[alerts.DependencyID(d)] = true
	}
	fresh, ids := newlyMinimal(merge, e.Cfg.minScore(c.eng.Len()), inDeps)
	if len(fresh) == 0 {
		return out, nil
	}
	counted, _ := checkable(append(slices.Clip(watched), fresh...))
	_, others := checkable(fresh)
	res, _, err := e.count(c, counted, nil)
	if err != nil {
		return nil, err
	}
	isFresh := make(map[string]bool, len(ids))
	for _, id := range ids {
		isFresh[id] = true
	}
	out.chk, out.Builds = newCheckSampler(c), c.eng.LastBuilds()
	for _, o := range countedObservations(res, c.eng.Len()) {
		if isFresh[alerts.DependencyID(o.Dependency)] {
			out.Obs = append(out.Obs, o)
		}
	}
	out.Obs = append(out.Obs, e.uncounted(ctx, out.chk, others)...)
	for i := range out.Obs {
		discoveryFacts(&out.Obs[i], merge)
	}
	e.measureNeeds(ctx, info, out.Obs, alerts.Merged, e.samplerTable(out.chk, keyRules(append(slices.Clip(watched), fresh...))))
	out.Events, out.Checked = e.Tracker.ObserveFound(info, out.Obs), len(out.Obs)
	e.attachSamples(ctx, out, nil)
	return out, nil
}

// countedObservations are the engine's counts res on a window of n
// records as observations; a dependency a column of which left the
// stream is not observed.
func countedObservations(res []incremental.Result, n int) []alerts.Observation {
	obs := make([]alerts.Observation, 0, len(res))
	for _, r := range res {
		if !r.Present {
			continue
		}
		o := alerts.Observation{Dependency: r.Dependency, Removals: r.Removals}
		if n > 0 {
			o.Error = float64(r.Removals) / float64(n)
		}
		obs = append(obs, o)
	}
	return obs
}

// checkable are the dependencies of deps the checker's engine counts
// (OFDs and OCs) and the others (keys and equivalences: uncounted).
func checkable(deps []discovery.Dependency) (counted, others []discovery.Dependency) {
	for _, d := range deps {
		if d.Kind == discovery.KindOFD || d.Kind == discovery.KindOC {
			counted = append(counted, d)
		} else {
			others = append(others, d)
		}
	}
	return counted, others
}

// count brings the checker's counts of deps up to date on its window, and
// has the engine build the state of prepare ahead (not reported); prepared
// is how many of those the engine took.
func (e Env) count(c *Checker, deps, prepare []discovery.Dependency) (res []incremental.Result, prepared int, err error) {
	if err := c.eng.SetDependencies(deps); err != nil {
		return nil, 0, &StepError{Step: "check", Err: err}
	}
	prepared, err = c.eng.Prepare(prepare)
	if err != nil {
		e.Log.Warn("check: rules not built ahead of their merge", "err", err) // built at the merge
	}
	return c.eng.Check(e.removalCuts(c.eng.Len())), prepared, nil
}

// checkSampler is a check's window to take removal samples on: its
// checker's rows, which stay the check's until the evaluator applies the
// next check (after record). It keeps the columns it copied from the
// checker and encoded, so that the related rules' samples copy and encode
// only the columns the events' own did not mention (related rules share
// columns with the event's: see alerts.Tracker). Once detached from the
// checker (c nil: TakeRelated, on the evaluator) it reads only what it
// copied and metas, and can go on off the evaluator.
type checkSampler struct {
	c *Checker
	// metas are the check's rows' metadata: a view of the checker's, whose
	// elements it never overwrites (Checker.Apply).
	metas []window.RowMeta
	// cols are the columns copied so far, the first encoded of them encoded
	// in table (the same columns, in the same order; nil before the first).
	cols    []table.DictColumn
	encoded int
	table   *table.Table
}

// newCheckSampler is a sampler of c's window as it is now.
func newCheckSampler(c *Checker) *checkSampler {
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
func (e Env) checkerSamples(ctx context.Context, s *checkSampler, deps []discovery.Dependency) [][]alerts.Sample {
	s.take(sampledColumns(deps))
	if err := s.encode(e.Cfg.typingFor); err != nil {
		e.Log.Warn("removal sample: encode", "err", err)
		return nil
	}
	metas, cols := s.metas, s.cols
	sets, errs, err := discovery.RemovalSets(ctx, s.table, deps, e.Cfg.Sample)
	if err != nil {
		if !runEnded(ctx, err) {
			e.Log.Warn("removal sample", "err", err)
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
			e.Log.Warn("removal sample", "dependency", d.String(), "err", errs[i])
			continue
		}
		names := d.Columns()
		for _, row := range sets[i].Sample {
			if len(samples[i]) == e.Cfg.Sample || row < 0 || row >= len(metas) {
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
			samples[i] = append(samples[i], alerts.Sample{Topic: e.Cfg.Topic, Partition: m.Partition, Offset: m.Offset, Values: values})
		}
	}
	return samples
}

// ownDependencies are the dependencies of the events that carry a sample
// (CarriesSample), each once, and the index of each one's id in them.
// With unexplained, only the events without an explanation count.
func ownDependencies(events []alerts.Event, unexplained bool) ([]discovery.Dependency, map[string]int) {
	var ds depSet
	for i := range events {
		if ev := &events[i]; CarriesSample(ev) && (!unexplained || ev.Explanation == nil) {
			ds.add(ev.Dependency)
		}
	}
	return ds.deps, ds.at
}

// RelatedDependencies are the related dependencies with removals of the
// events that carry a sample (CarriesSample), each once, and the index of
// each one's id in them: the ones the status history keeps samples of.
func RelatedDependencies(events []alerts.Event) ([]discovery.Dependency, map[string]int) {
	var ds depSet
	for i := range events {
		ev := &events[i]
		if !CarriesSample(ev) {
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
// RelatedDependencies) mention: only those are copied from the checker and
// encoded for the samples: copying and encoding the window's other
// columns (a timestamp column's parse above all) is work no sample needs,
// on the evaluator between two checks.
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
