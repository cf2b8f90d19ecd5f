package eval

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// The evaluation's side of the tracker's lifecycle (alerts.Tracker): what
// a discovery says of each observed rule, the measures the tracker asks
// for on a window besides the counts (Needs), and the rules the checker's
// engine does not count (keys and equivalences), validated instead.

// MergeAt is the window end of the check that merges the discovery of the
// window ending at end (two cadences): the next check for the first full
// window's, so that a cold start tracks a rule one check after it whatever
// discover-every is (nothing is tracked before, so waiting for it delays
// nothing else), discoverEvery records later for every other one.
func MergeAt(end uint64, window, every, discoverEvery int) uint64 {
	if end+1 == uint64(window) {
		return end + uint64(every)
	}
	return end + uint64(discoverEvery)
}

// MergedAt is the window end of the discovery the check of the window
// ending at endSeq merges (ok false when none can be): the inverse of
// MergeAt. The first full window's discovery is merged at the next check
// only, not discoverEvery records after it too.
func MergedAt(endSeq uint64, window, every, discoverEvery int) (start uint64, ok bool) {
	if first := uint64(window - 1); MergeAt(first, window, every, discoverEvery) == endSeq {
		return first, true
	}
	d := uint64(discoverEvery)
	if endSeq < d || !DiscoveryPoint(endSeq-d, window, discoverEvery) {
		return 0, false
	}
	start = endSeq - d
	return start, MergeAt(start, window, every, discoverEvery) == endSeq
}

// discoveryFacts sets on o what disc, the discovery of this window or a
// merged earlier one, says of its rule: whether it found it (Minimal, or
// unknown above the levels a stopped discovery completed), and for one it
// found its equivalents, implied_by, (unless o was rated on its own
// window) strength and score, and what it steps back for (StepsBack,
// ReplacedBy: Summarize states it with a key, an equivalence or implying
// rules), for one it did not a more general reliable rule it found in its
// place (ReplacedBy).
func discoveryFacts(o *alerts.Observation, disc *DiscoveryOutcome) {
	if f, ok := disc.Found[alerts.DependencyID(o.Dependency)]; ok {
		o.Minimal, o.Equivalents, o.ImpliedBy = true, f.Equivalents, f.ImpliedBy
		if !o.Rated {
			o.Strength, o.Score = f.Strength, f.Score
		}
		if !f.Reliable && len(f.ImpliedBy) > 0 && !orderOfEquals(f) {
			o.StepsBack, o.ReplacedBy = true, strings.Join(f.ImpliedBy, ", ")
		}
		return
	}
	o.Minimal = !disc.Complete && dependencyLevel(o.Dependency) > disc.Levels
	if !o.Minimal {
		o.ReplacedBy = alerts.ReplacedBy(o.Dependency, disc.Results)
	}
}

// measureNeeds measures what the tracker needs to observe obs from src
// (alerts.Tracker.Needs) on the window's table, which tab gives (nil: it
// could not be had, logged by tab, and the needs go unmet): the strengths
// asked for (Observation.Rated), on every column of the window, since a
// strength is judged on the distinct records (a table of a rule's columns
// alone makes records that differ elsewhere repeats: payroll's salary <->
// tax has strength 0.97 on the window and 0 on its two columns), and FDs'
// mappings (alerts.MappingOf), which need only their columns.
func (e Env) measureNeeds(ctx context.Context, info alerts.WindowInfo, obs []alerts.Observation, src alerts.Source, tab tableFor) {
	needs := e.Tracker.Needs(info, obs, src)
	if len(needs) == 0 {
		return
	}
	deps := make([]discovery.Dependency, len(needs))
	var rate []discovery.Dependency
	for i, n := range needs {
		deps[i] = n.Dependency
		if n.Rate {
			rate = append(rate, n.Dependency)
		}
	}
	t := tab(deps, len(rate) > 0)
	if t == nil {
		return
	}
	at := make(map[string]int, len(obs))
	for i := len(obs) - 1; i >= 0; i-- {
		at[alerts.DependencyID(obs[i].Dependency)] = i // the first observation of a rule counts
	}
	if len(rate) > 0 {
		results, errs := e.validate(ctx, t, rate)
		for i, d := range rate {
			if results != nil && errs[i] == nil {
				o := &obs[at[alerts.DependencyID(d)]]
				o.Strength, o.Score, o.Rated = results[i].Strength, results[i].Score, true
			}
		}
	}
	for _, n := range needs {
		if n.Map {
			obs[at[alerts.DependencyID(n.Dependency)]].Mapping = alerts.MappingOf(t, n.Dependency, alerts.DefaultMappingClasses)
		}
	}
}

