package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/odwatch/odwatch/discovery"
)

func twoEvents() []Event {
	a := sampleEvent()
	b := sampleEvent()
	d := discovery.Dependency{Kind: discovery.KindOFD, Context: []string{"zip"}, RHS: "city"}
	b.Type, b.Dependency, b.DependencyText, b.DependencyID = EventDiscovered, d, d.String(), DependencyID(d)
	b.ID = EventID(b.Stream, b.DependencyID, b.Window.EndSeq, b.Type)
	b.Samples = nil
	return []Event{a, b}
}

func TestKafkaSink(t *testing.T) {
	c := eventsCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	sink := NewKafkaSink(NewKafkaWriter(c.ListenAddrs(), "events"), "odwatch/payroll")
	events := twoEvents()
	if err := sink.Send(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.ListenAddrs(), Topic: "events", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for i, want := range events {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read message %d: %v", i, err)
		}
		if string(m.Key) != want.DependencyID {
			t.Errorf("key %q, want %q", m.Key, want.DependencyID)
		}
		headers := map[string]string{}
		for _, h := range m.Headers {
			headers[h.Key] = string(h.Value)
		}
		wantHeaders := map[string]string{
			"ce_specversion": "1.0",
			"ce_id":          want.ID,
			"ce_source":      "odwatch/payroll",
			"ce_type":        "io.odwatch.dependency." + string(want.Type),
			"ce_time":        "2026-11-30T01:05:00.0000005Z",
			"ce_subject":     want.DependencyID,
			"ce_dataschema":  eventDataSchema,
			"content-type":   "application/json",
		}
		if !reflect.DeepEqual(headers, wantHeaders) {
			t.Errorf("headers %v, want %v", headers, wantHeaders)
		}
		var got Event
		if err := json.Unmarshal(m.Value, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("value decodes to\n%+v\nwant\n%+v", got, want)
		}
	}
}

func TestKafkaSinkUnreachable(t *testing.T) {
	w := NewKafkaWriter([]string{"127.0.0.1:1"}, "events")
	w.MaxAttempts = 1
	sink := NewKafkaSink(w, "")
	defer sink.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sink.Send(ctx, twoEvents()); err == nil {
		t.Fatal("Send to an unreachable broker succeeded")
	}
}

