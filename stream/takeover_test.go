package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/fetch"
	"github.com/odwatch/odwatch/stream/internal/takeover"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startFaultBroker starts an in-process broker like startTestBroker and
// returns the cluster too, for faults.
func startFaultBroker(t *testing.T, topics map[string]int, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append(demo.BrokerOptions(topics), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// byTime matches a ListOffsets request by timestamp (intervalStarts'),
// not for the first or last offsets.
func byTime(r kmsg.Request) bool {
	lo, ok := r.(*kmsg.ListOffsetsRequest)
	if !ok {
		return false
	}
	for _, tp := range lo.Topics {
		for _, p := range tp.Partitions {
			if p.Timestamp >= 0 {
				return true
			}
		}
	}
	return false
}

// TestTakeOverRetriesTransientErrors: a takeover whose read-back meets a
// broker error that goes away (a topic or partition the broker does not
// know yet, a leader being elected or moved) retries it and rebuilds the
// whole window; a permanent one (authorization) ends the takeover with an
// error naming the read-back and the request. 300 records 10 ms apart on
// three partitions, all consumed, an interval of 1 s: 101 records.
func TestTakeOverRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	const topic = "tk"
	for _, tc := range []struct {
		name      string
		fault     kfake.Fault
		permanent bool
	}{
		{"offsets: unknown topic or partition", kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Partitions: []int32{1}, Err: kerr.UnknownTopicOrPartition}, false},
		{"offsets by time: leader not available", kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Err: kerr.LeaderNotAvailable, When: byTime}, false},
		{"fetch: not leader", kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Partitions: []int32{2}, Err: kerr.NotLeaderForPartition}, false},
		{"offsets: not authorized", kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Err: kerr.TopicAuthorizationFailed, Count: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, addr := startFaultBroker(t, map[string]int{topic: 3})
			produceTimed(t, addr, topic, 0, 300, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 10*time.Millisecond)
			m, client := newIntervalMonitor(t, addr, topic)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h := c.Fault(tc.fault)
			err := m.takeOver(ctx, client, assignment{topic: {0: 100, 1: 100, 2: 100}})
			h.Remove()
			if tc.permanent {
				if !errors.Is(err, kafka.TopicAuthorizationFailed) {
					t.Fatalf("takeOver: %v, want %v", err, kafka.TopicAuthorizationFailed)
				}
				t.Logf("takeOver: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("takeOver: %v", err)
			}
			if h.Hits() != 1 {
				t.Errorf("the fault answered %d requests, want 1", h.Hits())
			}
			if n := m.streams[0].win.Len(); n != 101 {
				t.Errorf("window after the takeover: %d records, want the 101 of the last second", n)
			}
		})
	}
}

// TestScanTopicSeesNewBroker: kafkaread.Scan (how a takeover reads the state
// topic) does not read a topic as absent because kafka-go's shared
// transport cached the metadata of an earlier broker at the same address,
// as happens when a test's broker gets the port of an earlier test's.
func TestScanTopicSeesNewBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, addr := startFaultBroker(t, map[string]int{"before": 1})
	// The shared transport's pool for addr caches the old broker's
	// topics, "before" only.
	if _, err := (&kafka.Client{Addr: kafka.TCP(addr)}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"before"}}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	_, addr2 := startFaultBroker(t, map[string]int{"after": 1}, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, addr)
	}))
	if addr2 != addr {
		t.Fatalf("new broker at %s, want %s", addr2, addr)
	}
	produceTimed(t, addr, "after", 0, 3, time.Now(), time.Millisecond)
	n := 0
	if err := kafkaread.Scan(ctx, []string{addr}, nil, "after", 0, func(int, *kafka.Record) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("kafkaread.Scan read %d records of the new broker's topic, want 3", n)
	}
}