// tableFor gives a window's encoded table with at least the columns of
// the dependencies it is handed (every column with all), or nil when it
// cannot.
type tableFor = func(deps []discovery.Dependency, all bool) *table.Table

// whole is the tableFor of a full evaluation: its encoded window.
func whole(t *table.Table) tableFor {
	return func([]discovery.Dependency, bool) *table.Table { return t }
}

// validate validates deps on t at the stream's eps and strength threshold;
// results is nil when t could not be read or ctx is done, and errs[i]
// says why deps[i] could not be validated (logged).
func (e Env) validate(ctx context.Context, t *table.Table, deps []discovery.Dependency) ([]discovery.Result, []error) {
	results, errs, err := validateOnCores(ctx, t, deps, discovery.Options{Epsilon: e.Cfg.Epsilon, MinStrength: e.Cfg.MinStrength})
	if err != nil {
		if !runEnded(ctx, err) {
			e.Log.Warn("validate on the check's window", "err", err)
		}
		return nil, nil
	}
	for i, d := range deps {
		if errs[i] != nil {
			e.Log.Warn("validate on the check's window", "dependency", d.String(), "err", errs[i])
		}
	}
	return results, errs
}

// runEnded reports whether err only says that the run is ending: a
// cancelled context (Ctrl-C, a rebalance), or ctx past its deadline (the
// demo's --duration). Neither is worth a warning.
func runEnded(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) || ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// validateOnCores is discovery.ValidateEach of deps on t, the
// dependencies dealt in turn to one call per core run at once: a check
// holds discovery (its gate), and a merge check rates several rules of
// the window, tens of milliseconds each one at a time. Each call builds
// the partitions its dependencies need, shared contexts once per call.
func validateOnCores(ctx context.Context, t *table.Table, deps []discovery.Dependency, opts discovery.Options) ([]discovery.Result, []error, error) {
	n := min(runtime.GOMAXPROCS(0), len(deps))
	if n <= 1 {
		return discovery.ValidateEach(ctx, t, deps, opts)
	}
	results, errs := make([]discovery.Result, len(deps)), make([]error, len(deps))
	var g errgroup.Group
	for w := range n {
		g.Go(func() error {
			var mine []discovery.Dependency
			for i := w; i < len(deps); i += n {
				mine = append(mine, deps[i])
			}
			rs, es, err := discovery.ValidateEach(ctx, t, mine, opts)
			if err != nil {
				return err
			}
			for k := range mine {
				results[w+k*n], errs[w+k*n] = rs[k], es[k]
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return results, errs, nil
}

// samplerTable is tab for measureNeeds and uncounted on a check: the
// columns of deps (with all, those distinctColumns adds: keys are the
// check's key rules) copied from the checker and encoded (s keeps them for
// the events' samples), or nil when they could not be encoded (logged).
func (e Env) samplerTable(s *checkSampler, keys []discovery.Dependency) tableFor {
	return func(deps []discovery.Dependency, all bool) *table.Table {
		names, distinct := sampledColumns(deps), false
		if all && s.attached() {
			names, distinct = s.distinctColumns(names, deps, keys)
		}
		s.take(names)
		if err := s.encode(e.Cfg.typingFor); err != nil {
			e.Log.Warn("check: encode the columns to validate", "err", err)
			return nil
		}
		if distinct {
			s.table.MarkDistinct()
		}
		return s.table
	}
}

// distinctColumns are the columns a table of the checker's window needs,
// names (deps' columns) among them, for its records to be judged as on
// the whole window (strengths are judged on the distinct records): every
// column, or, when one of keys has no removal in the window (no two
// records share its values: every record is distinct), names alone, the
// table marked distinct (table.Table.MarkDistinct), or, when one of deps
// would mention every column of names (a rule over every column of its
// table is judged on all records, docs/DESIGN.md "Strength"), names with
// the key's columns and one column more. Copying and encoding every
// column of a large window cost a check tens of milliseconds, and a key's
// near-unique columns (a time stamp) most of a merge check's encoding.
func (s *checkSampler) distinctColumns(names []string, deps, keys []discovery.Dependency) (cols []string, distinct bool) {
	all := s.c.eng.Columns()
	for _, k := range keys {
		if removals, ok := s.c.eng.KeyRemovals(k.Set); !ok || removals > 0 {
			continue
		}
		spans := func(names []string) bool {
			return slices.ContainsFunc(deps, func(d discovery.Dependency) bool { return mentionsAll(d, names) })
		}
		if !spans(names) {
			return names, true
		}
		out := slices.Clone(names)
		for _, c := range k.Set {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		if spans(out) {
			i := slices.IndexFunc(all, func(c string) bool { return !slices.Contains(out, c) })
			if i < 0 {
				return all, false
			}
			out = append(out, all[i])
		}
		return out, true
	}
	return all, false
}

// mentionsAll reports whether d mentions every one of names.
func mentionsAll(d discovery.Dependency, names []string) bool {
	cols := d.Columns()
	return !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(cols, n) })
}

// keyRules are the keys among deps, fewest columns first: the candidates
// for distinctColumns.
func keyRules(deps []discovery.Dependency) []discovery.Dependency {
	var keys []discovery.Dependency
	for _, d := range deps {
		if d.Kind == discovery.KindKey {
			keys = append(keys, d)
		}
	}
	slices.SortStableFunc(keys, func(a, b discovery.Dependency) int { return len(a.Set) - len(b.Set) })
	return keys
}

// uncounted counts on the check's window the watched rules the checker's
// engine does not count with the others (keys and equivalences: a key's
// removals are all but one record of each class of its columns,
// duplicated records included): a key by one pass over the engine's codes
// (incremental.Engine.KeyRemovals), an equivalence by a validation of its
// columns at every check, since they are few; one mentioning a column the
// window does not have is not observed. Their removals need only their
// columns; a strength the tracker needs is measured on the whole window
// (measureNeeds).
func (e Env) uncounted(ctx context.Context, s *checkSampler, deps []discovery.Dependency) []alerts.Observation {
	obs := make([]alerts.Observation, len(deps))
	seen := make([]bool, len(deps))
	var rest []int
	for i, d := range deps {
		obs[i].Dependency = d
		if d.Kind == discovery.KindKey && s.attached() {
			if obs[i].Removals, seen[i] = s.c.eng.KeyRemovals(d.Set); seen[i] {
				obs[i].Error = share(obs[i].Removals, s.c.eng.Len())
				continue
			}
		}
		rest = append(rest, i)
	}
	if len(rest) > 0 {
		e.validateUncounted(ctx, s, obs, seen, rest)
	}
	var out []alerts.Observation
	for i, o := range obs {
		if seen[i] {
			out = append(out, o)
		}
	}
	return out
}

// validateUncounted validates the dependencies of obs[rest] on their
// columns of the check's window, setting their counts and seen.
func (e Env) validateUncounted(ctx context.Context, s *checkSampler, obs []alerts.Observation, seen []bool, rest []int) {
	deps := make([]discovery.Dependency, len(rest))
	for k, i := range rest {
		deps[k] = obs[i].Dependency
	}
	t := e.samplerTable(s, nil)(deps, false)
	if t == nil {
		return
	}
	results, errs := e.validate(ctx, t, deps)
	for k, i := range rest {
		if results != nil && errs[k] == nil {
			obs[i].Removals, obs[i].Error, seen[i] = results[k].Removals, results[k].Error, true
		}
	}
}

// share is removals of n records as discovery's Result.Error gives it.
func share(removals, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(removals) / float64(n)
}

// tracks reports whether a rule discovery found is one the stream tracks:
// reliable (after Summarize: keys and equivalences stated once, implied
// rules stepping back), stated together with a reliable entry (Stated: an
// FD of the same left side, an order dependency's OC) or an order within
// equivalences (orderOfEquals),
// and unless its context is too close to a key (score below minScore); a
// key's score is its own columns' partition's, a key's by definition, so
// the bound does not apply to it.
func tracks(r discovery.Result, minScore float64) bool {
	return (r.Stated() || orderOfEquals(r)) && (r.Score >= minScore || r.Kind == discovery.KindKey)
}

// orderOfEquals reports whether r is an OC that stepped back only for
// equivalences (Summarize steps back a rule between members of one) and is
// strong enough to be reliable on its own: two columns that determine each
// other need not sort together, so the order is a fact the equivalence does
// not state, and the stream tracks it beside it (it was reliable before it
// stepped back; payroll's {}: salary ~
// tax beside salary <-> tax, the paper's running example).
func orderOfEquals(r discovery.Result) bool {
	if r.Kind != discovery.KindOC || r.Reliable || len(r.ImpliedBy) == 0 || len(r.Equivalents) > 0 {
		return false
	}
	for _, by := range r.ImpliedBy {
		if d, err := discovery.ParseDependency(by); err != nil || d.Kind != discovery.KindEquivalence {
			return false
		}
	}
	return true
}
