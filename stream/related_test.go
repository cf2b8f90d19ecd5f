package stream

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/internal/history"
	"github.com/odwatch/odwatch/stream/window"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRelatedSamplesAfterDelivery: the samples of an event's related
// rules are taken after the event is delivered and off the evaluator, and
// still reach the status history. The related-sample step of the first
// evaluation whose event has related rules with removals is held (a
// blocking hook) until the test has seen the event on the sink, carrying
// its own samples, and not yet in the status history, and has seen the
// next check run and be saved meanwhile (with the step on the evaluator,
// it would wait for the hold and time out); once let go, the history holds
// the event with a sample for each of those rules, and the rules' points
// of both windows in window order. Both cadences: the checks' path
// (samples from the columns copied from the checker) and the full
// evaluations' (from the encoded window).
func TestRelatedSamplesAfterDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		discoverEvery int
	}{
		{"two cadences", cadDiscoverEvery},
		{"one cadence", cadEvery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &relatedHold{held: make(chan alerts.Event, 1), release: make(chan struct{})}
			c := newCadenceRunOf(t, StreamConfig{Topic: "cad", Window: cadWindow, Every: cadEvery,
				DiscoverEvery: tc.discoverEvery, Epsilon: 0.05}, func(f *hooks) { f.beforeRelated = h.hook })
			defer h.let()
			var ev *alerts.Event
			for c.seq < 2500 && ev == nil {
				end, due := c.next()
				if !due {
					continue
				}
				c.s.dispatch(end)
				testkit.Eventually(t, 60*time.Second, "the related-sample step of window "+strconv.FormatUint(end, 10), func() bool {
					return h.reached.Load() >= end+1
				})
				select {
				case e := <-h.held:
					ev = &e
				default:
				}
			}
			if ev == nil {
				t.Fatalf("no event with related rules with removals; events: %v", eventSummary(c.sink.snapshot()))
			}
			// Held in the related-sample step: the event is delivered,
			// with its own samples, and not in the history yet.
			i := slices.IndexFunc(c.sink.snapshot(), func(e alerts.Event) bool { return e.ID == ev.ID })
			if i < 0 {
				t.Fatalf("%s %s (window %d) not delivered before its related samples were taken", ev.Type, ev.DependencyText, ev.Window.EndSeq)
			}
			// The sample's record fields are the status history's: the
			// delivered event (its JSON) leaves them out.
			own := slices.Clone(ev.Samples)
			for i := range own {
				own[i].Fields = nil
			}
			if got := c.sink.snapshot()[i]; len(got.Samples) == 0 || !reflect.DeepEqual(got.Samples, own) {
				t.Errorf("delivered event's samples %v, want its own sample %v", got.Samples, own)
			}
			if _, ok := statusEvent(t, c, ev.ID); ok {
				t.Errorf("%s in the status history before its related samples were taken", ev.DependencyText)
			}
			// The next check runs and is saved while the step is held.
			first := ev.Window.EndSeq
			next := first
			for next == first {
				if end, due := c.next(); due {
					next = end
				}
			}
			c.s.dispatch(next)
			c.waitChecked(next)
			if got := c.s.statusEnd.Load(); got > first {
				t.Fatalf("status history appended up to window %d while window %d's related samples were held", got-1, first)
			}
			h.let()
			c.waitStatus(next)
			se, ok := statusEvent(t, c, ev.ID)
			if !ok {
				t.Fatalf("%s (window %d) not in the status history once its related samples were taken", ev.DependencyText, first)
			}
			checkRelatedSamples(t, ev, se)
			checkHistoryEnds(t, c, ev, first, next)
		})
	}
}

// relatedHold holds, in its related-sample step (the historian's
// beforeRelated hook), the first evaluation whose event has related rules
// with removals, until let.
type relatedHold struct {
	// reached is the window end + 1 of the last evaluation whose
	// related-sample step began: set after held is filled, so that a test
	// that saw it also sees held.
	reached atomic.Uint64
	held    chan alerts.Event
	release chan struct{}
	holding bool // the historian goroutine's
}

