package stream

import (
	"context"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestStateTopicTakeover stops the member that consumed a clean payroll
// stream and lets a fresh instance (empty state dir, same group) take it
// over: with the state topic it restores the tracker, so it emits no
// discovered event for a dependency the first member tracked, and it does
// emit violated for salary ~ tax when errors start. Then the first member
// comes back on its old state dir: its window and tracker are behind the
// group, so it drops them and takes over again from the state topic: no
// second violated event.
func TestStateTopicTakeover(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"st-pay": 1, "st-state": 1})
	cfg := func() Config {
		return Config{
			Brokers: []string{addr}, Group: "st", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
			StateTopic: "st-state",
			Streams:    []StreamConfig{{Topic: "st-pay", Window: 500, Epsilon: 0.01}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const clean = 2000
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "st-pay", Count: clean, CleanRecords: clean, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	cfgA := cfg()
	a := startMonitor(t, cfgA)
	testkit.Eventually(t, 30*time.Second, "first member evaluated the clean stream", func() bool {
		return a.m.streams[0].evaluated.Load() == clean && testkit.Committed(t, addr, "st", "st-pay") == clean
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	tracked := map[string]bool{}
	for _, e := range a.sink.snapshot() {
		switch e.Type {
		case alerts.EventDiscovered:
			tracked[e.DependencyID] = true
		case alerts.EventRetired:
			delete(tracked, e.DependencyID)
		}
	}
	salTax, err := discovery.ParseDependency("{}: salary ~ tax (asc)")
	if err != nil {
		t.Fatal(err)
	}
	salTaxID := alerts.DependencyID(salTax)
	if !tracked[salTaxID] {
		t.Fatalf("first member does not track %s", salTax)
	}

	b := startMonitor(t, cfg())
	testkit.Eventually(t, 30*time.Second, "second member ready", b.m.Ready)
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "st-pay", Count: 1000, ErrorRate: 0.05, Seed: 12}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "violated event for salary ~ tax from the second member", func() bool {
		for _, e := range b.sink.snapshot() {
			if e.Type == alerts.EventViolated && e.Involves(salTaxID) {
				return true
			}
		}
		return false
	})
	for _, e := range b.sink.snapshot() {
		if e.Type == alerts.EventDiscovered && tracked[e.DependencyID] {
			t.Errorf("second member discovered %s again, window end %d", e.DependencyText, e.Window.EndSeq)
		}
	}
	testkit.Eventually(t, 30*time.Second, "second member consumed everything", func() bool { return testkit.Committed(t, addr, "st", "st-pay") == clean+1000 })
	bEnd := b.m.streams[0].evaluated.Load()
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}

	a2 := startMonitor(t, cfgA)
	testkit.Eventually(t, 30*time.Second, "first member back", a2.m.Ready)
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "st-pay", Count: 500, ErrorRate: 0.05, Seed: 13}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "first member evaluated past the second one", func() bool {
		return a2.m.streams[0].evaluated.Load() > bEnd
	})
	for _, e := range a2.sink.snapshot() {
		if e.Involves(salTaxID) || (e.Type == alerts.EventDiscovered && tracked[e.DependencyID]) {
			t.Errorf("first member, back: %s %s at window end %d (its state was behind the group)", e.Type, e.DependencyText, e.Window.EndSeq)
		}
	}
}
