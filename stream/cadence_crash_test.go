package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/window"
)

// Two-cadence crash test parameters: one partition (the same window in
// every run), a check every ccEvery records and discovery every window
// (discover-every's default).
const (
	ccTopic   = "ccrash"
	ccRecords = 12000
	ccWindow  = 1000
	ccEvery   = 250
)

func cadenceCrashConfig(addr, dir, group, events string) Config {
	return Config{
		Brokers: []string{addr}, Group: group, EventsTopic: events, StateDir: dir, SessionTimeout: 2 * time.Second,
		Streams: []StreamConfig{{Topic: ccTopic, Window: ccWindow, Every: ccEvery, Epsilon: 0.01}},
	}
}

// holdDiscoveries sets the test hooks of the crash test's runs: every
// check runs and every merge waits for its discovery (inOrder), so that
// the events do not depend on the machine's load, and each discovery is
// held until the check before its merge is saved, so that a kill mostly
// finds a discovery running or waiting to be merged.
func holdDiscoveries(m *Monitor) {
	s := m.streams[0]
	m.testHooks().inOrder = true
	m.testHooks().beforeDiscovery = func(ctx context.Context, end uint64) {
		for s.evaluated.Load() < eval.MergeAt(end, ccWindow, ccEvery, s.cfg.DiscoverEvery)-ccEvery+1 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestHelperCadenceMonitorProcess is the monitor process
// TestTwoCadenceCrashRecovery kills; it only runs when re-executed by that
// test.
func TestHelperCadenceMonitorProcess(t *testing.T) {
	if os.Getenv("ODWATCH_CADENCE_HELPER") != "1" {
		t.Skip("helper process for TestTwoCadenceCrashRecovery")
	}
	cfg := cadenceCrashConfig(os.Getenv("ODWATCH_BROKER"), os.Getenv("ODWATCH_STATE"), "ccrash", "events")
	m, err := NewMonitor(cfg, Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	holdDiscoveries(m)
	// The parent kills the process; the timeout only bounds an orphan.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// savedCheck reads a killed run's store: the window end of its last saved
// check (ok false before the first) and its next sequence number.
func savedCheck(t *testing.T, dir string) (end uint64, ok bool, next uint64) {
	t.Helper()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	data, end, err := st.LoadTracker(ccTopic)
	if err != nil {
		t.Fatal(err)
	}
	_, next, err = st.Position(ccTopic)
	if err != nil {
		t.Fatal(err)
	}
	return end, data != nil, next
}

// finish runs a monitor on dir until it has checked the last window and
// delivered every event, then stops it cleanly.
func finishCadenceRun(t *testing.T, cfg Config) {
	t.Helper()
	r := startMonitorWith(t, cfg, holdDiscoveries)
	testkit.Eventually(t, 90*time.Second, "the last window checked and its events delivered", func() bool {
		if r.m.streams[0].evaluated.Load() != ccRecords {
			return false
		}
		p, err := r.m.store.PendingEvents(ccTopic)
		return err == nil && len(p) == 0
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestTwoCadenceCrashRecovery kills a two-cadence monitor (SIGKILL) at
// points between a check and the merge of the discovery it started (while
// the discovery runs, and once it is done but not merged), restarts it on
// the same state dir each time, and compares the events topic with an
// uninterrupted run's: the same event ids (type, dependency and window
// each), none twice.
func TestTwoCadenceCrashRecovery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash test re-executes the test binary; skipped in -short")
	}
	addr := startTestBroker(t, map[string]int{ccTopic: 1, "events": 1, "events-ref": 1})
	dir := t.TempDir()
	produced := make(chan error, 1)
	go func() {
		produced <- demo.ProducePayroll(context.Background(), demo.PayrollOptions{
			Brokers: []string{addr}, Topic: ccTopic, Rate: 800, Count: ccRecords,
			CleanRecords: 4000, ErrorRate: 0.05, StopErrorsAfter: 8000, Seed: 17,
		})
	}()
	start := func() (kill func()) {
		return startChild(t, "TestHelperCadenceMonitorProcess", "ODWATCH_CADENCE_HELPER=1", "ODWATCH_BROKER="+addr, "ODWATCH_STATE="+dir)
	}

	rng := rand.New(rand.NewSource(3))
	d := uint64(ccWindow) // discover-every's default
	running, unmerged := 0, 0
	last := int64(-1)
	for kills := 0; kills < 12; kills++ {
		kill := start()
		waitProgress(t, addr, "ccrash", ccTopic, last, kill)
		time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
		kill()
		last = testkit.Committed(t, addr, "ccrash", ccTopic)
		end, ok, next := savedCheck(t, dir)
		// The discovery pending at the kill started at the last discovery
		// point at or before the saved check; it is held until the check
		// before its merge is saved.
		phase := "no check saved"
		if ok {
			s := ccWindow - 1 + (end+1-ccWindow)/d*d
			switch {
			case end+ccEvery < s+d:
				phase = "discovery running"
				running++
			default:
				phase = "discovery done or finishing, not merged"
				unmerged++
			}
		}
		t.Logf("kill %d: committed %d, next seq %d, last saved check %d (%s)", kills+1, last, next, end, phase)
		if last >= ccRecords {
			break
		}
	}
	if err := <-produced; err != nil {
		t.Fatalf("produce: %v", err)
	}
	if running+unmerged < 3 {
		t.Errorf("only %d kills fell between a check and a merge", running+unmerged)
	}
	finishCadenceRun(t, cadenceCrashConfig(addr, dir, "ccrash", "events"))
	finishCadenceRun(t, cadenceCrashConfig(addr, t.TempDir(), "ccrash-ref", "events-ref"))

	got, want := topicEvents(t, addr, "events"), topicEvents(t, addr, "events-ref")
	differ := sameEventIDs(t, got, want)
	t.Logf("%d events in the uninterrupted run; %d kills with a discovery running, %d with one done but not merged; %d events carry other values",
		len(want), running, unmerged, differ)
}

// sameEventIDs checks that got (the events after crashes) holds each id of
// want (the uninterrupted run's) once and no other; it returns how many
// carry other values than the uninterrupted run's.
func sameEventIDs(t *testing.T, got, want []alerts.Event) (differ int) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the uninterrupted run emitted no events")
	}
	seen := map[string]bool{}
	var gotIDs, wantIDs []string
	for _, e := range got {
		if seen[e.ID] {
			t.Errorf("event %s (%s %s @%d) emitted twice", e.ID, e.Type, e.DependencyText, e.Window.EndSeq)
		}
		seen[e.ID] = true
		gotIDs = append(gotIDs, e.ID)
	}
	byID := map[string]alerts.Event{}
	for _, e := range want {
		byID[e.ID] = e
		wantIDs = append(wantIDs, e.ID)
	}
	slices.Sort(gotIDs)
	gotIDs = slices.Compact(gotIDs)
	slices.Sort(wantIDs)
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("events after crashes differ from the uninterrupted run's:\n got %v\nwant %v",
			eventSummary(got), eventSummary(want))
	}
	// The errors an event carries may differ where the uninterrupted run
	// kept a skipped count (see restoreCadence): counted, not asserted.
	for _, e := range got {
		if w, ok := byID[e.ID]; ok && eventContent(e) != eventContent(w) {
			differ++
			t.Logf("event %s carries other values than the uninterrupted run's:\n got %s\nwant %s", e.ID, eventContent(e), eventContent(w))
		}
	}
	return differ
}

// eventContent is what an event says, as JSON.
func eventContent(e alerts.Event) string {
	b, err := json.Marshal(e)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// topicEvents reads the events on topic.
func topicEvents(t *testing.T, addr, topic string) []alerts.Event {
	t.Helper()
	var out []alerts.Event
	for _, msg := range readTopic(t, addr, topic) {
		var e alerts.Event
		if err := json.Unmarshal(msg.Value, &e); err != nil {
			t.Fatalf("event on %s: %v", topic, err)
		}
		if e.ID != headerValue(msg.Headers, "ce_id") {
			t.Fatalf("event %s on %s under ce_id %s", e.ID, topic, headerValue(msg.Headers, "ce_id"))
		}
		out = append(out, e)
	}
	return out
}

// TestAutoRestartRerunsDiscovery: with discover-every auto, a restart runs
// at once a discovery of the saved check's window, the one a crash may have
// lost (the pacer's starts depend on time, so which one it was is not
// known), merged into the first check after it ends, rather than starting
// the pacer over at the first check after the restart (a check, and a
// discovery's run, later). The store holds 25 records and the check of
// window 19 (window 10, every 5); the check of 24, lost, is replayed.
func TestAutoRestartRerunsDiscovery(t *testing.T) {
	t.Parallel()
	m, s := autoRestarted(t, "ar", 10, 5, 25, 19, 3)
	s.mb.mu.Lock()
	var queued []string
	for _, j := range s.mb.feed.discs {
		queued = append(queued, fmt.Sprintf("%d merged at %d", j.endSeq, j.mergeAt))
	}
	s.mb.mu.Unlock()
	if !slices.Equal(queued, []string{"19 merged at 24"}) {
		t.Fatalf("discoveries queued by the restart: %v, want the saved check's window's, merged at the next check", queued)
	}
	var mu sync.Mutex
	merged := map[uint64]bool{}
	m.testHooks().afterCheck = func(end uint64, out *eval.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		merged[end] = out.Merged
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.eval.run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testkit.Eventually(t, 30*time.Second, "the replayed check saved and the discovery ended", func() bool {
		s.mb.mu.Lock()
		defer s.mb.mu.Unlock()
		return s.evaluated.Load() == 25 && (s.mb.feed.done.Has(19) || merged[24])
	})
	// The first check after it merges it (no new discovery started meanwhile).
	var rec decode.FlatRecord
	for seq := uint64(25); seq < 30; seq++ {
		rec.Reset()
		rec.AddString("a", strconv.FormatUint(seq%3, 10))
		rec.AddString("b", strconv.FormatUint(2*(seq%3), 10))
		rec.AddString("c", strconv.FormatUint(seq, 10))
		s.win.Append(window.RowMeta{Partition: 0, Offset: int64(seq), Seq: seq, Time: time.Unix(int64(seq), 0)}, &rec)
	}
	s.dispatch(29)
	testkit.Eventually(t, 30*time.Second, "check of window 29 saved", func() bool { return s.evaluated.Load() == 30 })
	mu.Lock()
	defer mu.Unlock()
	if !merged[24] && !merged[29] {
		t.Fatalf("merged at 24 %v, at 29 %v: want the discovery of window 19 merged at one of them", merged[24], merged[29])
	}
}

// TestAutoRestartMergesWithoutNewRecords: with discover-every auto, a
// restart whose store ends at the saved check's window (nothing was lost
// but that window's discovery) merges the re-run discovery on that window
// once it ends, without waiting for the records of the next check: the
// checker takes the saved window (not checked again) and the discovery's
// rules are counted there and watched. Before, they waited for the next
// check, which needs records that may never come.
func TestAutoRestartMergesWithoutNewRecords(t *testing.T) {
	t.Parallel()
	m, s := autoRestarted(t, "am", 200, 100, 300, 299, 7)
	if w := s.eval.tracker.Watched(); len(w) != 0 {
		t.Fatalf("watched before the re-run discovery: %d, want none (the saved tracker is empty)", len(w))
	}
	checked := false
	m.testHooks().afterCheck = func(uint64, *eval.Outcome) { checked = true }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.eval.run(ctx) }()
	testkit.Eventually(t, 30*time.Second, "the re-run discovery's rules watched on the saved window", func() bool {
		return len(s.eval.tracker.Watched()) > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if checked {
		t.Error("the saved window was checked again")
	}
	if n := s.evaluated.Load(); n != 300 {
		t.Errorf("evaluated %d records, want 300 (no check ran)", n)
	}
	t.Logf("watched after the merge on window 299: %d rules", len(s.eval.tracker.Watched()))
}

// autoRestarted is a monitor of one stream (window, every, discover-every
// auto, eps 0.01) restarted from a store of n records and a saved check
// of window end saved (restoreSaved); record o has a = o mod k, b = 2a
// and c = o.
func autoRestarted(t *testing.T, topic string, window, every int, n int64, saved uint64, k int64) (*Monitor, *streamRun) {
	t.Helper()
	m := offlineMonitorWith(t, StreamConfig{Topic: topic, Window: window, Every: every, DiscoverEvery: AutoDiscoverEvery, Epsilon: 0.01},
		Options{Sinks: []alerts.Sink{&collectSink{}}})
	return m, restoreSaved(t, m, topic, n, saved, func(o int64, rec *decode.FlatRecord) {
		rec.AddString("a", strconv.FormatInt(o%k, 10))
		rec.AddString("b", strconv.FormatInt(2*(o%k), 10))
		rec.AddString("c", strconv.FormatInt(o, 10))
	})
}