func (h *relatedHold) hook(ctx context.Context, end uint64, events []alerts.Event) {
	i := slices.IndexFunc(events, func(e alerts.Event) bool { return relatedRemovals(e) > 0 })
	if h.holding || i < 0 {
		h.reached.Store(end + 1)
		return
	}
	h.holding = true
	h.held <- events[i]
	h.reached.Store(end + 1)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

// let lets the held evaluation go on (once; later calls do nothing).
func (h *relatedHold) let() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// checkRelatedSamples checks the status history's event se of ev: a
// sample of records of the window, with the rule's columns only, for each
// related rule with removals, and none for the others.
func checkRelatedSamples(t *testing.T, ev *alerts.Event, se StatusEvent) {
	t.Helper()
	for _, r := range ev.Related {
		if r.Removals == 0 {
			continue
		}
		smp := se.RelatedSamples[r.DependencyID]
		if len(smp) == 0 {
			t.Errorf("related %s (%d removals): no sample in the status history", r.DependencyText, r.Removals)
		}
		cols := r.Dependency.Columns()
		for _, s := range smp {
			if s.Topic != "cad" || s.Offset < 0 || s.Offset > int64(ev.Window.EndSeq) || len(s.Values) == 0 {
				t.Errorf("related %s: sample %+v, want a record of the window with its values", r.DependencyText, s)
			}
			for name := range s.Values {
				if !slices.Contains(cols, name) {
					t.Errorf("related %s: sample has column %s, not the rule's", r.DependencyText, name)
				}
			}
		}
	}
	if len(se.RelatedSamples) != relatedRemovals(*ev) {
		t.Errorf("status history: samples for %d related rules, want %d (those with removals)", len(se.RelatedSamples), relatedRemovals(*ev))
	}
}

// checkHistoryEnds checks that ev's rule (violated or discovered, so still
// tracked) has a point in the status history for windows first and next,
// in window order.
func checkHistoryEnds(t *testing.T, c *cadenceRun, ev *alerts.Event, first, next uint64) {
	t.Helper()
	pts, err := c.s.m.StatusHistory("cad", ev.DependencyID)
	if err != nil {
		t.Fatal(err)
	}
	var ends []uint64
	for _, p := range pts {
		ends = append(ends, p.WindowEnd)
	}
	if len(ends) < 2 || ends[len(ends)-2] != first || ends[len(ends)-1] != next || !slices.IsSorted(ends) {
		t.Errorf("%s: status history at windows %v, want them in order ending with %d, %d", ev.DependencyText, ends, first, next)
	}
}

// relatedRemovals is the number of e's related rules with removals when e
// carries samples (carriesSample), else 0.
func relatedRemovals(e alerts.Event) int {
	if !eval.CarriesSample(&e) {
		return 0
	}
	n := 0
	for _, r := range e.Related {
		if r.Removals != 0 {
			n++
		}
	}
	return n
}

// statusEvent is the event id in c's status history.
func statusEvent(t *testing.T, c *cadenceRun, id string) (StatusEvent, bool) {
	t.Helper()
	evs, err := c.s.m.StatusEvents("cad")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Event.ID == id {
			return e, true
		}
	}
	return StatusEvent{}, false
}

// TestStatusSkipsRelatedWhenBehind: with the historian holding as many
// evaluations with related samples as its bound allows (one here, its
// related-sample step held), the next evaluation's related samples are
// skipped and counted, and its event is still appended to the history,
// after the held one's, which gets its samples once let go.
func TestStatusSkipsRelatedWhenBehind(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := offlineMonitorWith(t, StreamConfig{Topic: "sk", Window: 100, Every: 100, Epsilon: 0.05}, Options{Registerer: reg})
	s := m.streams[0]
	// b and c follow a but in every 10th and every 7th row.
	for r := range 100 {
		var rec decode.FlatRecord
		b, c := r%5, r%5
		if r%10 == 0 {
			b = 9
		}
		if r%7 == 0 {
			c = 8
		}
		rec.AddString("a", strconv.Itoa(r%5))
		rec.AddString("b", strconv.Itoa(b))
		rec.AddString("c", strconv.Itoa(c))
		s.win.Append(window.RowMeta{Offset: int64(r), Seq: uint64(r), Time: time.Unix(int64(r), 0)}, &rec)
	}
	snap := s.win.Snapshot()
	table, err := table.EncodeTyped(snap.Columns(), s.cfg.Typing) // no ordinal declarations
	if err != nil {
		t.Fatal(err)
	}
	own, rel := mustDep(t, "{a}: [] -> b"), mustDep(t, "{a}: [] -> c")
	outcome := func(end uint64) *eval.Outcome {
		ev := alerts.Event{ID: "e" + strconv.FormatUint(end, 10), Type: alerts.EventViolated, Dependency: own,
			DependencyID: alerts.DependencyID(own), DependencyText: own.String(), Removals: 10,
			Window:  alerts.WindowInfo{Stream: "sk", EndSeq: end, Records: 100},
			Related: []alerts.Related{{DependencyID: alerts.DependencyID(rel), Dependency: rel, DependencyText: rel.String(), Removals: 14}}}
		return &eval.Outcome{Info: ev.Window, Table: table, Events: []alerts.Event{ev}}
	}
	release := make(chan struct{})
	s.m.testHooks().beforeRelated = func(ctx context.Context, end uint64, _ []alerts.Event) {
		if end == 99 {
			<-release
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.eval.hist = history.Start(ctx, 1, s.eval.appendStatus)
	s.eval.recordStatus(snap, outcome(99))
	s.eval.recordStatus(snap, outcome(199)) // returns at once: the historian is held
	if got := metricValue(t, reg, "odwatch_status_samples_skipped_total", map[string]string{"stream": "sk"}); got != 1 {
		t.Errorf("odwatch_status_samples_skipped_total %v, want 1", got)
	}
	close(release)
	s.eval.hist.Close()
	evs, err := m.StatusEvents("sk")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.Event.ID)
	}
	if !slices.Equal(ids, []string{"e99", "e199"}) {
		t.Fatalf("status history events %v, want [e99 e199]", ids)
	}
	relID := alerts.DependencyID(rel)
	if smp := evs[0].RelatedSamples[relID]; len(smp) == 0 {
		t.Errorf("held evaluation: no sample of its related rule")
	} else {
		for _, x := range smp {
			if x.Offset%7 != 0 || x.Values["c"] != "8" { // the minority of c in each class of a
				t.Errorf("sample %+v is not a violating row of %s", x, rel)
			}
		}
	}
	if len(evs[1].RelatedSamples) != 0 {
		t.Errorf("evaluation past the bound: related samples %v, want none (skipped)", evs[1].RelatedSamples)
	}
}
