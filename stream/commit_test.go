package stream

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/segmentio/kafka-go"
)

// fakeCommitter records the commits it is asked for. While hold is set a
// commit waits for it to close; the next failNext commits fail (after
// hold); next, when set, takes the commits that do not fail.
type fakeCommitter struct {
	next offsetCommitter

	mu          sync.Mutex
	calls       []map[string]map[int]int64
	inFlight    int
	maxInFlight int
	hold        chan struct{}
	failNext    int
	check       func(map[string]map[int]int64) // called at the start of each commit
}

func (f *fakeCommitter) CommitOffsets(offsets map[string]map[int]int64) error {
	f.mu.Lock()
	f.calls = append(f.calls, offsets)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	hold, check := f.hold, f.check
	f.mu.Unlock()
	if check != nil {
		check(offsets)
	}
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	if f.failNext > 0 {
		f.failNext--
		return errors.New("commit offsets: use of closed network connection")
	}
	if f.next != nil {
		return f.next.CommitOffsets(offsets)
	}
	return nil
}

func (f *fakeCommitter) state() (calls []map[string]map[int]int64, inFlight, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.inFlight, f.maxInFlight
}

func (f *fakeCommitter) setHold(hold chan struct{}) {
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
}

func offsetsOf(topic string, next ...int64) map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	for p, o := range next {
		out[topicPartition{topic, p}] = o
	}
	return out
}

// startHeldCommit starts a committer on fake and hands it offsets t/0:10,
// t/1:20, whose commit it returns in flight, held until hold is closed.
func startHeldCommit(t *testing.T, fake *fakeCommitter) (*committer, chan struct{}) {
	t.Helper()
	hold := make(chan struct{})
	fake.setHold(hold)
	oc := newCommitter(fake, testLogger(t), time.Millisecond)
	oc.offer(offsetsOf("t", 10, 20))
	testkit.Eventually(t, 10*time.Second, "the first commit in flight", func() bool { _, n, _ := fake.state(); return n == 1 })
	return oc, hold
}

