package stream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/deliver"
	"github.com/prometheus/client_golang/prometheus"
)

// TestSinkRetryOnTimer points a webhook sink (no retries of its own) at a
// receiver that fails its first requests: the events stay in the outbox
// and are delivered by the retry timer, without waiting for another
// evaluation or a restart.
func TestSinkRetryOnTimer(t *testing.T) {
	t.Parallel()
	const failures = 3
	var (
		mu       sync.Mutex
		requests int
		received = map[string]bool{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		requests++
		if requests <= failures {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		received[r.Header.Get("ce-id")] = true
	}))
	defer srv.Close()

	addr := startTestBroker(t, map[string]int{"retry": 1})
	reg := prometheus.NewRegistry()
	hook := alerts.NewWebhookSink(srv.URL, alerts.WebhookOptions{Retries: -1, Logger: testkit.Logger(t)})
	m, err := NewMonitor(Config{
		Brokers: []string{addr}, Group: "retry", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{{Topic: "retry", Window: 300, Epsilon: 0.01}},
	}, Options{Logger: testkit.Logger(t), Registerer: reg, Sinks: []alerts.Sink{hook}})
	if err != nil {
		t.Fatal(err)
	}
	m.testHooks().retryBase = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	testkit.Eventually(t, 30*time.Second, "ready", m.Ready)
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	defer pcancel()
	// One window: a single evaluation, whose events the first sends fail.
	if err := demo.ProducePayroll(pctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "retry", Count: 300, Seed: 51}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "outbox delivered", func() bool {
		p, err := m.store.PendingEvents("retry")
		return err == nil && len(p) == 0 && m.streams[0].evaluated.Load() == 300
	})
	mu.Lock()
	got, reqs := len(received), requests
	mu.Unlock()
	if got == 0 {
		t.Fatal("the webhook received no event")
	}
	if errs := metricValue(t, reg, "odwatch_sink_errors_total", map[string]string{"stream": "retry", "sink": "extra0"}); errs != failures {
		t.Errorf("%v failed sends, want %d (one per timer retry until the receiver recovers)", errs, failures)
	}
	// The evaluator counts an evaluation after it is saved and delivered.
	evaluations := func() float64 {
		return metricValue(t, reg, "odwatch_evaluations_total", map[string]string{"stream": "retry"})
	}
	testkit.Eventually(t, 30*time.Second, "the evaluation counted", func() bool { return evaluations() >= 1 })
	if n := evaluations(); n != 1 {
		t.Errorf("%v evaluations, want 1: delivery must not wait for another one", n)
	}
	t.Logf("%d events delivered in %d requests", got, reqs)
}

// TestHousekeepingPrunesDelivered checks that the outbox's Prune forgets
// delivery markers older than deliver.DeliveredKeep and keeps recent ones.
func TestHousekeepingPrunesDelivered(t *testing.T) {
	m := offlineMonitor(t, StreamConfig{Topic: "hk", Window: 10, Epsilon: 0.01})
	s := m.streams[0]
	ids := []string{"e1", deliver.Marker("e1", "kafka")}
	if err := m.store.MarkDelivered("hk", ids); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		now  time.Time
		want bool
	}{
		{"recent markers stay", time.Now().Add(deliver.DeliveredKeep - time.Hour), true},
		{"old markers go", time.Now().Add(deliver.DeliveredKeep + time.Hour), false},
	}
	for _, tt := range tests {
		s.eval.outbox().Prune(tt.now)
		for _, id := range ids {
			if ok, err := m.store.Delivered("hk", id); err != nil || ok != tt.want {
				t.Errorf("%s: Delivered(%s) = %v, %v; want %v", tt.name, id, ok, err, tt.want)
			}
		}
	}
}

// partialSink takes the first `take` events of its first Send and fails
// the rest with an alerts.SendError, then takes everything.
type partialSink struct {
	take     int
	calls    int
	received []string
}

func (p *partialSink) Send(_ context.Context, events []alerts.Event) error {
	p.calls++
	n := len(events)
	if p.calls == 1 {
		n = min(n, p.take)
	}
	for _, e := range events[:n] {
		p.received = append(p.received, e.ID)
	}
	if n < len(events) {
		return &alerts.SendError{Sent: n, Err: errors.New("receiver refused")}
	}
	return nil
}

func (p *partialSink) Close() error { return nil }

// TestDeliverPartialFailure checks that the events a sink took before it
// failed are not sent to it again by the retry, and that the outbox drains
// once the rest are taken.
func TestDeliverPartialFailure(t *testing.T) {
	m := offlineMonitor(t, StreamConfig{Topic: "pd", Window: 10, Epsilon: 0.01})
	sink := &partialSink{take: 1}
	m.sinks = []deliver.Sink{{Name: "partial", Sink: sink}}
	saveOutbox(t, m, "pd", 9, alerts.Event{ID: "e1", Stream: "pd"}, alerts.Event{ID: "e2", Stream: "pd"}, alerts.Event{ID: "e3", Stream: "pd"})
	s := m.streams[0]
	for range 2 {
		if err := s.eval.outbox().Deliver(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"e1", "e2", "e3"}; !slices.Equal(sink.received, want) {
		t.Errorf("received %v, want %v (each once, in order)", sink.received, want)
	}
	if p, err := m.store.PendingEvents("pd"); err != nil || len(p) != 0 || s.eval.outbox().Undelivered() != 0 {
		t.Errorf("outbox after delivery: %d pending, undelivered %d, err %v", len(p), s.eval.outbox().Undelivered(), err)
	}
}
