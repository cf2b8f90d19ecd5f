package stream

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// ownedBy maps each member to the topics it owns now.
func ownedBy(rs ...*running) [][]string {
	out := make([][]string, len(rs))
	for i, r := range rs {
		out[i] = r.m.balancer.Topics()
	}
	return out
}

// counts are the numbers of topics the members own, sorted.
func counts(owned [][]string) []int {
	var n []int
	for _, ts := range owned {
		n = append(n, len(ts))
	}
	slices.Sort(n)
	return n
}

// waitCounts waits until the members own want topics (sorted counts) and
// the topics are all owned once.
func waitCounts(t *testing.T, what string, want []int, topics []string, rs ...*running) [][]string {
	t.Helper()
	var owned [][]string
	testkit.Eventually(t, 60*time.Second, what, func() bool {
		owned = ownedBy(rs...)
		all := slices.Concat(owned...)
		slices.Sort(all)
		return slices.Equal(counts(owned), want) && slices.Equal(all, topics) && allReady(rs...)
	})
	return owned
}

func allReady(rs ...*running) bool {
	for _, r := range rs {
		if !r.m.Ready() {
			return false
		}
	}
	return true
}

// TestScaleOutSpreadsTopics runs members of one group over three topics:
// one member owns all three; a second takes one (2 + 1) and the first drops
// that topic's window (memory and store) and evaluates it no more; a third
// takes one more (1 + 1 + 1); when a member stops, its topic goes to
// another (2 + 1), which rebuilds the window from Kafka. With the state
// topic, every owner evaluates at the window ends of one uninterrupted
// member.
func TestScaleOutSpreadsTopics(t *testing.T) {
	t.Parallel()
	topics := []string{"sa", "sb", "sc"}
	addr := startTestBroker(t, map[string]int{"sa": 2, "sb": 1, "sc": 3, "spread-state": 1})
	cfg := func() Config {
		c := Config{Brokers: []string{addr}, Group: "spread", StateDir: t.TempDir(), StateTopic: "spread-state"}
		for _, tp := range topics {
			c.Streams = append(c.Streams, StreamConfig{Topic: tp, Window: 300, Epsilon: 0.01})
		}
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	produce := func(seed int) {
		t.Helper()
		producePayrolls(ctx, t, addr, topics, 300, seed, false)
	}
	evaluated := (*running).evaluatedOf
	windowOf := func(r *running, topic string) float64 { return r.windowOf(t, topic) }

	first := startMonitor(t, cfg())
	waitCounts(t, "first member owns all", []int{3}, topics, first)
	produce(1)
	testkit.Eventually(t, 60*time.Second, "first member evaluated every topic", func() bool {
		return evaluated(first, "sa") == 300 && evaluated(first, "sb") == 300 && evaluated(first, "sc") == 300
	})

	second := startMonitor(t, cfg())
	owned := waitCounts(t, "2 + 1", []int{1, 2}, topics, first, second)
	if len(owned[1]) != 1 {
		t.Fatalf("the newcomer owns %v, the first member %v: want the newcomer to take one topic", owned[1], owned[0])
	}
	moved := owned[1][0]
	if got := windowOf(first, moved); got != 0 {
		t.Errorf("first member's window of %s after losing it: %v records, want 0", moved, got)
	}
	if n, err := first.m.store.WindowCount(moved); err != nil || n != 0 {
		t.Errorf("first member's store holds %d window records of %s (%v) after losing it, want 0", n, moved, err)
	}
	// The newcomer took the window over from Kafka: full at once.
	testkit.Eventually(t, 30*time.Second, "newcomer's window rebuilt", func() bool { return windowOf(second, moved) == 300 })
	evalsBefore := metricValue(t, first.reg, "odwatch_evaluations_total", map[string]string{"stream": moved})
	produce(10)
	testkit.Eventually(t, 60*time.Second, "both members evaluated the new records", func() bool {
		for _, tp := range topics {
			owner := first
			if tp == moved {
				owner = second
			}
			if evaluated(owner, tp) != 600 {
				return false
			}
		}
		return true
	})
	if got := metricValue(t, first.reg, "odwatch_evaluations_total", map[string]string{"stream": moved}); got != evalsBefore {
		t.Errorf("first member evaluated %s %v times after losing it", moved, got-evalsBefore)
	}

	third := startMonitor(t, cfg())
	owned = waitCounts(t, "1 + 1 + 1", []int{1, 1, 1}, topics, first, second, third)
	if !slices.Equal(owned[1], []string{moved}) {
		t.Errorf("second member's topics moved: %v, want %v (sticky)", owned[1], moved)
	}

	// A clean stop leaves the group: the third member's topic moves.
	gone := owned[2][0]
	if err := third.stop(); err != nil {
		t.Fatal(err)
	}
	owned = waitCounts(t, "2 + 1 after a member left", []int{1, 2}, topics, first, second)
	heir := first
	if slices.Contains(owned[1], gone) {
		heir = second
	}
	testkit.Eventually(t, 30*time.Second, "heir's window of "+gone+" rebuilt", func() bool { return windowOf(heir, gone) == 300 })
	produce(20)
	testkit.Eventually(t, 60*time.Second, "heir evaluated "+gone, func() bool { return evaluated(heir, gone) == 900 })
	t.Logf("owners: %s", strings.Join([]string{fmt.Sprint(owned[0]), fmt.Sprint(owned[1])}, " / "))
}

// evaluatedOf is the window end + 1 of the last saved evaluation of the
// member's stream of topic (0 when it has none).
func (r *running) evaluatedOf(topic string) uint64 {
	for _, s := range r.m.streams {
		if s.cfg.Topic == topic {
			return s.evaluated.Load()
		}
	}
	return 0
}

// windowOf is the member's window records of the stream of topic.
func (r *running) windowOf(t testing.TB, topic string) float64 {
	return metricValue(t, r.reg, "odwatch_window_records", map[string]string{"stream": topic})
}

// eventKeys are the events of members as "type dependency @window end",
// sorted.
func eventKeys(rs ...*running) []string {
	var keys []string
	for _, r := range rs {
		for _, e := range r.sink.snapshot() {
			keys = append(keys, fmt.Sprintf("%s %s @%d", e.Type, e.Dependency, e.Window.EndSeq))
		}
	}
	slices.Sort(keys)
	return keys
}

// TestTakeoverMatchesSingleMember hands a three-partition topic over from
// one member to another (the first stops and leaves the group) in the middle
// of a sliding window, and checks that the two together evaluated the same
// windows with the same events as one uninterrupted member on the same
// records, and end with the same window (the takeover rebuilt it whole, in
// the window's order, and continued the sequence numbers).
func TestTakeoverMatchesSingleMember(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"eq": 3, "eq-state": 1, "eq-ref-state": 1})
	const window, every = 600, 300
	cfg := func(group string) Config {
		return Config{
			Brokers: []string{addr}, Group: group, StateDir: t.TempDir(), StateTopic: group + "-state",
			// Discovery at every evaluation: with two cadences a
			// discovery pending at the takeover is not carried over.
			Streams: []StreamConfig{{Topic: "eq", Window: window, Every: every, DiscoverEvery: every, Epsilon: 0.02}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := startMonitor(t, cfg("eq-ref"))
	a := startMonitor(t, cfg("eq"))
	testkit.Eventually(t, 30*time.Second, "members ready", func() bool { return ref.m.Ready() && a.m.Ready() })
	total := 0
	// produce adds n records (clean, or 10% dirty) and waits until owner
	// and reference evaluated them all, so that every window end sees the
	// same records in both groups.
	produce := func(n int, dirty bool, owner *running) {
		t.Helper()
		producePayrolls(ctx, t, addr, []string{"eq"}, n, total, dirty)
		total += n
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("%d records evaluated", total), func() bool {
			return ref.m.streams[0].evaluated.Load() == uint64(total) && owner.m.streams[0].evaluated.Load() == uint64(total)
		})
	}
	// One window end per call: a window end reached while the evaluator
	// is busy is coalesced into the next one, and when that happens
	// depends on the machine's load.
	produce(window, false, a)
	produce(every, false, a)
	produce(every, true, a)
	b := startMonitor(t, cfg("eq"))
	testkit.Eventually(t, 30*time.Second, "second member joined", b.m.Ready)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "second member took the topic over", func() bool {
		return slices.Equal(b.m.balancer.Topics(), []string{"eq"}) && b.m.Ready() &&
			metricValue(t, b.reg, "odwatch_window_records", map[string]string{"stream": "eq"}) == window
	})
	produce(every, true, b)
	produce(every, false, b)
	produce(every, false, b)
	// Events reach the sinks after the evaluation is saved: wait for them.
	events := membersMatch(t, ref, a, b)
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if err := ref.stop(); err != nil {
		t.Fatal(err)
	}
	sameWindow(t, b.m.cfg.StateDir, ref.m.cfg.StateDir, "eq", window, "window after the takeover")
	t.Logf("%d events, equal", events)
}

