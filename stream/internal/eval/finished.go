package eval

import (
	"cmp"
	"slices"
	"time"
)

// Finished is a two-cadence stream's discovery that ended and is not
// merged yet: the discovery of the window ending at EndSeq, merged into
// the first check at or past MergeAt (the pacer says which).
type Finished struct {
	EndSeq, MergeAt uint64
	Outcome         DiscoveryOutcome
	// Took is how long it ran, Held the part of it its workers waited at
	// the check gate.
	Took, Held time.Duration
	// Early: the window of the last check will do once that check's
	// window is EndSeq's or later (Overdue), not only past MergeAt: a
	// restart's re-run of auto on the saved check's window, which stands
	// for a lost discovery that an uninterrupted run may have merged on
	// that window (MergeFound) without another record.
	Early bool
	// Found: its new rules were merged already, on the window of the last
	// check (Env.MergeFound), which had passed MergeAt (or, Early, EndSeq)
	// when it ended; the next check merges it as usual.
	Found bool
}

// FinishedList is the discoveries that ended and are not merged yet, in
// the order they ended. The monitor's mailbox holds it, under its lock:
// the discoverer appends, the evaluator takes.
type FinishedList []Finished

// Has reports whether the discovery of window endSeq is in l.
func (l FinishedList) Has(endSeq uint64) bool {
	return slices.ContainsFunc(l, func(f Finished) bool { return f.EndSeq == endSeq })
}

// Due takes from l the discoveries due at the check of window end endSeq
// (their MergeAt at or before it) and returns the newest of them, and the
// window ends of the older ones, dropped unmerged (superseded).
func (l *FinishedList) Due(endSeq uint64) (due Finished, superseded []uint64, ok bool) {
	kept := (*l)[:0]
	for _, f := range *l {
		if f.MergeAt > endSeq {
			kept = append(kept, f)
			continue
		}
		if ok {
			superseded = append(superseded, due.EndSeq)
		}
		due, ok = f, true
	}
	clear((*l)[len(kept):])
	*l = kept
	return due, superseded, ok
}

// Overdue is the newest discovery of l whose merge point the check of
// window end last passed (an Early one's own window) and whose new rules
// were not merged yet (Env.MergeFound): it is marked Found and returned,
// or nil. So a discovery that ends with no check queued is merged without
// waiting for the records of the next check.
func (l FinishedList) Overdue(last uint64) *Finished {
	var out *Finished
	for i := range l {
		f := &l[i]
		due := f.MergeAt <= last || f.Early && f.EndSeq <= last
		if due && !f.Found && (out == nil || f.EndSeq > out.EndSeq) {
			out = f
		}
	}
	if out != nil {
		out.Found = true
	}
	return out
}

// Pending are l's discoveries as the checks build them ahead of their
// merge (CheckWindow), oldest window first; they point into a copy of l,
// which changes under the mailbox's lock.
func (l FinishedList) Pending() []Pending {
	l = slices.Clone(l)
	out := make([]Pending, len(l))
	for i := range l {
		out[i] = Pending{EndSeq: l[i].EndSeq, MergeAt: l[i].MergeAt, Outcome: &l[i].Outcome}
	}
	slices.SortFunc(out, func(x, y Pending) int { return cmp.Compare(x.EndSeq, y.EndSeq) })
	return out
}
