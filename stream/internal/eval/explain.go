package eval

import (
	"context"
	"slices"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/stream/internal/explain"
	"github.com/odwatch/odwatch/stream/window"
)

// explainEvents gives each violated event of out (with removals) its
// explanation and samples from the violating records that entered last,
// each with what the rule expected (explain.ForEvent), on the outcome's
// window, after attachSamples took the rule columns' encoding. It runs
// here, on the evaluator before the save, because the event carries it
// and is saved and delivered before the historian runs; a window without
// a violated event pays nothing (docs/DESIGN.md, "Explanations"). An
// explanation that fails is logged and the event gets a removal
// sample.
func (e Env) explainEvents(ctx context.Context, out *Outcome, snap *window.Snapshot) {
	var w explain.Event
	for i := range out.Events {
		ev := &out.Events[i]
		if ev.Type != alerts.EventViolated || ev.Removals == 0 || ctx.Err() != nil {
			continue
		}
		if w.Meta == nil {
			var ok bool
			if w, ok = e.explainWindow(out, snap); !ok {
				return
			}
		}
		d, back, ok := explainable(ctx, w, ev.Dependency)
		if !ok {
			continue // a key: its violations are repeats, nothing to explain
		}
		x, samples, err := explain.ForEvent(w, d, back, explain.DefaultOptions)
		if err != nil {
			e.Log.Warn("explanation", "dependency", ev.DependencyText, "err", err)
			continue
		}
		if x != nil {
			ev.Explanation, ev.Samples = x, samples
		}
	}
}

// explainWindow is what explanations read of the outcome's window: every
// column (a check's read in place on its checker's ring, which nothing
// changes before explainEvents returns: codes and dictionaries, not
// encoded) and the encoding of the events' rule columns (the samples'),
// with the rows' metadata. ok is false when there is no window to read.
func (e Env) explainWindow(out *Outcome, snap *window.Snapshot) (w explain.Event, ok bool) {
	w = explain.Event{Topic: e.Cfg.Topic, Samples: e.Cfg.Sample}
	w.Epsilon = e.Cfg.Epsilon
	switch s := out.chk; {
	case s.attached() && s.table != nil:
		metas := s.metas
		w.Columns, w.Slot, w.Counts = s.c.eng.Ring()
		w.Rule, w.Meta = s.table, func(i int) window.RowMeta { return metas[i] }
	case out.Table != nil && snap != nil:
		w.Columns, w.Rule, w.Meta = snap.Columns(), out.Table, snap.Meta
	default:
		return w, false
	}
	return w, true
}

// explainable is the rule an event of d is explained by: d itself for an
// FD or an OC, for an equivalence the FD between its members (first
// member to another, or back) that breaks most on the window, with that
// FD the other way (back: a record whose pair of values disagrees breaks
// both, and which member changed the data cannot tell), none for a key.
func explainable(ctx context.Context, w explain.Event, d discovery.Dependency) (rule discovery.Dependency, back *discovery.Dependency, ok bool) {
	switch d.Kind {
	case discovery.KindOFD, discovery.KindOC:
		return d, nil, true
	case discovery.KindEquivalence:
	default:
		return d, nil, false
	}
	var fds []discovery.Dependency // each member's FD pair: to it, then back
	for _, m := range d.Set[1:] {
		fds = append(fds,
			discovery.Dependency{Kind: discovery.KindOFD, Context: append(slices.Clone(d.Context), d.Set[0]), RHS: m},
			discovery.Dependency{Kind: discovery.KindOFD, Context: append(slices.Clone(d.Context), m), RHS: d.Set[0]})
	}
	results, errs, err := discovery.RemovalSets(ctx, w.Rule, fds, 0)
	if err != nil || len(fds) == 0 {
		return d, nil, false
	}
	best := -1
	for i := range fds {
		if errs[i] == nil && (best < 0 || results[i].Removals > results[best].Removals) {
			best = i
		}
	}
	if best < 0 {
		return d, nil, false
	}
	return fds[best], &fds[best^1], true
}
