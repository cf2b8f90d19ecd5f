package stream

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/window"
)

// cadenceRun drives one two-cadence stream offline: the test appends
// records to the window and dispatches at the stream's boundaries, as the
// consumer does, while the stream's evaluator runs on its own goroutine.
type cadenceRun struct {
	t      *testing.T
	s      *streamRun
	sink   *collectSink
	cancel context.CancelFunc
	done   chan error
	r      *rand.Rand
	seq    uint64
}

const (
	cadWindow, cadEvery, cadDiscoverEvery = 400, 50, 200
	cadFaultAt                            = 1500 // x ~ y breaks from here on
)

func newCadenceRun(t *testing.T, beforeDiscovery func(ctx context.Context, endSeq uint64), exact bool) *cadenceRun {
	t.Helper()
	return newTypedCadenceRun(t, beforeDiscovery, exact, table.Typing{})
}

// newTypedCadenceRun is newCadenceRun with the stream's columns typed as
// typing says.
func newTypedCadenceRun(t *testing.T, beforeDiscovery func(ctx context.Context, endSeq uint64), exact bool, typing table.Typing, pinned ...string) *cadenceRun {
	t.Helper()
	return newCadenceRunOf(t, StreamConfig{
		Topic: "cad", Window: cadWindow, Every: cadEvery, DiscoverEvery: cadDiscoverEvery, Epsilon: 0.05, Typing: typing, Pinned: pinned,
	}, func(f *hooks) { f.beforeDiscovery, f.exactChecks = beforeDiscovery, exact })
}

// newCadenceRunOf is newCadenceRun with the stream configured as sc says
// (two cadences or one) and its feed's test hooks set by hooks, before its
// evaluator starts.
func newCadenceRunOf(t *testing.T, sc StreamConfig, set func(*hooks)) *cadenceRun {
	t.Helper()
	sink := &collectSink{}
	m := offlineMonitorWith(t, sc, Options{Sinks: []alerts.Sink{sink}})
	c := &cadenceRun{t: t, s: m.streams[0], sink: sink, done: make(chan error, 1), r: rand.New(rand.NewPCG(9, 9))}
	set(c.s.m.testHooks())
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.done <- c.s.eval.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-c.done; err != nil {
			t.Error(err)
		}
	})
	return c
}

// next appends one record: x ~ y (asc) and g -> h hold until cadFaultAt,
// after which y is random in a third of the records. It returns the
// record's sequence number and whether it ends a window to check.
func (c *cadenceRun) next() (uint64, bool) {
	var rec decode.FlatRecord
	x := c.r.IntN(1000)
	y := 2 * x
	if c.seq >= cadFaultAt && c.r.IntN(3) == 0 {
		y = c.r.IntN(2000)
	}
	g := c.r.IntN(5)
	rec.AddString("x", strconv.Itoa(x))
	rec.AddString("y", strconv.Itoa(y))
	rec.AddString("g", "g"+strconv.Itoa(g))
	rec.AddString("h", "h"+strconv.Itoa(g%3))
	rec.AddString("z", strconv.Itoa(c.r.IntN(50)))
	seq := c.seq
	c.s.win.Append(window.RowMeta{Partition: 0, Offset: int64(seq), Seq: seq, Time: time.Unix(int64(seq), 0)}, &rec)
	c.seq++
	return seq, c.s.countBoundary(seq) && c.s.win.Len() >= cadWindow
}

// discoveryDue reports whether the discovery of the window ending at end
// has finished (it is waiting to be merged).
func (c *cadenceRun) discoveryDone(end uint64) bool {
	c.s.mb.mu.Lock()
	defer c.s.mb.mu.Unlock()
	return c.s.mb.feed.done.Has(end)
}

// waitChecked waits until the check of the window ending at end is saved.
func (c *cadenceRun) waitChecked(end uint64) {
	c.t.Helper()
	testkit.Eventually(c.t, 60*time.Second, "check of window "+strconv.FormatUint(end, 10), func() bool {
		return c.s.evaluated.Load() >= end+1
	})
}

// waitStatus waits until the status history holds the evaluation of
// window end (appended off the evaluator, after its check is saved).
func (c *cadenceRun) waitStatus(end uint64) {
	c.t.Helper()
	testkit.Eventually(c.t, 60*time.Second, "status history of window "+strconv.FormatUint(end, 10), func() bool {
		return c.s.statusEnd.Load() >= end+1
	})
}

