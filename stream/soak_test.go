package stream

import (
	"context"
	"math/rand"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// committedTotal sums the group's committed offsets of a topic's partitions.
func committedTotal(t testing.TB, addr, group, topic string, parts int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps := make([]int, parts)
	for i := range ps {
		ps[i] = i
	}
	res, err := (&kafka.Client{Addr: kafka.TCP(addr)}).OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil || res.Error != nil {
		return -1
	}
	var sum int64
	for _, p := range res.Topics[topic] {
		if p.Error != nil || p.CommittedOffset < 0 {
			return -1
		}
		sum += p.CommittedOffset
	}
	return sum
}

// TestSoakKills kills (SIGKILL) one of two members at random points eight
// times while they consume three topics, restarting it on its state dir
// each time. In the end every topic's window equals the one of an
// uninterrupted member on the same records (no record lost or counted
// twice, same sequence numbers), and no event id is on the events topic
// twice.
func TestSoakKills(t *testing.T) {
	if os.Getenv("ODWATCH_SOAK") == "" {
		// In about 1 run in 4 a topic stops: the generation after the
		// last kills assigns it to a member that was killed (kfake's
		// group synced 4 members, 2 of them dead, and no rebalance came
		// in 90 s although their 2 s sessions expired). Not understood
		// yet: kfake or the members.
		t.Skip("soak test (about 40 s); run with ODWATCH_SOAK=1 (it stalls in about 1 run in 4, see the comment)")
	}
	topics := []string{"k1", "k2", "k3"}
	const parts, perTopic, window = 2, 4000, 1000
	addr := startTestBroker(t, map[string]int{"k1": parts, "k2": parts, "k3": parts,
		"soak-state": 1, "soak-events": 1, "soak-ref-state": 1, "soak-ref-events": 1})
	cfg := func(group string) Config {
		c := Config{
			Brokers: []string{addr}, Group: group, StateDir: t.TempDir(),
			StateTopic: group + "-state", EventsTopic: group + "-events",
			SessionTimeout: 2 * time.Second, HeartbeatInterval: 300 * time.Millisecond,
		}
		for _, tp := range topics {
			c.Streams = append(c.Streams, StreamConfig{Topic: tp, Window: window, Every: 500, Epsilon: 0.01})
		}
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	produced := make(chan error, len(topics))
	for i, tp := range topics {
		go func() {
			produced <- ProducePayroll(ctx, PayrollOptions{Brokers: []string{addr}, Topic: tp, Count: perTopic, Rate: 800,
				CleanRecords: 1500, ErrorRate: 0.05, Seed: int64(10 + i)})
		}()
	}
	cfgs := []Config{cfg("soak"), cfg("soak")}
	kills := []func(){startMember(t, cfgs[0]), startMember(t, cfgs[1])}
	rng := rand.New(rand.NewSource(1))
	for i := range 8 {
		time.Sleep(time.Duration(200+rng.Intn(500)) * time.Millisecond) // random kill points, not synchronisation
		k := rng.Intn(2)
		kills[k]()
		t.Logf("kill %d: member %d", i+1, k)
		kills[k] = startMember(t, cfgs[k])
	}
	for range topics {
		if err := <-produced; err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var done []int64
		for _, tp := range topics {
			done = append(done, committedTotal(t, addr, "soak", tp, parts))
		}
		if slices.Equal(done, []int64{perTopic, perTopic, perTopic}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members consumed %v of %d records per topic after 90 s", done, perTopic)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, k := range kills {
		k()
	}

	ref := startMonitor(t, cfg("soak-ref"))
	waitFor(t, 90*time.Second, "the reference consumed every topic", func() bool {
		for _, tp := range topics {
			if committedTotal(t, addr, "soak-ref", tp, parts) != perTopic {
				return false
			}
		}
		return true
	})
	if err := ref.stop(); err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		want, wantNext, wantSeq := windowKeys(t, ref.m.cfg.StateDir, tp, window)
		owners := 0
		for i, c := range cfgs {
			got, gotNext, gotSeq := windowKeys(t, c.StateDir, tp, window)
			if len(got) == 0 {
				continue // not (or no longer) this member's topic
			}
			if !mapsEqual(gotNext, wantNext) {
				// A window the member restored from its store but was
				// not assigned before the end: behind the group's
				// committed offsets, it is dropped at its next
				// generation, never evaluated.
				t.Logf("%s: member %d holds a stale window at %v", tp, i, gotNext)
				continue
			}
			owners++
			if !slices.Equal(got, want) || gotSeq != wantSeq {
				t.Errorf("%s: member %d's window %d records (%s) next %v seq %d; uninterrupted %d (%s) next %v seq %d",
					tp, i, len(got), first(got), gotNext, gotSeq, len(want), first(want), wantNext, wantSeq)
			}
		}
		// Two when the member that lost the topic at the end was killed
		// before its next generation would have dropped its copy.
		if owners == 0 {
			t.Errorf("%s: no member holds the whole window", tp)
		}
	}
	ids := map[string]int{}
	for _, msg := range readTopic(t, addr, "soak-events") {
		ids[headerValue(msg.Headers, "ce_id")]++
	}
	if len(ids) == 0 {
		t.Fatal("no events: the duplicate check is vacuous")
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("event %s on the events topic %d times", id, n)
		}
	}
	t.Logf("%d distinct events after 8 kills", len(ids))
}
