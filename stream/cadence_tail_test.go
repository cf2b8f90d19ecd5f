package stream

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/testkit"
)

// tailRows are records from..to-1 of the tail test's stream: g -> h
// throughout, and x ~ y (y = 2x) from record 400 on (y random before),
// so that only discoveries of windows past 799 find x ~ y.
func tailRows(r *rand.Rand, from, to int) [][]string {
	rows := make([][]string, 0, to-from)
	for i := from; i < to; i++ {
		x, g := r.IntN(1000), r.IntN(5)
		y := r.IntN(2000)
		if i >= 400 {
			y = 2 * x
		}
		rows = append(rows, []string{strconv.Itoa(x), strconv.Itoa(y), "g" + strconv.Itoa(g), "h" + strconv.Itoa(g%3)})
	}
	return rows
}

// TestDiscoveryEndingAfterTheLastCheckIsMerged: with discover-every auto
// and the monitor caught up, a discovery that ends after the check that
// was to merge it, once no more records come, is merged at once on that
// check's window (its rules discovered there), not when the next record
// arrives; the next check merges it as usual and announces nothing twice.
func TestDiscoveryEndingAfterTheLastCheckIsMerged(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the monitor on a topic")
	}
	const topic = "tail"
	addr := startTestBroker(t, map[string]int{topic: 1})
	cfg := backlogConfig(topic) // window 400, every 200, auto
	held, release := make(chan uint64, 1), make(chan struct{})
	defer close(release)
	r := startMonitorWith(t, Config{Brokers: []string{addr}, Group: topic, StateDir: t.TempDir(),
		SessionTimeout: 6 * time.Second, Streams: []StreamConfig{cfg}}, func(m *Monitor) {
		m.testHooks().beforeDiscovery = func(ctx context.Context, end uint64) {
			if end < 799 {
				return
			}
			select {
			case held <- end: // the first one past 799 only: the channel stays full
			default:
				return
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	s := r.m.streams[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(4, 4))
	header := []string{"x", "y", "g", "h"}
	produced := 0
	produce := func(n int) {
		t.Helper()
		if err := produceRows(ctx, addr, topic, header, tailRows(rng, produced, produced+n)); err != nil {
			t.Fatal(err)
		}
		produced += n
		testkit.Eventually(t, time.Minute, "check of record "+strconv.Itoa(produced-1), func() bool {
			return s.evaluated.Load() == uint64(produced)
		})
	}
	// Caught up: one check's records at a time, until a discovery past 799
	// is held, then one more check, the one that was to merge it.
	produce(400)
	for len(held) == 0 {
		produce(cfg.Every)
	}
	d := <-held
	held <- d // keep later discoveries from being held
	if uint64(produced) == d+1 {
		produce(cfg.Every)
	}
	last := uint64(produced - 1)
	if last != d+uint64(cfg.Every) {
		t.Fatalf("the last check is of window %d, want the one after the held discovery's (%d)", last, d)
	}
	discoveredAt := func(end uint64) []string {
		var out []string
		for _, e := range r.sink.snapshot() {
			if e.Type == alerts.EventDiscovered && e.Window.EndSeq == end {
				out = append(out, e.DependencyText)
			}
		}
		return out
	}
	if got := discoveredAt(last); len(got) > 0 {
		t.Fatalf("discovered %v at window %d before its discovery ended", got, last)
	}
	release <- struct{}{}
	testkit.Eventually(t, time.Minute, "the held discovery's rules discovered without another record", func() bool {
		return len(discoveredAt(last)) > 0
	})
	if n := s.evaluated.Load(); n != last+1 {
		t.Fatalf("evaluated %d, want %d: no check ran after the last record", n, last+1)
	}
	found := discoveredAt(last)
	t.Logf("discovery of window %d merged on window %d: discovered %v", d, last, found)
	// The status page's event list has them too (appended to its window's).
	testkit.Eventually(t, time.Minute, "the discovered event in the status history", func() bool {
		evs, err := r.m.store.EventHistory(topic)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs, func(p []byte) bool {
			return bytes.Contains(p, []byte(`"discovered"`)) && bytes.Contains(p, []byte(found[0]))
		})
	})
	// The next check merges the same discovery as usual: nothing again.
	produce(cfg.Every)
	counts := map[string]int{}
	for _, e := range r.sink.snapshot() {
		if e.Type == alerts.EventDiscovered {
			counts[e.DependencyText]++
		}
	}
	for _, dep := range found {
		if counts[dep] != 1 {
			t.Errorf("%s discovered %d times, want once", dep, counts[dep])
		}
	}
}