func isDiscoveryEnd(end uint64) bool { return (end+1-cadWindow)%cadDiscoverEvery == 0 }

// TestSlowDiscoveryNeverDelaysACheck holds a discovery run until the test
// lets it go: meanwhile the checks of the following windows are saved one
// after the other, and the fault is reported by a check.
func TestSlowDiscoveryNeverDelaysACheck(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var held sync.Once
	heldAt := make(chan uint64, 1)
	c := newCadenceRun(t, func(ctx context.Context, end uint64) {
		if end < cadFaultAt {
			return
		}
		held.Do(func() {
			heldAt <- end
			select {
			case <-release:
			case <-ctx.Done():
			}
		})
	}, false)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	checked := 0
	for c.seq < 3000 {
		end, due := c.next()
		if !due {
			continue
		}
		c.s.dispatch(end)
		c.waitChecked(end) // no discovery result is needed for a check
		checked++
	}
	select {
	case end := <-heldAt:
		t.Logf("discovery of window %d held while %d checks ran", end, checked)
	default:
		t.Fatal("no discovery was held: the test did not exercise a slow discovery")
	}
	var violated *alerts.Event
	for _, e := range c.sink.snapshot() {
		if e.Type == alerts.EventViolated && e.DependencyText == "{}: x ~ y (asc)" {
			violated = &e
			break
		}
	}
	if violated == nil {
		t.Fatalf("x ~ y not reported violated while discovery was held; events: %v", eventSummary(c.sink.snapshot()))
	}
	if violated.Window.EndSeq >= cadFaultAt+cadWindow {
		t.Errorf("violated at window end %d, want within a window of the fault at %d", violated.Window.EndSeq, cadFaultAt)
	}
}

func eventSummary(evs []alerts.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type)+" "+e.DependencyText+" @"+strconv.FormatUint(e.Window.EndSeq, 10))
	}
	return out
}

// Modes of cadenceEvents: how discoveries run against the checks.
const (
	// sequential: every discovery finishes before the next record.
	sequential = iota
	// interleaved: every discovery is made slow, so that it spans two
	// checks.
	interleaved
	// paused: every discovery is stopped mid-way until the next check is
	// dispatched, and that check waits until the discovery is paused at
	// the check gate: the check runs while the discovery waits.
	paused
)

// cadenceEvents runs the cadence stream up to record last+cadEvery in the
// given mode and returns the events of the windows up to last. In paused
// mode it also returns the number of checks that ran while a discovery
// was paused at the gate.
func cadenceEvents(t *testing.T, mode int) ([]alerts.Event, int) {
	return cadenceEventsWith(t, mode, func(*hooks) {})
}

// cadenceEventsWith is cadenceEvents with the feed's test hooks set by
// hooks before the first record.
func cadenceEventsWith(t *testing.T, mode int, set func(*hooks)) ([]alerts.Event, int) {
	const last = 2399
	var c *cadenceRun
	pause := &gatePause{reached: make(chan struct{}, 1), resume: make(chan struct{})}
	c = newCadenceRun(t, func(ctx context.Context, end uint64) {
		switch mode {
		case interleaved:
			// Finish only after two more checks ran (the first full
			// window's, which the next check waits for, at once).
			for end+1 != cadWindow && c.s.evaluated.Load() < end+1+2*cadEvery && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
		case paused:
			pause.steps.Store(0)
			if end+1 == cadWindow {
				// The next check merges it (mergeAt) and waits for it,
				// gate open: it cannot be paused for that check.
				pause.steps.Store(3)
			}
		}
	}, false)
	set(c.s.m.testHooks())
	if mode == paused {
		pause.install(c)
	}
	// One check past the last compared window: its delivery is done once
	// the next check is saved (one goroutine does both).
	for c.seq < last+cadEvery+1 {
		end, due := c.next()
		if !due {
			continue
		}
		if d, ok := eval.MergedAt(end, cadWindow, cadEvery, cadDiscoverEvery); mode != sequential && ok {
			// Discovery has until its merge point: the check of window
			// end + DiscoverEvery (the next check for the first full
			// window's), which the consumer holds until it ends
			// (awaitDiscovery).
			testkit.Eventually(t, 60*time.Second, "discovery of "+strconv.FormatUint(d, 10), func() bool { return c.discoveryDone(d) })
		}
		pausing := mode == paused && end >= cadWindow-1+cadEvery && isDiscoveryEnd(end-cadEvery) && end-cadEvery+1 != cadWindow
		if pausing {
			// The discovery started a check ago is at its third step.
			select {
			case <-pause.reached:
			case <-time.After(60 * time.Second):
				t.Fatal("discovery did not reach its third step")
			}
			pause.at.Store(end + 1)
		}
		c.s.dispatch(end)
		if pausing {
			pause.resume <- struct{}{}
		}
		if mode == sequential && isDiscoveryEnd(end) {
			testkit.Eventually(t, 60*time.Second, "discovery", func() bool { return c.discoveryDone(end) })
		}
		c.waitChecked(end)
	}
	var out []alerts.Event
	for _, e := range c.sink.snapshot() {
		if e.Window.EndSeq <= last {
			out = append(out, e)
		}
	}
	return out, int(pause.checks.Load())
}