func TestWebhookSinkRetries(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()

	sink := NewWebhookSink(srv.URL, WebhookOptions{Backoff: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	defer sink.Close()
	events := twoEvents()
	if err := sink.Send(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("%d requests, want 4 (two 503s, then one per event)", n)
	}
	for i, r := range got {
		e := events[i]
		for h, want := range map[string]string{
			"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": e.ID,
			"Ce-Source": "odwatch/payroll", "Ce-Type": "io.odwatch.dependency." + string(e.Type),
			"Ce-Subject": e.DependencyID, "Ce-Time": "2026-11-30T01:05:00.0000005Z", "Ce-Dataschema": eventDataSchema,
		} {
			if r.Header.Get(h) != want {
				t.Errorf("event %d header %s = %q, want %q", i, h, r.Header.Get(h), want)
			}
		}
		if r.Method != http.MethodPost {
			t.Errorf("method %s", r.Method)
		}
		var ev Event
		if err := json.Unmarshal(bodies[i], &ev); err != nil || ev.ID != e.ID {
			t.Errorf("body %s: %v", bodies[i], err)
		}
	}
}

func TestWebhookSinkFailures(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		retries   int
		wantCalls int32
		permanent bool // the event itself is refused: errors.Is(err, ErrPermanent)
	}{
		{"400 is permanent", http.StatusBadRequest, 5, 1, true},
		{"413 is permanent", http.StatusRequestEntityTooLarge, 5, 1, true},
		{"422 is permanent", http.StatusUnprocessableEntity, 5, 1, true},
		{"401 refuses every event: not retried, not permanent", http.StatusUnauthorized, 5, 1, false},
		{"404 refuses every event: not retried, not permanent", http.StatusNotFound, 5, 1, false},
		{"5xx retried then given up", http.StatusInternalServerError, 2, 3, false},
		{"429 retried", http.StatusTooManyRequests, 1, 2, false},
		{"408 retried", http.StatusRequestTimeout, 1, 2, false},
		{"no retries", http.StatusBadGateway, -1, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			sink := NewWebhookSink(srv.URL, WebhookOptions{Retries: tc.retries, Backoff: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			err := sink.Send(context.Background(), twoEvents())
			if err == nil {
				t.Fatal("Send succeeded")
			}
			if n := Delivered(err); n != 0 {
				t.Errorf("Delivered(%v) = %d, want 0", err, n)
			}
			if got := errors.Is(err, ErrPermanent); got != tc.permanent {
				t.Errorf("errors.Is(%v, ErrPermanent) = %v, want %v", err, got, tc.permanent)
			}
			if n := calls.Load(); n != tc.wantCalls {
				t.Fatalf("%d calls, want %d (and none for the second event)", n, tc.wantCalls)
			}
		})
	}
}

func TestWebhookSinkHonoursContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	sink := NewWebhookSink(srv.URL, WebhookOptions{Backoff: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := sink.Send(ctx, twoEvents())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Send took %v despite the context", d)
	}
}

type failSink struct{ err error }

func (f failSink) Send(context.Context, []Event) error { return f.err }
func (f failSink) Close() error                        { return nil }

func TestFanoutWriterLogAndMetrics(t *testing.T) {
	var text, logs bytes.Buffer
	boom := errors.New("boom")
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	sink := fanout(NewWriterSink(&text), NewLogSink(slog.New(slog.NewTextHandler(&logs, nil))), m.Instrument("broken", failSink{boom}))
	events := twoEvents()
	err := sink.Send(context.Background(), events)
	if !errors.Is(err, boom) {
		t.Fatalf("fanout error %v, want boom", err)
	}
	if !strings.Contains(text.String(), events[0].Text()) || !strings.Contains(text.String(), events[1].Text()) {
		t.Errorf("writer sink output:\n%s", text.String())
	}
	if !strings.Contains(logs.String(), "dependency violated") || !strings.Contains(logs.String(), "id="+events[1].ID) {
		t.Errorf("log sink output:\n%s", logs.String())
	}
	m.Observe(events)
	m.Observe(events[:1])
	if v := gauge(t, reg, "odwatch_events_total", "payroll", "violated"); v != 2 {
		t.Errorf("violated events %v, want 2", v)
	}
	if v := gauge(t, reg, "odwatch_sink_errors_total", "broken", "payroll"); v != 1 {
		t.Errorf("sink errors %v, want 1", v)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	// A second NewMetrics on the same registry shares the collectors.
	m2 := NewMetrics(reg)
	m2.Observe(events[:1])
	if v := gauge(t, reg, "odwatch_events_total", "payroll", "violated"); v != 3 {
		t.Errorf("shared counter %v, want 3", v)
	}
}

func TestMetricsUpdateTracker(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.MaxErrorSeries = 2
	tr := NewTracker(Config{Stream: "payroll", Epsilon: 0.1, K: 1, RetireAfter: 1})
	tr.Observe(testWindow(1), testObs(map[string]o{"A": {0.01, true}, "B": {0.02, true}, "C": {0.03, true}}))
	tr.Observe(testWindow(2), testObs(map[string]o{"A": {0.5, false}, "B": {0.02, true}, "C": {0.03, true}}))
	m.UpdateTracker("payroll", tr)
	if v := gauge(t, reg, "odwatch_dependencies", "violated", "payroll"); v != 1 {
		t.Errorf("violated gauge %v", v)
	}
	if v := gauge(t, reg, "odwatch_dependencies", "holding", "payroll"); v != 2 {
		t.Errorf("holding gauge %v", v)
	}
	if n := len(series(t, reg, "odwatch_dependency_error")); n != 2 {
		t.Errorf("%d error series, want the cap 2", n)
	}
	if v := gauge(t, reg, "odwatch_dependency_error", testDeps["A"].String(), "payroll"); v != 0.5 {
		t.Errorf("error of A %v", v)
	}
	// A retires (held, not minimal, RetireAfter 1): its series disappears.
	tr.Observe(testWindow(3), testObs(map[string]o{"A": {0.0, true}, "B": {0.02, false}, "C": {0.03, true}}))
	m.UpdateTracker("payroll", tr)
	for _, e := range tr.Errors() {
		if depName(e.ID) == "B" {
			t.Fatal("B should be retired")
		}
	}
	if n := len(series(t, reg, "odwatch_dependency_error")); n != 2 {
		t.Errorf("%d error series after retirement, want 2", n)
	}
}

// series returns the label values (joined by "|") and values of a metric
// family in reg.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[strings.Join(labels, "|")] = v
		}
	}
	return out
}

