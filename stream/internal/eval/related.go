package eval

import (
	"context"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// Related is what the samples of an evaluation's related rules need
// from its window, taken on the evaluator so that the historian reads
// nothing the evaluator changes: a check's sampler, detached from the
// checker once it copied the columns the rules mention (checkSampler.take),
// or a full evaluation's encoded window and its immutable snapshot.
type Related struct {
	deps []discovery.Dependency
	At   map[string]int
	chk  *checkSampler
	// a full evaluation's
	table *table.Table
	snap  *window.Snapshot
}

// TakeRelated takes from an evaluation's window, on the evaluator, what
// the samples of deps (RelatedDependencies, indexed by at) need: for a
// check, its sampler with the columns they mention copied from the
// checker (the checker moves on with the next check), detached; for a
// full evaluation, its encoded window and snapshot, which nothing changes.
// It is nil when there is no window to take them on.
func TakeRelated(out *Outcome, snap *window.Snapshot, deps []discovery.Dependency, at map[string]int) *Related {
	w := &Related{deps: deps, At: at}
	switch {
	case out.chk.attached():
		out.chk.take(sampledColumns(deps))
		out.chk.c = nil
		w.chk = out.chk
	case out.Table != nil && snap != nil:
		w.table, w.snap = out.Table, snap
	default:
		return nil
	}
	return w
}

// RelatedSamples takes a sample of violating records for each related
// dependency (with removals) of an evaluation's events, computed the way
// the events' own are (a minimal removal set on the window, as
// windowSamples does) on what TakeRelated took of the window.
// samples[w.At[id]] is the dependency id's (samples is nil when none could
// be taken). Only the status history keeps them, so the historian takes
// them, off the evaluator.
func (e Env) RelatedSamples(ctx context.Context, w *Related) [][]alerts.Sample {
	if w.chk != nil {
		return e.checkerSamples(ctx, w.chk, w.deps)
	}
	return e.tableSamples(ctx, w.table, w.snap, w.deps)
}