// TestTakeOverCountsFromStateAheadOfGroup: a takeover numbers the records
// it reads back as one uninterrupted member did, wherever the state
// topic's last record stands against the group's committed offsets. An
// owner publishes a check's state right after saving it, while the offsets
// of the batch that check ended reach the group up to
// offsetCommitInterval later (a member catching up closes its batches at
// each check, so they are one check's records behind): a kill -9 in
// between leaves a state record ahead of the committed offsets, and the
// member taking over must count the decodable records between the two
// down from the record's count, not number the window as if the group had
// consumed them (a shift of one every in TestSoakKills). Two partitions of
// 500 records, record j at partition j%2 offset j/2, records 620, 621 and
// 700 undecodable; a state record's count is the decodable records below
// its positions.
func TestTakeOverCountsFromStateAheadOfGroup(t *testing.T) {
	t.Parallel()
	const topic, stateTopic = "ta", "ta-state"
	addr := startTestBroker(t, map[string]int{topic: 2, stateTopic: 1})
	bad := map[int]bool{620: true, 621: true, 700: true}
	g := demo.NewPayrollGen(1)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for j := range 1000 {
		v := slices.Clone(g.Next(false))
		if bad[j] {
			v = []byte("not json")
		}
		msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(j % 2)), Value: v, Time: start.Add(time.Duration(j) * 10 * time.Millisecond)})
	}
	byKey := kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { p, _ := strconv.Atoi(string(m.Key)); return p })
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: byKey, BatchSize: 1000, BatchTimeout: 10 * time.Millisecond,
		RequiredAcks: kafka.RequireAll, Transport: testTransport(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// count is the decodable records below the offsets of each partition.
	count := func(offsets map[int32]int64) uint64 {
		n := uint64(0)
		for j := range 1000 {
			if !bad[j] && int64(j/2) < offsets[int32(j%2)] {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		name             string
		committed, state map[int32]int64
		// local is the member's own last saved check (+1): a tracker
		// newer than the state topic's, whose publish was lost.
		local uint64
	}{
		{"state ahead of the group", map[int32]int64{0: 250, 1: 250}, map[int32]int64{0: 375, 1: 375}, 0},
		{"state behind the group", map[int32]int64{0: 375, 1: 375}, map[int32]int64{0: 250, 1: 250}, 0},
		{"state at the group's offsets", map[int32]int64{0: 375, 1: 375}, map[int32]int64{0: 375, 1: 375}, 0},
		{"state ahead in one partition, behind in the other", map[int32]int64{0: 375, 1: 250}, map[int32]int64{0: 250, 1: 375}, 0},
		{"local tracker ahead of the group", map[int32]int64{0: 400, 1: 250}, map[int32]int64{0: 250, 1: 250}, count(map[int32]int64{0: 375, 1: 375})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := fmt.Sprintf("ta-%d", time.Now().UnixNano())
			m, err := NewMonitor(Config{
				Brokers: []string{addr}, Group: group, StateDir: t.TempDir(), StateTopic: stateTopic,
				Streams: []StreamConfig{{Name: group, Topic: topic, Window: 300, Every: 100, Epsilon: 0.01}},
			}, Options{Logger: testkit.Logger(t), Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close() })
			s := m.streams[0]
			s.evaluated.Store(tc.local)
			s.eval.publishState(ctx, count(tc.state)-1, tc.state, []byte(`{}`))
			client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: testTransport(t)}
			if err := m.takeOver(ctx, client, assignment{topic: tc.committed}); err != nil {
				t.Fatal(err)
			}
			want := count(tc.committed)
			snap := s.win.Snapshot()
			last := snap.Meta(snap.Len() - 1).Seq
			if s.seq != want || last != want-1 || snap.Len() != 300 {
				t.Errorf("after the takeover: next seq %d, window of %d records ending at seq %d; want next %d, 300 records ending at %d",
					s.seq, snap.Len(), last, want, want-1)
			}
		})
	}
}