// gauge returns the value of the series of name with the given label values
// (in label-name order), or -1 when absent.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	v, ok := series(t, reg, name)[strings.Join(labels, "|")]
	if !ok {
		return -1
	}
	return v
}

func TestWebhookSinkRetryAfter(t *testing.T) {
	var calls atomic.Int32
	var first, second time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			first = time.Now()
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			second = time.Now()
		}
	}))
	defer srv.Close()
	sink := NewWebhookSink(srv.URL, WebhookOptions{Backoff: time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err := sink.Send(context.Background(), twoEvents()[:1]); err != nil {
		t.Fatal(err)
	}
	// Retry-After (30 s) raises the 1 ms backoff, but only up to MaxBackoff;
	// the upper bound leaves a loaded machine seconds of slack.
	if d := second.Sub(first); d < 150*time.Millisecond || d > 10*time.Second {
		t.Fatalf("retried after %v, want about MaxBackoff (200ms)", d)
	}
}

// TestWebhookSinkPartialFailure: the receiver takes the first event and
// refuses the second; the error says one was delivered, so that the caller
// does not send it again.
func TestWebhookSinkPartialFailure(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	sink := NewWebhookSink(srv.URL, WebhookOptions{Retries: -1, Logger: slog.New(slog.DiscardHandler)})
	err := sink.Send(context.Background(), twoEvents())
	if err == nil {
		t.Fatal("Send succeeded")
	}
	if n := Delivered(err); n != 1 {
		t.Fatalf("Delivered(%v) = %d, want 1", err, n)
	}
}

// TestKafkaSinkPermanent: an event too large for the writer is refused for
// good (ErrPermanent, Sent indexing it), the one before it is delivered,
// and the one after it goes through on the next Send.
func TestKafkaSinkPermanent(t *testing.T) {
	c := eventsCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	w := NewKafkaWriter(c.ListenAddrs(), "events")
	w.BatchBytes = 4 << 10
	sink := NewKafkaSink(w, "")
	defer sink.Close()
	two := twoEvents()
	big := two[0]
	big.ID, big.DependencyText = "big", strings.Repeat("x", 8<<10)
	events := []Event{two[0], big, two[1]}

	err := sink.Send(ctx, events)
	if !errors.Is(err, ErrPermanent) || Delivered(err) != 1 {
		t.Fatalf("Send = %v (Delivered %d), want ErrPermanent for event 1", err, Delivered(err))
	}
	if err := sink.Send(ctx, events[2:]); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.ListenAddrs(), Topic: "events", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for _, want := range []string{events[0].ID, events[2].ID} {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s: %v", want, err)
		}
		for _, h := range m.Headers {
			if h.Key == "ce_id" && string(h.Value) != want {
				t.Errorf("ce_id %s, want %s", h.Value, want)
			}
		}
	}
}

// TestKafkaErrorClassification: which kafka-go errors are one message's
// own and permanent.
func TestKafkaErrorClassification(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		n          int
		first      int
		perMessage bool
		permanent  bool
	}{
		{"record invalid", kafka.WriteErrors{nil, kafka.InvalidRecord}, 2, 1, true, true},
		{"broker message size", kafka.WriteErrors{kafka.MessageSizeTooLarge}, 1, 0, true, true},
		{"too large for the writer", kafka.MessageTooLargeError{}, 3, 0, true, true},
		{"temporary", kafka.WriteErrors{kafka.NotEnoughReplicas, nil}, 2, 0, true, false},
		{"topic authorization refuses every message", kafka.WriteErrors{kafka.TopicAuthorizationFailed}, 1, 0, true, false},
		{"call error", fmt.Errorf("metadata: %w", kafka.InvalidRecord), 2, 0, false, true},
		{"network", io.ErrUnexpectedEOF, 1, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, perMessage, err := firstWriteError(tc.err, tc.n)
			if first != tc.first || perMessage != tc.perMessage {
				t.Errorf("firstWriteError = %d, %v; want %d, %v", first, perMessage, tc.first, tc.perMessage)
			}
			if got := permanentKafka(err); got != tc.permanent {
				t.Errorf("permanentKafka(%v) = %v, want %v", err, got, tc.permanent)
			}
		})
	}
}

// eventsCluster starts a one-broker kfake cluster with an "events" topic,
// closed at the test's end.
func eventsCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