// TestCommitterLatestWins: while a commit hangs, offer returns at once and
// the offsets handed over meanwhile wait, the newest per partition winning;
// one commit is in flight at a time.
func TestCommitterLatestWins(t *testing.T) {
	fake := &fakeCommitter{}
	oc, hold := startHeldCommit(t, fake)
	defer oc.Close()
	oc.offer(offsetsOf("t", 11))
	oc.offer(offsetsOf("t", 12))
	fake.setHold(nil)
	close(hold)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := oc.flush(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _, maxInFlight := fake.state()
	want := []map[string]map[int]int64{{"t": {0: 10, 1: 20}}, {"t": {0: 12}}}
	if !commitsEqual(calls, want) {
		t.Errorf("commits %v, want %v", calls, want)
	}
	if maxInFlight != 1 {
		t.Errorf("%d commits in flight at once, want 1", maxInFlight)
	}
	err := oc.flush(ctx)
	if calls, _, _ := fake.state(); err != nil || len(calls) != 2 {
		t.Errorf("flush with nothing new: %v, %d commits, want nil and no new commit", err, len(calls))
	}
	oc.Close()
	oc.Close()
	if err := oc.flush(ctx); !errors.Is(err, errCommitterClosed) {
		t.Errorf("flush after Close: %v, want errCommitterClosed", err)
	}
}

// TestCommitterRetriesWithNewest: a failed commit's offsets are committed
// again, with newer ones where they came, and flush returns the error of
// the commit it waited for.
func TestCommitterRetriesWithNewest(t *testing.T) {
	fake := &fakeCommitter{failNext: 1}
	oc, hold := startHeldCommit(t, fake)
	defer oc.Close()
	oc.offer(offsetsOf("t", 11))
	fake.setHold(nil)
	close(hold) // the first commit fails
	testkit.Eventually(t, 10*time.Second, "the retry", func() bool { c, n, _ := fake.state(); return len(c) == 2 && n == 0 })
	calls, _, _ := fake.state()
	want := []map[string]map[int]int64{{"t": {0: 10, 1: 20}}, {"t": {0: 11, 1: 20}}}
	if !commitsEqual(calls, want) {
		t.Errorf("commits %v, want %v", calls, want)
	}

}

// TestCommitterFlush: offsets wait for the interval, unless flushed; flush
// returns the error of the commit it waited for, and the next flush
// commits the failed offsets again.
func TestCommitterFlush(t *testing.T) {
	fake := &fakeCommitter{}
	oc := newCommitter(fake, testLogger(t), time.Hour)
	defer oc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	oc.offer(offsetsOf("t", 10)) // the first commit is due at once
	testkit.Eventually(t, 10*time.Second, "the first commit", func() bool { c, n, _ := fake.state(); return len(c) == 1 && n == 0 })
	fake.mu.Lock()
	fake.failNext = 1
	fake.mu.Unlock()
	oc.offer(offsetsOf("t", 12)) // waits for the interval
	if err := oc.flush(ctx); err == nil {
		t.Error("flush returned nil, want the failed commit's error")
	}
	if err := oc.flush(ctx); err != nil {
		t.Errorf("second flush: %v, want the retry to succeed", err)
	}
	calls, _, _ := fake.state()
	want := []map[string]map[int]int64{{"t": {0: 10}}, {"t": {0: 12}}, {"t": {0: 12}}}
	if !commitsEqual(calls, want) {
		t.Errorf("commits %v, want %v", calls, want)
	}
}

// TestSettleHandsOverOnlySynced: the committer gets a batch's offsets only
// once every store commit of the batch is synced; what it commits never
// passes what is synced.
func TestSettleHandsOverOnlySynced(t *testing.T) {
	m := offlineMonitor(t, StreamConfig{Topic: "t", Window: 10, Epsilon: 0.01})
	fake := &fakeCommitter{}
	oc := newCommitter(fake, testLogger(t), time.Millisecond)
	defer oc.Close()
	b := newBatch(oc)
	var (
		mu     sync.Mutex
		synced int64 // offsets below are synced
	)
	fake.check = func(offsets map[string]map[int]int64) {
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
		{waits: []func() error{syncTo(10, r1)}, commits: offsetsOf("t", 10)},
		{waits: []func() error{func() error { <-r2a; return nil }, syncTo(20, r2b)}, commits: offsetsOf("t", 20)},
	}
	settled := make(chan error, 1)
	go func() { settled <- m.settle(b, 1) }()
	close(r1)
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := oc.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, _, _ := fake.state(); !commitsEqual(calls, []map[string]map[int]int64{{"t": {0: 10}}}) {
		t.Fatalf("commits %v with the second batch unsynced, want only offset 10", calls)
	}
	go func() { settled <- m.settle(b, 0) }()
	close(r2a) // one of the batch's two syncs done: still nothing to hand over
	close(r2b)
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	if err := oc.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, _, _ := fake.state(); !commitsEqual(calls, []map[string]map[int]int64{{"t": {0: 10}}, {"t": {0: 20}}}) {
		t.Fatalf("commits %v, want 10 then 20", calls)
	}
}

func commitsEqual(a, b []map[string]map[int]int64) bool {
	return slices.EqualFunc(a, b, func(x, y map[string]map[int]int64) bool { return maps.EqualFunc(x, y, maps.Equal) })
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
	fake := &fakeCommitter{}
	r := startMonitorWith(t, c, func(m *Monitor) {
		m.testHooks().commitVia = func(gen *kafka.Generation) offsetCommitter {
			fake.mu.Lock()
			fake.next = gen
			fake.mu.Unlock()
			return fake
		}
	})
	fake.mu.Lock()
	fake.check = func(offsets map[string]map[int]int64) {
		next, _, err := r.m.store.Position("hc")
		if err != nil {
			t.Error(err)
			return
		}
		if got := offsets["hc"][0]; got > next[0] {
			t.Errorf("committed offset %d past the store's position %d", got, next[0])
		}
	}
	fake.mu.Unlock()
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
	fake.setHold(hold)
	produce(200, 2)
	testkit.Eventually(t, 30*time.Second, "a commit hanging", func() bool { _, n, _ := fake.state(); return n == 1 })
	calls, _, _ := fake.state()
	hung := len(calls)
	produce(300, 3)
	testkit.Eventually(t, 30*time.Second, "the records evaluated while the commit hangs", evaluated(700))
	if calls, n, _ := fake.state(); n != 1 || len(calls) != hung {
		t.Fatalf("%d commits in flight, %d started, want the one hung (%d started)", n, len(calls), hung)
	}
	if got := testkit.Committed(t, addr, "hc", "hc"); got != 200 {
		t.Errorf("committed %d while the commit hangs, want 200", got)
	}
	fake.mu.Lock()
	fake.failNext = 1 // the hung connection is closed
	fake.hold = nil
	fake.mu.Unlock()
	close(hold)
	testkit.Eventually(t, 30*time.Second, "the newest offsets committed", func() bool { return testkit.Committed(t, addr, "hc", "hc") == 700 })
	if _, _, maxInFlight := fake.state(); maxInFlight != 1 {
		t.Errorf("%d commits in flight at once, want 1", maxInFlight)
	}
}
