package stream

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestParseAssignment(t *testing.T) {
	tests := []struct {
		line string
		want assignment
	}{
		{"subscribed to topics and partitions: map[]", assignment{}},
		{"subscribed to topics and partitions: map[{topic:pay partition:0}:-2]", assignment{"pay": {0: -2}}},
		{"subscribed to topics and partitions: map[{topic:a.b-c_d partition:1}:17 {topic:a.b-c_d partition:0}:3 {topic:x partition:0}:-1]",
			assignment{"a.b-c_d": {0: 3, 1: 17}, "x": {0: -1}}},
	}
	for _, tt := range tests {
		got := parseAssignment(tt.line)
		if !maps.EqualFunc(got, tt.want, maps.Equal) {
			t.Errorf("parseAssignment(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// TestLostAssignmentDropsWindow runs a member alone on a topic, then
// starts an older member (created first) in the same group: the balancer
// moves the topic to it, and the first member drops its window, in memory
// and in its store, and evaluates no more. When the older member stops,
// the first one gets the topic back as a takeover: it reads the window
// back and continues from the older member's state on the state topic.
func TestLostAssignmentDropsWindow(t *testing.T) {
	addr := startTestBroker(t, map[string]int{"moved": 2, "moved-state": 1})
	cfg := func() Config {
		return Config{
			Brokers: []string{addr}, Group: "moved", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
			StateTopic: "moved-state",
			Streams:    []StreamConfig{{Topic: "moved", Window: 500, Epsilon: 0.01}},
		}
	}
	// The older member exists (its start time is taken) before the first
	// one runs, but joins later.
	olderCfg := cfg()
	older, err := NewMonitor(olderCfg, Options{Logger: testLogger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	first := startMonitor(t, cfg())
	waitFor(t, 30*time.Second, "first member ready", first.m.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ProducePayroll(ctx, PayrollOptions{Brokers: []string{addr}, Topic: "moved", Count: 1000, Seed: 41}); err != nil {
		t.Fatal(err)
	}
	stream := map[string]string{"stream": "moved"}
	waitFor(t, 30*time.Second, "first member evaluated", func() bool {
		return first.m.streams[0].evaluated.Load() == 1000 && metricValue(t, first.reg, "odwatch_window_records", stream) == 500
	})

	runCtx, stopOlder := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- older.Run(runCtx) }()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			stopOlder()
			if err := <-done; err != nil {
				t.Errorf("older member: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	waitFor(t, 30*time.Second, "first member dropped its window", func() bool {
		return metricValue(t, first.reg, "odwatch_window_records", stream) == 0
	})
	evals := metricValue(t, first.reg, "odwatch_evaluations_total", stream)
	if err := ProducePayroll(ctx, PayrollOptions{Brokers: []string{addr}, Topic: "moved", Count: 1000, Seed: 42}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "older member consumed the new records", func() bool {
		// Its sequence numbers continue past the first member's last
		// window end (999, from the state topic): it read back 500
		// records (a fresh store), then consumed 1000, so the last full
		// window ends at 2499.
		return older.streams[0].evaluated.Load() == 2500
	})
	if got := metricValue(t, first.reg, "odwatch_evaluations_total", stream); got != evals {
		t.Errorf("first member evaluated %v times after losing the topic", got-evals)
	}
	if n, err := first.m.store.WindowCount("moved"); err != nil || n != 0 {
		t.Errorf("first member's store holds %d window records (%v) after losing the topic, want 0", n, err)
	}

	// The older member leaves: the topic comes back to the first one.
	stop()
	if err := ProducePayroll(ctx, PayrollOptions{Brokers: []string{addr}, Topic: "moved", Count: 500, Seed: 43}); err != nil {
		t.Fatal(err)
	}
	// Its sequence numbers continue past the older member's last window
	// end (2499): 500 read back and 500 new records end a window at 3499.
	waitFor(t, 30*time.Second, "first member evaluated after getting the topic back", func() bool {
		return first.m.streams[0].evaluated.Load() == 3500
	})
	if got := metricValue(t, first.reg, "odwatch_window_records", stream); got != 500 {
		t.Errorf("window after getting the topic back holds %v records, want 500", got)
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

}
