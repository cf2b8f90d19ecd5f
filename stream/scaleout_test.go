package stream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// ownedBy maps each member to the topics it owns now.
func ownedBy(rs ...*running) [][]string {
	out := make([][]string, len(rs))
	for i, r := range rs {
		out[i] = r.m.balancer.topics()
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
	waitFor(t, 60*time.Second, what, func() bool {
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
	produce := func(seed int64) {
		t.Helper()
		for i, tp := range topics {
			if err := ProducePayroll(ctx, PayrollOptions{Brokers: []string{addr}, Topic: tp, Count: 300, Seed: seed + int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	evaluated := func(r *running, topic string) uint64 {
		for _, s := range r.m.streams {
			if s.cfg.Topic == topic {
				return s.evaluated.Load()
			}
		}
		return 0
	}
	windowOf := func(r *running, topic string) float64 {
		return metricValue(t, r.reg, "odwatch_window_records", map[string]string{"stream": topic})
	}

	first := startMonitor(t, cfg())
	waitCounts(t, "first member owns all", []int{3}, topics, first)
	produce(1)
	waitFor(t, 60*time.Second, "first member evaluated every topic", func() bool {
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
	waitFor(t, 30*time.Second, "newcomer's window rebuilt", func() bool { return windowOf(second, moved) == 300 })
	evalsBefore := metricValue(t, first.reg, "odwatch_evaluations_total", map[string]string{"stream": moved})
	produce(10)
	waitFor(t, 60*time.Second, "both members evaluated the new records", func() bool {
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
	waitFor(t, 30*time.Second, "heir's window of "+gone+" rebuilt", func() bool { return windowOf(heir, gone) == 300 })
	produce(20)
	waitFor(t, 60*time.Second, "heir evaluated "+gone, func() bool { return evaluated(heir, gone) == 900 })
	t.Logf("owners: %s", strings.Join([]string{fmt.Sprint(owned[0]), fmt.Sprint(owned[1])}, " / "))
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
	addr := startTestBroker(t, map[string]int{"eq": 3, "eq-state": 1, "eq-ref-state": 1})
	const window, every = 600, 300
	cfg := func(group string) Config {
		return Config{
			Brokers: []string{addr}, Group: group, StateDir: t.TempDir(), StateTopic: group + "-state",
			Streams: []StreamConfig{{Topic: "eq", Window: window, Every: every, Epsilon: 0.02}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := startMonitor(t, cfg("eq-ref"))
	a := startMonitor(t, cfg("eq"))
	waitFor(t, 30*time.Second, "members ready", func() bool { return ref.m.Ready() && a.m.Ready() })
	total := 0
	// produce adds n records (clean, or 10% dirty) and waits until owner
	// and reference evaluated them all, so that every window end sees the
	// same records in both groups.
	produce := func(n int, dirty bool, owner *running) {
		t.Helper()
		o := PayrollOptions{Brokers: []string{addr}, Topic: "eq", Count: n, Seed: int64(total)}
		if dirty {
			o.ErrorRate = 0.1
		}
		if err := ProducePayroll(ctx, o); err != nil {
			t.Fatal(err)
		}
		total += n
		waitFor(t, 60*time.Second, fmt.Sprintf("%d records evaluated", total), func() bool {
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
	waitFor(t, 30*time.Second, "second member joined", b.m.Ready)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "second member took the topic over", func() bool {
		return slices.Equal(b.m.balancer.topics(), []string{"eq"}) && b.m.Ready() &&
			metricValue(t, b.reg, "odwatch_window_records", map[string]string{"stream": "eq"}) == window
	})
	produce(every, true, b)
	produce(every, false, b)
	produce(every, false, b)
	// Events reach the sinks after the evaluation is saved: wait for them.
	var got, want []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, want = eventKeys(a, b), eventKeys(ref)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Errorf("events of the two members differ from one member's:\n got %v\nwant %v", got, want)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	if err := ref.stop(); err != nil {
		t.Fatal(err)
	}
	gotW, gotNext, gotSeq := windowKeys(t, b.m.cfg.StateDir, "eq", window)
	wantW, wantNext, wantSeq := windowKeys(t, ref.m.cfg.StateDir, "eq", window)
	if !slices.Equal(gotW, wantW) || gotSeq != wantSeq || !mapsEqual(gotNext, wantNext) {
		t.Errorf("window after the takeover %d records (%s) next %v seq %d; one member's %d (%s) next %v seq %d",
			len(gotW), first(gotW), gotNext, gotSeq, len(wantW), first(wantW), wantNext, wantSeq)
	}
	t.Logf("%d events, equal", len(want))
}