// produceTimed writes n payroll records to topic (round robin over its
// partitions) whose record times are start + i·step, so that they span
// n·step of event time however fast they are written.
func produceTimed(t *testing.T, addr, topic string, from, n int, start time.Time, step time.Duration) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.RoundRobin{}, BatchSize: 1000,
		BatchTimeout: 10 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: testTransport(t)}
	defer w.Close()
	g := demo.NewPayrollGen(int64(from))
	var msgs []kafka.Message
	for i := from; i < from+n; i++ {
		msgs = append(msgs, kafka.Message{Value: slices.Clone(g.Next(false)), Time: start.Add(time.Duration(i) * step)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// TestTimeWindowReadBack: the read-back of a time window reads the last
// interval before the committed offsets, not Window records per
// partition: 1000 records 10 ms apart on three partitions, an interval of
// 1 s, so 101 records (the newest one's time minus 1 s, inclusive).
func TestTimeWindowReadBack(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"twr": 3})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	produceTimed(t, addr, "twr", 0, 1000, start, 10*time.Millisecond)
	m, client := newIntervalMonitor(t, addr, "twr")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name     string
		upTo     int64 // committed offset of each partition
		from, to int   // the records (by index) expected back
	}{
		// Round robin: record i is at offset i/3 of its partition.
		{"all consumed", 334, 899, 1000},
		{"consumed up to record 599", 200, 499, 600},
		{"nothing consumed", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := map[int32]int64{}
			for p := range int32(3) {
				parts[p] = min(tc.upTo, int64(1000-p+2)/3)
			}
			rb, err := m.streams[0].readBack(ctx, client, parts, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for _, r := range rb.Rows {
				got = append(got, r.Meta.Time.Sub(start))
			}
			var want []time.Duration
			for i := tc.from; i < tc.to; i++ {
				want = append(want, time.Duration(i)*10*time.Millisecond)
			}
			if !slices.Equal(got, want) {
				t.Errorf("read back %d records %v…; want the %d of the last interval %v…", len(got), got[:min(3, len(got))], len(want), want[:min(3, len(want))])
			}
		})
	}
}

