package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
)

// Crash test parameters: one partition, so that the arrival order (and so
// the window) is the same in every run.
const (
	crashTopic   = "crash"
	crashRecords = 16000
	crashWindow  = 1000
	crashEvery   = 500
)

func crashConfig(addr, dir, group, events string) Config {
	return Config{
		Brokers:        []string{addr},
		Group:          group,
		EventsTopic:    events,
		StateDir:       dir,
		SessionTimeout: 2 * time.Second,
		Streams: []StreamConfig{{
			Topic: crashTopic, Window: crashWindow, Every: crashEvery, Epsilon: 0.01,
		}},
	}
}

// TestHelperMonitorProcess is the monitor process TestCrashRecovery kills;
// it only runs when re-executed by that test.
func TestHelperMonitorProcess(t *testing.T) {
	if os.Getenv("ODWATCH_CRASH_HELPER") != "1" {
		t.Skip("helper process for TestCrashRecovery")
	}
	cfg := crashConfig(os.Getenv("ODWATCH_BROKER"), os.Getenv("ODWATCH_STATE"), "crash", "events")
	m, err := NewMonitor(cfg, Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	// The parent kills the process; the timeout only bounds an orphan.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// windowKeys reads the window of a stream from a closed store as
// "partition/offset" keys, and its position.
//
// The keys are those of the window a restart restores: the last size
// records by arrival sequence. The store may hold older ones
// too, kept for the replay of an evaluation that was not saved.
func windowKeys(t testing.TB, dir, stream string, size int) ([]string, map[int32]int64, uint64) {
	t.Helper()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	var recs []state.Record
	err = st.ScanWindow(context.Background(), stream, func(r state.Record) error {
		recs = append(recs, state.Record{Partition: r.Partition, Offset: r.Offset, Seq: r.Seq})
		return nil
	})
	if err != nil {
		t.Fatalf("scan window: %v", err)
	}
	slices.SortFunc(recs, func(a, b state.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	recs = recs[max(0, len(recs)-size):]
	var keys []string
	for _, r := range recs {
		keys = append(keys, fmt.Sprintf("%d/%d/seq%d", r.Partition, r.Offset, r.Seq))
	}
	next, seq, err := st.Position(stream)
	if err != nil {
		t.Fatalf("position: %v", err)
	}
	slices.Sort(keys)
	return keys, next, seq
}

// TestCrashRecovery kills the monitor (SIGKILL: no store close, no group
// leave) several times while it consumes, restarts it on the same state
// dir, and checks that the final window equals the one of an uninterrupted
// run and that no event id reached the events topic twice.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash test re-executes the test binary; skipped in -short")
	}
	addr := startTestBroker(t, map[string]int{crashTopic: 1, "events": 1, "events-ref": 1})
	dir := t.TempDir()

	produced := make(chan error, 1)
	go func() {
		produced <- demo.ProducePayroll(context.Background(), demo.PayrollOptions{
			Brokers: []string{addr}, Topic: crashTopic, Rate: 3000, Count: crashRecords,
			CleanRecords: 3000, ErrorRate: 0.05, StopErrorsAfter: 9000, Seed: 11,
		})
	}()

	start := func() (kill func()) {
		return startChild(t, "TestHelperMonitorProcess", "ODWATCH_CRASH_HELPER=1", "ODWATCH_BROKER="+addr, "ODWATCH_STATE="+dir)
	}

	rng := rand.New(rand.NewSource(1))
	kills := 0
	last := int64(-1)
	for kills < 8 {
		kill := start()
		// Kill once the child made progress (committed further), at a
		// random point of its next batches.
		waitProgress(t, addr, "crash", crashTopic, last, kill)
		time.Sleep(time.Duration(rng.Intn(60)) * time.Millisecond)
		kill()
		kills++
		last = testkit.Committed(t, addr, "crash", crashTopic)
		t.Logf("kill %d at committed offset %d", kills, last)
		if last >= crashRecords {
			break
		}
	}
	if err := <-produced; err != nil {
		t.Fatalf("produce: %v", err)
	}
	// Last run: to the end of the topic, then killed as well.
	kill := start()
	testkit.Eventually(t, 60*time.Second, "the restarted monitor to consume the topic", func() bool {
		return testkit.Committed(t, addr, "crash", crashTopic) >= crashRecords
	})
	kill()
	if kills < 3 {
		t.Errorf("only %d kills happened mid-stream", kills)
	}

	// Uninterrupted reference run on a fresh state dir and its own group.
	refDir := t.TempDir()
	ref := startMonitor(t, crashConfig(addr, refDir, "crash-ref", "events-ref"))
	testkit.Eventually(t, 60*time.Second, "the reference run to consume the topic", func() bool {
		return testkit.Committed(t, addr, "crash-ref", crashTopic) >= crashRecords
	})
	if err := ref.stop(); err != nil {
		t.Fatalf("reference run: %v", err)
	}

	got, gotNext, gotSeq := windowKeys(t, dir, crashTopic, crashWindow)
	want, wantNext, wantSeq := windowKeys(t, refDir, crashTopic, crashWindow)
	if len(want) != crashWindow {
		t.Errorf("reference window holds %d records, want %d", len(want), crashWindow)
	}
	if !slices.Equal(got, want) {
		t.Errorf("window after crashes differs from the uninterrupted run: %d vs %d records; first %v vs %v",
			len(got), len(want), first(got), first(want))
	}
	if gotSeq != wantSeq || fmt.Sprint(gotNext) != fmt.Sprint(wantNext) {
		t.Errorf("position after crashes %v seq %d, uninterrupted %v seq %d", gotNext, gotSeq, wantNext, wantSeq)
	}

	ids, refIDs, onlyCrashed, onlyRef := crashEvents(t, addr)
	t.Logf("%d kills; window %d records; %d distinct events on the events topic, %d in the uninterrupted run; %d only after crashes, %d only uninterrupted",
		kills, len(got), ids, refIDs, onlyCrashed, onlyRef)
}

// crashEvents checks that no event id is on the events topic twice after
// the crashes, and counts the distinct ids there (ids) and on the
// uninterrupted run's topic (refIDs), and those only on one of them:
// evaluations skipped under load differ between runs, so the sets may
// differ; that is logged, not asserted.
func crashEvents(t *testing.T, addr string) (ids, refIDs, onlyCrashed, onlyRef int) {
	t.Helper()
	counts := eventIDCounts(t, addr, "events")
	if len(counts) == 0 {
		t.Fatal("the crashed runs emitted no events; the duplicate check is vacuous")
	}
	for id, n := range counts {
		if n > 1 {
			t.Errorf("event %s emitted %d times", id, n)
		}
	}
	ref := map[string]bool{}
	for _, msg := range readTopic(t, addr, "events-ref") {
		ref[headerValue(msg.Headers, "ce_id")] = true
	}
	for id := range counts {
		if !ref[id] {
			onlyCrashed++
		}
	}
	for id := range ref {
		if counts[id] == 0 {
			onlyRef++
		}
	}
	return len(counts), len(ref), onlyCrashed, onlyRef
}

// waitProgress waits until group committed topic past offset last: a
// helper process that makes no progress for 30 s is killed and fails the
// test.
func waitProgress(t *testing.T, addr, group, topic string, last int64, kill func()) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for testkit.Committed(t, addr, group, topic) <= last {
		if time.Now().After(deadline) {
			kill()
			t.Fatalf("helper made no progress past offset %d", last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return "<empty>"
	}
	return s[0] + " .. " + s[len(s)-1] + " (" + strconv.Itoa(len(s)) + ")"
}

// TestOutboxSkipsEventsOnTopic covers the crash window of the Kafka sink:
// an event written to the events topic whose delivery mark was lost is not
// written again on restart, while an event that never reached the topic
// is, and the other sinks get both.
func TestOutboxSkipsEventsOnTopic(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"in": 1, "events": 1})
	dir := t.TempDir()
	dep, err := discovery.ParseDependency("{}: a ~ b (asc)")
	if err != nil {
		t.Fatal(err)
	}
	ev := func(typ alerts.EventType, end uint64) alerts.Event {
		id := alerts.DependencyID(dep)
		return alerts.Event{
			ID: alerts.EventID("in", id, end, typ), Type: typ, Stream: "in", Time: time.Unix(1700000000, 0).UTC(),
			DependencyID: id, Dependency: dep, DependencyText: dep.String(), Epsilon: 0.01,
			Window: alerts.WindowInfo{Stream: "in", Topic: "in", StartOffsets: map[int32]int64{0: 0}, EndOffsets: map[int32]int64{0: 9}, Records: 10, EndSeq: end},
		}
	}
	sent, unsent := ev(alerts.EventDiscovered, 9), ev(alerts.EventViolated, 19)

	// The state a crash between the Kafka send of `sent` and its delivery
	// mark leaves: both events pending in the outbox, `sent` on the topic.
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tracker, _ := alerts.NewTracker(alerts.Config{Stream: "in", Epsilon: 0.01}).MarshalJSON()
	var outbox []state.OutboxEvent
	for _, e := range []alerts.Event{sent, unsent} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		outbox = append(outbox, state.OutboxEvent{ID: e.ID, Payload: b})
	}
	if err := st.SaveEvaluation(&state.Evaluation{Stream: "in", WindowEnd: 19, TrackerState: tracker, Events: outbox}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	w := alerts.NewKafkaWriter([]string{addr}, "events")
	if err := alerts.NewKafkaSink(w, "").Send(context.Background(), []alerts.Event{sent}); err != nil {
		t.Fatal(err)
	}
	w.Close()

	r := startMonitor(t, Config{
		Brokers: []string{addr}, Group: "outbox", EventsTopic: "events", StateDir: dir, SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{{Topic: "in", Window: 10, Epsilon: 0.01}},
	})
	testkit.Eventually(t, 30*time.Second, "outbox delivered to the extra sink", func() bool { return len(r.sink.snapshot()) == 2 })
	testkit.Eventually(t, 20*time.Second, "the unsent event on the events topic", func() bool {
		for _, msg := range readTopic(t, addr, "events") {
			if headerValue(msg.Headers, "ce_id") == unsent.ID {
				return true
			}
		}
		return false
	})
	ids := eventIDCounts(t, addr, "events")
	if ids[sent.ID] != 1 || ids[unsent.ID] != 1 || len(ids) != 2 {
		t.Errorf("events topic ids %v: want %s and %s once each", ids, sent.ID, unsent.ID)
	}
	testkit.Eventually(t, 10*time.Second, "outbox empty", func() bool {
		p, err := r.m.store.PendingEvents("in")
		return err == nil && len(p) == 0
	})
}

// eventIDCounts counts the events on topic by their ce_id header.
func eventIDCounts(t *testing.T, addr, topic string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, msg := range readTopic(t, addr, topic) {
		ids[headerValue(msg.Headers, "ce_id")]++
	}
	return ids
}