// TestTakeoverAfterStateAheadOfGroup runs the interleaving of
// TestTakeOverCountsFromStateAheadOfGroup in the pipeline: the owner's
// offset commits fail (as if it were killed before they went out) while
// it checks and publishes one more window end, then it stops; a fresh
// member takes the topic over from the group's older offsets and the
// newer state record. The two members together evaluate the same window
// ends with the same events as one uninterrupted member, and end with its
// window and sequence numbers.
func TestTakeoverAfterStateAheadOfGroup(t *testing.T) {
	t.Parallel()
	const topic = "tb"
	addr := startTestBroker(t, map[string]int{topic: 2, "tb-state": 1, "tb-ref-state": 1})
	const window, every = 300, 100
	cfg := func(group string) Config {
		return Config{
			Brokers: []string{addr}, Group: group, StateDir: t.TempDir(), StateTopic: group + "-state",
			// One cadence: a takeover does not carry a pending
			// discovery over.
			Streams: []StreamConfig{{Topic: topic, Window: window, Every: every, DiscoverEvery: every, Epsilon: 0.02}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := startMonitor(t, cfg("tb-ref"))
	fake := &testkit.FakeCommitter{}
	a := startMonitorWith(t, cfg("tb"), func(m *Monitor) {
		m.testHooks().commitVia = func(gen *kafka.Generation) fetch.OffsetCommitter {
			fake.Mu.Lock()
			fake.Next = gen
			fake.Mu.Unlock()
			return fake
		}
	})
	testkit.Eventually(t, 30*time.Second, "members ready", func() bool { return ref.m.Ready() && a.m.Ready() })
	evaluated := func(r *running) uint64 { return r.m.streams[0].evaluated.Load() }
	total := 0
	// produce adds n records (10% dirty after the first window) and waits
	// until the reference and the owner evaluated them and done holds:
	// one window end per call, none coalesced.
	produce := func(n int, owner *running, done func() bool) {
		t.Helper()
		producePayrolls(ctx, t, addr, []string{topic}, n, total, total > 0)
		total += n
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%d records evaluated", total), func() bool {
			return evaluated(ref) == uint64(total) && evaluated(owner) >= uint64(total) && done()
		})
	}
	offsetsAt := func(n int) func() bool {
		return func() bool { return testkit.CommittedTotal(t, addr, "tb", topic, 2) == int64(n) }
	}
	produce(window, a, offsetsAt(window))
	produce(every, a, offsetsAt(window+every))
	fake.Mu.Lock()
	fake.FailNext = math.MaxInt
	fake.Mu.Unlock()
	produce(every, a, func() bool {
		rec, err := takeover.ReadStateRecord(ctx, []string{addr}, nil, "tb-state", topic)
		return err == nil && rec != nil && rec.WindowEndSeq == uint64(total-1)
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if n := testkit.CommittedTotal(t, addr, "tb", topic, 2); n != int64(window+every) {
		t.Fatalf("the group's offsets stand at %d records, want %d (behind the owner's last check)", n, window+every)
	}
	b := startMonitor(t, cfg("tb"))
	offsetsAt = func(n int) func() bool {
		return func() bool { return b.m.Ready() && testkit.CommittedTotal(t, addr, "tb", topic, 2) == int64(n) }
	}
	produce(every, b, offsetsAt(total+every))
	produce(every, b, offsetsAt(total+every))
	events := membersMatch(t, ref, a, b)
	for _, r := range []*running{b, ref} {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	sameWindow(t, b.m.cfg.StateDir, ref.m.cfg.StateDir, topic, window, "window after the takeover")
	t.Logf("%d events, %d records", events, total)
}

// TestRestartAfterDropTakesOver: a member that lost a topic in a rebalance
// (its window dropped) and restarts on its state dir takes the topic over
// when it gets it back, also while the group's offsets are still the ones
// it left: it does not go on from its own old positions with an empty
// window (which missed the evaluations until the window refilled). The
// member evaluates the window ends of one uninterrupted member, with its
// events, and ends with its window.
func TestRestartAfterDropTakesOver(t *testing.T) {
	t.Parallel()
	topics := []string{"da", "db"}
	addr := startTestBroker(t, map[string]int{"da": 1, "db": 1, "dt-state": 1, "dt-ref-state": 1})
	const window, every = 100, 50
	cfg := func(group, dir string) Config {
		c := Config{Brokers: []string{addr}, Group: group, StateDir: dir, StateTopic: group + "-state"}
		for _, tp := range topics {
			c.Streams = append(c.Streams, StreamConfig{Topic: tp, Window: window, Every: every, DiscoverEvery: every, Epsilon: 0.01})
		}
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	total := 0
	// produce adds n records to each topic and waits until both groups
	// consumed them (and the reference evaluated them).
	produce := func(n int, dirty bool) {
		t.Helper()
		producePayrolls(ctx, t, addr, topics, n, total, dirty)
		total += n
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%d records consumed", total), func() bool {
			return testkit.Committed(t, addr, "dt", "da") == int64(total) && testkit.Committed(t, addr, "dt", "db") == int64(total)
		})
	}
	ref := startMonitor(t, cfg("dt-ref", t.TempDir()))
	dirA := t.TempDir()
	a := startMonitor(t, cfg("dt", dirA))
	testkit.Eventually(t, 30*time.Second, "the first member owns both topics", func() bool { return len(a.m.balancer.Topics()) == 2 && a.m.Ready() })
	// A window at a time, each evaluated by both before the next comes,
	// so that neither coalesces evaluations (which would change which
	// windows discover what, however loaded the machine is).
	for range 2 * window / every {
		produce(every, false)
		if total < window {
			continue // the first window is not full yet
		}
		testkit.Eventually(t, 60*time.Second, "both evaluated every record", func() bool {
			for _, r := range []*running{ref, a} {
				for _, s := range r.m.streams {
					if s.evaluated.Load() != uint64(total) {
						return false
					}
				}
			}
			return true
		})
	}
	b := startMonitor(t, cfg("dt", t.TempDir()))
	testkit.Eventually(t, 30*time.Second, "1 + 1", func() bool {
		return len(a.m.balancer.Topics()) == 1 && len(b.m.balancer.Topics()) == 1 && a.m.Ready() && b.m.Ready()
	})
	t.Logf("%v moved to the second member", b.m.balancer.Topics())
	// Both leave, no record meanwhile: the group's offsets of the moved
	// topic are the first member's.
	for _, r := range []*running{a, b} {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	a2 := startMonitor(t, cfg("dt", dirA))
	testkit.Eventually(t, 30*time.Second, "the first member, restarted, owns both topics", func() bool { return len(a2.m.balancer.Topics()) == 2 && a2.m.Ready() })
	produce(every, true)
	testkit.Eventually(t, 60*time.Second, "the reference evaluated every record", func() bool {
		return ref.m.streams[0].evaluated.Load() == uint64(total) && ref.m.streams[1].evaluated.Load() == uint64(total)
	})
	membersMatch(t, ref, a, b, a2)
	for _, r := range []*running{a2, ref} {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range topics {
		sameWindow(t, dirA, ref.m.cfg.StateDir, tp, window, "the restarted member's window")
	}
}

// TestTakeoverWithoutCommittedOffsets: a member that holds no position for
// a topic takes it over from the group also when the group has committed
// no offset for it (the previous owners' commits never reached the group:
// killed within offsetCommitInterval of their first records, or failing).
// Its count then starts from the partitions' first offsets, less what the
// state topic's record counted past them, not where its own count stood
// when it last dropped the topic's window; and the tracker comes from the
// state topic, so no window end is evaluated twice. Here every member's
// offset commits fail; the first member loses one topic in a rebalance and
// gets it back.
func TestTakeoverWithoutCommittedOffsets(t *testing.T) {
	t.Parallel()
	topics := []string{"ca", "cb"}
	addr := startTestBroker(t, map[string]int{"ca": 1, "cb": 1, "ct-state": 1, "ct-ref-state": 1})
	const window, every = 100, 50
	cfg := func(group string) Config {
		c := Config{Brokers: []string{addr}, Group: group, StateDir: t.TempDir(), StateTopic: group + "-state"}
		for _, tp := range topics {
			c.Streams = append(c.Streams, StreamConfig{Topic: tp, Window: window, Every: every, DiscoverEvery: every, Epsilon: 0.01})
		}
		return c
	}
	failing := func(m *Monitor) {
		m.testHooks().commitVia = func(*kafka.Generation) fetch.OffsetCommitter { return &testkit.FakeCommitter{FailNext: math.MaxInt} }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := startMonitor(t, cfg("ct-ref"))
	total := 0
	// produce adds n records to each topic and waits until the reference
	// and the owners evaluated them, and the owners delivered the events:
	// evaluated counts an evaluation once it is saved, before its events
	// leave the outbox, and a member stopped in between keeps them there
	// (its successor takes the tracker from the state topic and does not
	// raise them again).
	produce := func(n int, owners ...*running) {
		t.Helper()
		producePayrolls(ctx, t, addr, topics, n, total, total > 0)
		total += n
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%d records evaluated, their events delivered", total), func() bool {
			n := map[string]uint64{}
			for _, r := range owners {
				for _, s := range r.m.streams {
					if !slices.Contains(r.m.balancer.Topics(), s.cfg.Topic) {
						continue
					}
					n[s.cfg.Topic] = s.evaluated.Load()
					if p, err := r.m.store.PendingEvents(s.name); err != nil || len(p) > 0 {
						return false
					}
				}
			}
			return ref.m.streams[0].evaluated.Load() == uint64(total) && ref.m.streams[1].evaluated.Load() == uint64(total) &&
				n["ca"] >= uint64(total) && n["cb"] >= uint64(total)
		})
	}
	a := startMonitorWith(t, cfg("ct"), failing)
	testkit.Eventually(t, 30*time.Second, "the first member owns both topics", func() bool { return len(a.m.balancer.Topics()) == 2 && a.m.Ready() })
	produce(window, a)
	b := startMonitorWith(t, cfg("ct"), failing)
	testkit.Eventually(t, 30*time.Second, "1 + 1", func() bool {
		return len(a.m.balancer.Topics()) == 1 && len(b.m.balancer.Topics()) == 1 && a.m.Ready() && b.m.Ready()
	})
	t.Logf("%v moved to the second member", b.m.balancer.Topics())
	produce(every, a, b)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the first member owns both topics again", func() bool { return len(a.m.balancer.Topics()) == 2 && a.m.Ready() })
	produce(every, a)
	membersMatch(t, ref, a, b)
	for _, r := range []*running{a, ref} {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range topics {
		sameWindow(t, a.m.cfg.StateDir, ref.m.cfg.StateDir, tp, window, "the first member's window")
	}
}
