package stream

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/segmentio/kafka-go"
)

// TestSettleHandsOverOnlySynced: the committer gets a batch's offsets only
// once every store commit of the batch is synced; what it commits never
// passes what is synced.
func TestSettleHandsOverOnlySynced(t *testing.T) {
	m := offlineMonitor(t, StreamConfig{Topic: "t", Window: 10, Epsilon: 0.01})
	fake := &testkit.FakeCommitter{}
	oc := fetch.NewCommitter(fake, testkit.Logger(t), time.Millisecond)
	defer oc.Close()
	b := newBatch(oc)
	var (
		mu     sync.Mutex
		synced int64 // offsets below are synced
	)
	fake.Check = func(offsets map[string]map[int]int64) {
		mu.Lock()
		defer mu.Unlock()
		if got := offsets["t"][0]; got > synced {
			t.Errorf("committed offset %d, only offsets below %d are synced", got, synced)
		}
	}
	syncTo := func(next int64, release <-chan struct{}) func() error {
		return func() error {
			<-release
			mu.Lock()
			synced = max(synced, next)
			mu.Unlock()
			return nil
		}
	}
	r1, r2a, r2b := make(chan struct{}), make(chan struct{}), make(chan struct{})
	b.unsynced = []unsyncedBatch{
		{waits: []func() error{syncTo(10, r1)}, commits: map[fetch.TopicPartition]int64{{Topic: "t"}: 10}},
		{waits: []func() error{func() error { <-r2a; return nil }, syncTo(20, r2b)}, commits: map[fetch.TopicPartition]int64{{Topic: "t"}: 20}},
	}
	settled := make(chan error, 1)
	go func() { settled <- m.settle(b, 1) }()
	close(r1)
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := oc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, _, _ := fake.State(); !testkit.CommitsEqual(calls, []map[string]map[int]int64{{"t": {0: 10}}}) {
		t.Fatalf("commits %v with the second batch unsynced, want only offset 10", calls)
	}
	go func() { settled <- m.settle(b, 0) }()
	close(r2a) // one of the batch's two syncs done: still nothing to hand over
	close(r2b)
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	if err := oc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, _, _ := fake.State(); !testkit.CommitsEqual(calls, []map[string]map[int]int64{{"t": {0: 10}}, {"t": {0: 20}}}) {
		t.Fatalf("commits %v, want 10 then 20", calls)
	}
}

// TestHungCommitKeepsConsuming: while an offset commit hangs (as on a
// broker connection left hung by an outage, until kafka-go's request
// Timeout closes it), records keep being consumed and evaluated; once the
// commit fails, the newest synced offsets are committed, and every commit
// stays within what the store holds.
func TestHungCommitKeepsConsuming(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"hc": 1})
	c := Config{
		Brokers: []string{addr}, Group: "hc", StateDir: t.TempDir(),
		Streams: []StreamConfig{{Topic: "hc", Window: 100, Epsilon: 0.01}},
	}
	fake := &testkit.FakeCommitter{}
	r := startMonitorWith(t, c, func(m *Monitor) {
		m.testHooks().commitVia = func(gen *kafka.Generation) fetch.OffsetCommitter {
			fake.Mu.Lock()
			fake.Next = gen
			fake.Mu.Unlock()
			return fake
		}
	})
	fake.Mu.Lock()
	fake.Check = func(offsets map[string]map[int]int64) {
		next, _, err := r.m.store.Position("hc")
		if err != nil {
			t.Error(err)
			return
		}
		if got := offsets["hc"][0]; got > next[0] {
			t.Errorf("committed offset %d past the store's position %d", got, next[0])
		}
	}
	fake.Mu.Unlock()
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(n int, seed int64) {
		t.Helper()
		if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "hc", Count: n, Seed: seed}); err != nil {
			t.Fatal(err)
		}
	}
	evaluated := func(n uint64) func() bool {
		return func() bool { return r.m.streams[0].evaluated.Load() == n }
	}
	produce(200, 1)
	testkit.Eventually(t, 30*time.Second, "the first records evaluated and committed", func() bool {
		return evaluated(200)() && testkit.Committed(t, addr, "hc", "hc") == 200
	})

	hold := make(chan struct{})
	fake.SetHold(hold)
	produce(200, 2)
	testkit.Eventually(t, 30*time.Second, "a commit hanging", func() bool { _, n, _ := fake.State(); return n == 1 })
	calls, _, _ := fake.State()
	hung := len(calls)
	produce(300, 3)
	testkit.Eventually(t, 30*time.Second, "the records evaluated while the commit hangs", evaluated(700))
	if calls, n, _ := fake.State(); n != 1 || len(calls) != hung {
		t.Fatalf("%d commits in flight, %d started, want the one hung (%d started)", n, len(calls), hung)
	}
	if got := testkit.Committed(t, addr, "hc", "hc"); got != 200 {
		t.Errorf("committed %d while the commit hangs, want 200", got)
	}
	fake.Mu.Lock()
	fake.FailNext = 1 // the hung connection is closed
	fake.Hold = nil
	fake.Mu.Unlock()
	close(hold)
	testkit.Eventually(t, 30*time.Second, "the newest offsets committed", func() bool { return testkit.Committed(t, addr, "hc", "hc") == 700 })
	if _, _, maxInFlight := fake.State(); maxInFlight != 1 {
		t.Errorf("%d commits in flight at once, want 1", maxInFlight)
	}
}