// TestTimeWindowTakeoverMatchesSingleMember hands a time-window stream
// (records 10 ms apart over six intervals of record time, an interval of
// 1 s) from one member to another, and checks that the rebuilt window
// equals the window of one uninterrupted member on the same records: the
// records of the last second, in the window's order, with the same
// sequence numbers. The records are there before the members start, so
// that the uninterrupted member merges its partitions' backlogs by time
// (records stamped long before they arrive, fetched live, would be merged
// in arrival order).
func TestTimeWindowTakeoverMatchesSingleMember(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"tw": 3})
	cfg := func(group string) Config {
		return Config{
			Brokers: []string{addr}, Group: group, StateDir: t.TempDir(),
			Streams: []StreamConfig{{Topic: "tw", Window: 100000, Interval: time.Second, Epsilon: 0.01}},
		}
	}
	produceTimed(t, addr, "tw", 0, 600, time.Now().Add(-time.Minute), 10*time.Millisecond)
	ref := startMonitor(t, cfg("tw-ref"))
	a := startMonitor(t, cfg("tw"))
	testkit.Eventually(t, 60*time.Second, "both consumed 600", func() bool {
		return testkit.CommittedTotal(t, addr, "tw-ref", "tw", 3) == 600 && testkit.CommittedTotal(t, addr, "tw", "tw", 3) == 600
	})
	b := startMonitor(t, cfg("tw"))
	testkit.Eventually(t, 30*time.Second, "second member joined", b.m.Ready)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "second member took the topic over", func() bool {
		return slices.Equal(b.m.balancer.Topics(), []string{"tw"}) && b.m.Ready() &&
			metricValue(t, b.reg, "odwatch_window_records", map[string]string{"stream": "tw"}) > 0
	})
	for _, r := range []*running{b, ref} {
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
	// The in-memory windows, the monitors stopped (the store may keep
	// older records, for an evaluation not saved yet).
	rows := func(r *running) []string {
		snap := r.m.streams[0].win.Snapshot()
		var keys []string
		for i := range snap.Len() {
			m := snap.Meta(i)
			keys = append(keys, fmt.Sprintf("%d/%d/seq%d", m.Partition, m.Offset, m.Seq))
		}
		return keys
	}
	got, want := rows(b), rows(ref)
	if len(want) != 101 {
		t.Errorf("one member's window holds %d records, want the 101 of the last second", len(want))
	}
	if !slices.Equal(got, want) || b.m.streams[0].seq != ref.m.streams[0].seq {
		t.Errorf("window after the takeover %d records %v seq %d; one member's %d %v seq %d",
			len(got), got[:min(3, len(got))], b.m.streams[0].seq, len(want), want[:min(3, len(want))], ref.m.streams[0].seq)
	}
}