// gatePause holds a discovery at its third step until resumed (reached,
// then resume), and counts the checks that ran while a discovery waited at
// the gate: cadenceEventsWith's paused mode.
type gatePause struct {
	steps           atomic.Int64
	reached, resume chan struct{}
	at              atomic.Uint64 // the check (window end + 1) that waits for a paused discovery
	checks          atomic.Int64
}

// install sets c's hooks: the discovery's steps and, before the check at,
// a wait until the discovery stops at the gate.
func (p *gatePause) install(c *cadenceRun) {
	c.s.m.testHooks().discoveryStep = func(ctx context.Context) {
		if p.steps.Add(1) != 3 {
			return
		}
		p.reached <- struct{}{}
		select {
		case <-p.resume:
		case <-ctx.Done():
		}
	}
	c.s.m.testHooks().beforeCheck = func(ctx context.Context, end uint64) {
		if p.at.Load() != end+1 {
			return
		}
		// The discovery was let go after this check was queued: it
		// must stop at the gate, not run beside the check.
		deadline := time.Now().Add(60 * time.Second)
		for c.s.mb.feed.gate.Waiting() == 0 {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		p.checks.Add(1)
	}
}

// sameEvents fails t unless got has the events of want, ids and errors
// included.
func sameEvents(t *testing.T, name string, want, got []alerts.Event) {
	t.Helper()
	if !reflect.DeepEqual(eventSummary(want), eventSummary(got)) {
		t.Fatalf("%s events differ:\nsequential %v\n%-10s %v", name, eventSummary(want), name, eventSummary(got))
	}
	for i := range want {
		if want[i].ID != got[i].ID || want[i].ErrorNow != got[i].ErrorNow || want[i].ErrorBefore != got[i].ErrorBefore {
			t.Errorf("event %d: sequential %s (%v -> %v), %s %s (%v -> %v)", i,
				want[i].ID, want[i].ErrorBefore, want[i].ErrorNow, name, got[i].ID, got[i].ErrorBefore, got[i].ErrorNow)
		}
	}
}

// TestInterleavedCadencesMatchSequential runs the same stream twice: once
// with every discovery finished before the next record is appended
// (sequential), once with discoveries made slow, so that each spans several
// checks (interleaved). The events, ids included, are the same.
func TestInterleavedCadencesMatchSequential(t *testing.T) {
	t.Parallel()
	seq, _ := cadenceEvents(t, sequential)
	if len(seq) == 0 {
		t.Fatal("no events")
	}
	inter, _ := cadenceEvents(t, interleaved)
	sameEvents(t, "interleaved", seq, inter)
	t.Logf("%d events: %v", len(seq), eventSummary(seq))
}

// TestChecksPauseDiscovery: each discovery is stopped mid-way until the
// next check is queued, then let go; it must wait at the check gate while
// that check runs (the check waits until it does). The events, ids
// included, are those of running checks and discoveries one after another.
func TestChecksPauseDiscovery(t *testing.T) {
	t.Parallel()
	seq, _ := cadenceEvents(t, sequential)
	if len(seq) == 0 {
		t.Fatal("no events")
	}
	got, pausedChecks := cadenceEvents(t, paused)
	// Discoveries start at windows 399, 599, ..., 2399: each pauses for
	// the check after it, but the first, which that check merges.
	if want := (2399 - (cadWindow - 1)) / cadDiscoverEvery; pausedChecks != want {
		t.Fatalf("%d checks ran while a discovery was paused at the gate, want %d", pausedChecks, want)
	}
	sameEvents(t, "paused", seq, got)
}

// TestTwoCadenceReplayIsACheck: with two cadences, the window lost in a
// crash between its commit and its save was a check, and restore replays
// it as one: saved at its window end, a check (not a full evaluation)
// that merges the discovery of window 9, run again (the first full
// window's merges into the next check: mergeAt).
func TestTwoCadenceReplayIsACheck(t *testing.T) {
	sink := &collectSink{}
	m := offlineMonitorWith(t, StreamConfig{Topic: "rp", Window: 10, Every: 5, DiscoverEvery: 10, Epsilon: 0.01},
		Options{Sinks: []alerts.Sink{sink}})
	s := restoreSaved(t, m, "rp", 17, 9, func(o int64, rec *decode.FlatRecord) {
		rec.AddString("a", strconv.FormatInt(o%3, 10))
		rec.AddString("b", "const")
	})
	var mu sync.Mutex
	merged := map[uint64]bool{}
	m.testHooks().afterCheck = func(end uint64, out *eval.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		merged[end] = out.Merged
	}
	s.replayMissedEvaluation()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.eval.run(ctx) }()
	testkit.Eventually(t, 30*time.Second, "replayed check saved", func() bool { return s.evaluated.Load() == 15 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if m, ok := merged[14]; !ok || !m {
		t.Errorf("window 14 checked %v, merging %v: want a check merging the discovery of window 9", ok, m)
	}
}

// TestWindowInfoOf: the check's window description, read from the
// window's metadata, is the one a snapshot gives.
func TestWindowInfoOf(t *testing.T) {
	m := offlineMonitor(t, StreamConfig{Topic: "wi", Window: 50, Every: 10, DiscoverEvery: 20, Epsilon: 0.01})
	s := m.streams[0]
	r := rand.New(rand.NewPCG(3, 3))
	next := map[int32]int64{}
	var rec decode.FlatRecord
	for seq := uint64(0); seq < 137; seq++ {
		p := int32(r.IntN(3))
		next[p] += 1 + int64(r.IntN(3))
		rec.Reset()
		rec.AddString("a", "1")
		s.win.Append(window.RowMeta{Partition: p, Offset: next[p], Seq: seq, Time: time.Unix(int64(seq)+int64(r.IntN(20)), 0)}, &rec)
		if seq%7 == 0 {
			want := s.eval.env().WindowInfo(s.win.Snapshot(), seq)
			if got := s.win.Info(s.name, s.cfg.Topic, seq); !reflect.DeepEqual(got, want) {
				t.Fatalf("record %d: %+v, snapshot gives %+v", seq, got, want)
			}
		}
	}
}

// TestChecksMatchFullValidation: the checker, fed deltas of the window
// (rows in and out, fields that come and go, NULLs), observes for every
// tracked dependency the error a full validation of the window gives, at
// every check, with text typed nominal (the default) and with every column
// ordered (order-text), where g's byte order takes part in OCs.
func TestChecksMatchFullValidation(t *testing.T) {
	t.Parallel()
	t.Run("typed", func(t *testing.T) { checksMatchFullValidation(t, table.Typing{}, "{}: x ~ ts (asc)") })
	// g ~ x is an OC on text only in order-text, where g is ordered by
	// bytes; x ~ ts compares instants when typed and bytes in order-text.
	t.Run("order-text", func(t *testing.T) {
		checksMatchFullValidation(t, table.Typing{OrderText: true}, "{}: g ~ x (asc)", "{}: x ~ ts (asc)")
	})
}

func checksMatchFullValidation(t *testing.T, typing table.Typing, pinned ...string) {
	c := newTypedCadenceRun(t, nil, true, typing, pinned...)
	r := rand.New(rand.NewPCG(5, 5))
	compared := 0
	for c.seq < 2200 {
		var rec decode.FlatRecord
		x := r.IntN(300)
		rec.AddString("x", strconv.Itoa(x))
		if r.IntN(10) != 0 { // y missing (NULL) in a tenth of the records
			y := 2 * x
			if r.IntN(20) == 0 {
				y = r.IntN(600)
			}
			rec.AddString("y", strconv.Itoa(y))
		}
		rec.AddString("g", "g"+strconv.Itoa(x%4))
		// ts follows x in time, spelled in two zones: ordered by instant
		// (typed) x ~ ts holds; by bytes (order-text) it does not.
		ts := time.Date(2024, 1, 1, 0, x, 0, 0, time.UTC)
		if x%2 == 1 {
			ts = ts.In(time.FixedZone("", 2*3600))
		}
		rec.AddString("ts", ts.Format(time.RFC3339))
		if c.seq > 700 && c.seq < 1500 { // a field that comes and goes
			rec.AddString("late", strconv.Itoa(r.IntN(3)))
		}
		seq := c.seq
		c.s.win.Append(window.RowMeta{Partition: int32(seq % 2), Offset: int64(seq / 2), Seq: seq, Time: time.Unix(int64(seq), 0)}, &rec)
		c.seq++
		if !(c.s.countBoundary(seq) && c.s.win.Len() >= cadWindow) {
			continue
		}
		c.s.dispatch(seq)
		c.waitChecked(seq)
		c.waitStatus(seq)
		snap := c.s.win.Snapshot()
		table, err := table.EncodeTyped(snap.Columns(), typing)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, col := range table.Columns {
			have[col.Name] = true
		}
		for _, d := range c.s.eval.tracker.Tracked() {
			if slices.ContainsFunc(d.Columns(), func(name string) bool { return !have[name] }) {
				continue
			}
			want, err := discovery.Validate(context.Background(), table, d, discovery.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pts, err := c.s.m.store.RuleHistory("cad", alerts.DependencyID(d))
			if err != nil {
				t.Fatal(err)
			}
			if len(pts) == 0 || pts[len(pts)-1].WindowEnd != seq {
				continue // tracked since this check's tracker ran
			}
			if last := pts[len(pts)-1]; last.Error != want.Error {
				t.Fatalf("window %d: %s observed with error %v, full validation %v", seq, d, last.Error, want.Error)
			}
			compared++
		}
	}
	if compared < 100 {
		t.Fatalf("only %d observations compared", compared)
	}
	t.Logf("%d observations equal to a full validation", compared)
}

// TestRestoreCadence: with two cadences, restore dispatches again every
// check after the saved one (none coalesced) and every discovery not merged
// yet, from the records the store kept, and keeps the records of each such
// discovery's window in the store until its merge is saved.
func TestRestoreCadence(t *testing.T) {
	// Checks at 9, 14, 19, 24; discoveries at 9 (merged at 14: the first
	// full window's, mergeAt) and 19 (merged at 29).
	const window, every, discoverEvery = 10, 5, 10
	tests := []struct {
		name        string
		from, next  int64    // stored records: offsets (= seqs) from..next-1
		saved       int64    // window end of the saved check, -1 for none
		checks      []uint64 // checks replayed
		discoveries []uint64
		keepFrom    int64 // the first record the next commit keeps
	}{
		{"first merge saved, the next discovery lost", 0, 27, 14, []uint64{19, 24}, []uint64{19}, 10},
		{"discovery running at the crash, checks after it lost", 0, 27, 9, []uint64{14, 19, 24}, []uint64{9, 19}, 0},
		{"merge saved, the next discovery lost", 10, 27, 19, []uint64{24}, []uint64{19}, 10},
		{"nothing saved yet", 0, 17, -1, []uint64{9, 14}, []uint64{9}, 0},
		{"discovery window not in the store", 12, 27, 14, []uint64{24}, nil, 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := offlineMonitor(t, StreamConfig{Topic: "rc", Window: window, Every: every, DiscoverEvery: discoverEvery, Epsilon: 0.01})
			storeRecords(t, m, "rc", tt.from, tt.next)
			s := m.streams[0]
			if tt.saved >= 0 {
				tracker, err := alerts.NewTracker(alerts.Config{Stream: "rc", Epsilon: 0.01}).MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if err := m.store.SaveEvaluation(&state.Evaluation{Stream: "rc", WindowEnd: uint64(tt.saved), TrackerState: tracker}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.restore(context.Background()); err != nil {
				t.Fatal(err)
			}
			var checks, discs []uint64
			for _, j := range s.mb.feed.checks {
				if !j.replay {
					t.Errorf("check %d not marked replayed", j.endSeq)
				}
				checks = append(checks, j.endSeq)
			}
			for _, d := range s.mb.feed.discs {
				if !d.rerun || !s.mb.feed.rerun[d.endSeq] || d.snap.Len() != window || d.snap.Meta(window-1).Seq != d.endSeq {
					t.Errorf("discovery %d: rerun %v, awaited %v, %d rows", d.endSeq, d.rerun, s.mb.feed.rerun[d.endSeq], d.snap.Len())
				}
				discs = append(discs, d.endSeq)
			}
			if !slices.Equal(checks, tt.checks) || !slices.Equal(discs, tt.discoveries) {
				t.Fatalf("dispatched checks %v and discoveries %v, want %v and %v", checks, discs, tt.checks, tt.discoveries)
			}
			if len(s.mb.feed.checks) > 0 && !s.mb.feed.checks[0].delta.Whole() {
				t.Error("the first dispatched check does not carry the whole window")
			}
			if b := s.evictionBounds(); b[0] != tt.keepFrom {
				t.Errorf("the next commit keeps records from %d, want %d", b[0], tt.keepFrom)
			}
		})
	}
}

// TestPreparedMergeBuildsNothing: discoveries finish long before their
// merge (sequential), so the checks between build the state of the rules
// each merge adds ahead (prepareRules): the merge checks replay no
// partition, rebuild no FD block and sort no OC's classes again (the new
// OCs are recounted from their kept sorted classes), where without
// preparing they do; and the events, ids and errors included, are those
// of the run that prepares nothing.
func TestPreparedMergeBuildsNothing(t *testing.T) {
	t.Parallel()
	type merge struct {
		end    uint64
		builds incremental.Builds
	}
	collect := func(noPrepare bool) ([]alerts.Event, []merge, int) {
		var mu sync.Mutex
		var merges []merge
		prepared := 0
		evs, _ := cadenceEventsWith(t, sequential, func(f *hooks) {
			f.noPrepare = noPrepare
			f.afterCheck = func(end uint64, out *eval.Outcome) {
				mu.Lock()
				defer mu.Unlock()
				prepared += out.Prepared
				if out.Merged {
					merges = append(merges, merge{end, out.Builds})
				}
			}
		})
		mu.Lock()
		defer mu.Unlock()
		return evs, merges, prepared
	}
	plainEvents, plainMerges, _ := collect(true)
	events, merges, prepared := collect(false)
	t.Logf("merges without preparing %+v", plainMerges)
	t.Logf("merges after preparing   %+v (%d rules kept ahead over the checks)", merges, prepared)
	sameEvents(t, "prepared", plainEvents, events)
	built, restarted := false, false
	for _, m := range plainMerges {
		built = built || m.builds.Nodes+m.builds.FDs+m.builds.Rebuilt > 0
	}
	for _, m := range merges {
		// The first full window's discovery merges into the next check:
		// no check before it to build ahead in.
		if b := m.builds; b.Nodes+b.FDs+b.Rebuilt > 0 && m.end != cadWindow-1+cadEvery {
			t.Errorf("merge at window %d built %+v from the whole window", m.end, b)
		}
		restarted = restarted || m.builds.Restarted > 0
	}
	if !built || !restarted || prepared == 0 {
		t.Fatalf("the runs do not show rules built ahead (built without preparing %v, OCs restarted %v, %d kept ahead)", built, restarted, prepared)
	}
}

// restoreSaved seeds m's store with n records of its first stream (row
// fills record o), committed together, and a saved evaluation of window
// end windowEnd with an empty tracker that observed that window, then
// restores the stream from it, as a restart after a crash between a
// commit and a save finds it.
func restoreSaved(t *testing.T, m *Monitor, stream string, n int64, windowEnd uint64, row func(o int64, rec *decode.FlatRecord)) *streamRun {
	t.Helper()
	c := &state.Commit{Stream: stream, NextOffset: map[int32]int64{0: n}, NextSeq: uint64(n)}
	var rec decode.FlatRecord
	for o := int64(0); o < n; o++ {
		rec.Reset()
		row(o, &rec)
		c.Records = append(c.Records, state.Record{Offset: o, Seq: uint64(o), Value: rec.AppendBinary(nil)})
	}
	if err := m.store.Apply(c); err != nil {
		t.Fatal(err)
	}
	tr := alerts.NewTracker(alerts.Config{Stream: stream, Epsilon: 0.01})
	tr.ObserveCheck(alerts.WindowInfo{Stream: stream, EndSeq: windowEnd}, nil) // as saved by that window's check
	tracker, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.store.SaveEvaluation(&state.Evaluation{Stream: stream, WindowEnd: windowEnd, TrackerState: tracker}); err != nil {
		t.Fatal(err)
	}
	s := m.streams[0]
	if err := s.restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}
