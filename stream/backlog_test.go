package stream

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
)

// backlogPayroll is the fault stream of the backlog tests: clean payroll,
// then a quarter of the records with a data-entry error.
var backlogPayroll = demo.PayrollOptions{CleanRecords: 2000, ErrorRate: 0.25, Seed: 5}

// backlogConfig is the configuration (window 400, every 200) with
// discover-every auto and run's defaults for what is tracked.
func backlogConfig(topic string) StreamConfig {
	return StreamConfig{Topic: topic, Window: 400, Every: 200, DiscoverEvery: AutoDiscoverEvery, Epsilon: 0.05, Sample: 3,
		Margin: AutoMargin, MinScore: AutoMinScore, DiscoverAfter: DefaultDiscoverAfter, MaxLevel: DefaultMaxLevel,
		MinStrength: discovery.DefaultMinStrength}
}

// TestBacklogParity: a monitor started on a topic that already holds the
// records (a backlog), or that gets them in one burst while it runs,
// raises the discovered and violated events of `odwatch replay --topic` on
// the same range, by dependency and type, up to the last window (where
// the monitor has caught up and paces discovery by its budget), with two
// cadences and with one (a tumbling window, where each evaluation runs a
// discovery). Before discovery was waited for, the backlog's discoveries
// were skipped or merged late and no event came.
func TestBacklogParity(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the monitor on a topic")
	}
	for _, tc := range []struct {
		name  string
		burst bool
		every int
	}{{"backlog", false, 200}, {"burst", true, 200}, {"tumbling", false, 400}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := backlogConfig(tc.name)
			cfg.Every = tc.every
			backlogParity(t, cfg, tc.burst)
		})
	}
}

func backlogParity(t *testing.T, cfg StreamConfig, burst bool) {
	const n = 4000
	topic := cfg.Topic
	addr := startTestBroker(t, map[string]int{topic: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	po := backlogPayroll
	po.Brokers, po.Topic, po.Count = []string{addr}, topic, n
	start := func() *running {
		return startMonitor(t, Config{Brokers: []string{addr}, Group: topic, StateDir: t.TempDir(),
			SessionTimeout: 6 * time.Second, Streams: []StreamConfig{cfg}})
	}
	var r *running
	if burst {
		r = start()
		testkit.Eventually(t, time.Minute, "the monitor joined", r.m.Ready)
	}
	if err := demo.ProducePayroll(ctx, po); err != nil {
		t.Fatal(err)
	}
	if !burst {
		r = start()
	}
	testkit.Eventually(t, 2*time.Minute, "the monitor checked the last window and delivered its events", func() bool {
		if r.m.streams[0].evaluated.Load() != n {
			return false
		}
		p, err := r.m.store.PendingEvents(topic)
		return err == nil && len(p) == 0
	})
	_, replayed := replayTopic(t, ctx, addr, topic, cfg)
	last := uint64(n - cfg.Window) // events past it fall in the last window
	want, got := dependencyEvents(replayed, last), dependencyEvents(r.sink.snapshot(), last)
	if len(want) == 0 {
		t.Fatal("replay raised no discovered or violated event")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the monitor's events differ from replay's:\n got %q\nwant %q", got, want)
	}
	t.Logf("%d discovered/violated events, as replay; consumption waited for discovery %v times",
		len(want), discoveryWaits(t, r.reg, topic))
}

// dependencyEvents are the discovered and violated events of evs raised
// at a window end up to last, as "type dependency", sorted, each once.
func dependencyEvents(evs []alerts.Event, last uint64) []string {
	var out []string
	for _, e := range evs {
		if e.Window.EndSeq > last || (e.Type != alerts.EventDiscovered && e.Type != alerts.EventViolated) {
			continue
		}
		out = append(out, string(e.Type)+" "+e.DependencyText)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