// newIntervalMonitor is a monitor (not running) of topic, in a group of
// that name, whose window is the last second of records, and a client of
// the test's own for its takeOver. The monitor is closed at cleanup.
func newIntervalMonitor(t *testing.T, addr, topic string) (*Monitor, *kafka.Client) {
	t.Helper()
	m, err := NewMonitor(Config{
		Brokers: []string{addr}, Group: topic, StateDir: t.TempDir(),
		Streams: []StreamConfig{{Topic: topic, Window: 100000, Interval: time.Second, Epsilon: 0.01}},
	}, Options{Logger: testkit.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: testTransport(t)}
}

// membersMatch waits (up to 10 s) until the events the members delivered
// together are the events ref delivered alone, reports the difference
// when they do not become so, and returns how many ref delivered.
func membersMatch(t *testing.T, ref *running, members ...*running) int {
	t.Helper()
	var got, want []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, want = eventKeys(members...), eventKeys(ref)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling, with a deadline
	}
	if !slices.Equal(got, want) {
		t.Errorf("events of the members differ from one member's:\n got %v\nwant %v", got, want)
	}
	return len(want)
}

// sameWindow reports a difference between the window of topic stored in
// dir (what names it) and the one stored in refDir: its records, next
// offsets and sequence number.
func sameWindow(t *testing.T, dir, refDir, topic string, window int, what string) {
	t.Helper()
	gotW, gotNext, gotSeq := windowKeys(t, dir, topic, window)
	wantW, wantNext, wantSeq := windowKeys(t, refDir, topic, window)
	if !slices.Equal(gotW, wantW) || gotSeq != wantSeq || !maps.Equal(gotNext, wantNext) {
		t.Errorf("%s: %s %d records (%s) next %v seq %d; one member's %d (%s) next %v seq %d",
			topic, what, len(gotW), first(gotW), gotNext, gotSeq, len(wantW), first(wantW), wantNext, wantSeq)
	}
}

// producePayrolls writes n payroll records to each of topics, topic i's
// seeded seed+i, a tenth of them dirty when dirty.
func producePayrolls(ctx context.Context, t *testing.T, addr string, topics []string, n, seed int, dirty bool) {
	t.Helper()
	for i, tp := range topics {
		o := demo.PayrollOptions{Brokers: []string{addr}, Topic: tp, Count: n, Seed: int64(seed + i)}
		if dirty {
			o.ErrorRate = 0.1
		}
		if err := demo.ProducePayroll(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}
