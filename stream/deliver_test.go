package stream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/deliver"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDeliverPermanentFailure points a webhook sink at a receiver that
// refuses event e2: for good (400), or for a while (503). A permanent
// refusal drops e2 for the sink at once, counted and never sent again, and
// the events after it are delivered (the sink's own retries do not send it
// again either); a transient one keeps e2 and the events after it in the
// outbox, retried by every delivery, until the receiver recovers.
func TestDeliverPermanentFailure(t *testing.T) {
	tests := []struct {
		name     string
		status   int // answer to e2 on the first refusals requests for it
		refusals int
		retries  int // the webhook's own retries: none for 400 (permanent)
		// after the first delivery
		wantFirst []string
		// after all deliveries
		wantReceived []string
		wantE2Calls  int
		wantDropped  float64
	}{
		{"400 drops the event, later ones flow", http.StatusBadRequest, 1 << 30, 3,
			[]string{"e1", "e3", "e4"}, []string{"e1", "e3", "e4"}, 1, 1},
		{"503 keeps the event and later ones until it recovers", http.StatusServiceUnavailable, 2, -1,
			[]string{"e1"}, []string{"e1", "e2", "e3", "e4"}, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := &refusingReceiver{status: tt.status, refusals: tt.refusals}
			srv := httptest.NewServer(rcv)
			defer srv.Close()

			reg := prometheus.NewRegistry()
			m := offlineMonitorWith(t, StreamConfig{Topic: "pf", Window: 10, Epsilon: 0.01}, Options{Registerer: reg})
			hook := alerts.NewWebhookSink(srv.URL, alerts.WebhookOptions{Retries: tt.retries, Backoff: time.Millisecond, Logger: testkit.Logger(t)})
			m.sinks = []deliver.Sink{{Name: "webhook", Sink: hook}}
			var evs []alerts.Event
			for _, id := range []string{"e1", "e2", "e3", "e4"} {
				evs = append(evs, alerts.Event{ID: id, Stream: "pf", Type: alerts.EventViolated, DependencyText: "a -> b"})
			}
			saveOutbox(t, m, "pf", 9, evs...)
			s := m.streams[0]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// The evaluation's delivery, then the retry timer's: the
			// 503 case needs three sends of e2.
			for i := range 4 {
				if err := s.eval.outbox().Deliver(ctx); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					rcv.mu.Lock()
					got := slices.Clone(rcv.received)
					rcv.mu.Unlock()
					if !slices.Equal(got, tt.wantFirst) {
						t.Errorf("after the first delivery received %v, want %v", got, tt.wantFirst)
					}
				}
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if !slices.Equal(rcv.received, tt.wantReceived) {
				t.Errorf("received %v, want %v (each once, in order)", rcv.received, tt.wantReceived)
			}
			if rcv.e2Calls != tt.wantE2Calls {
				t.Errorf("e2 sent %d times, want %d", rcv.e2Calls, tt.wantE2Calls)
			}
			if p, err := m.store.PendingEvents("pf"); err != nil || len(p) != 0 || s.eval.outbox().Undelivered() != 0 {
				t.Errorf("outbox after delivery: %d pending, undelivered %d, err %v", len(p), s.eval.outbox().Undelivered(), err)
			}
			labels := map[string]string{"stream": "pf", "sink": "webhook"}
			if n := metricValue(t, reg, "odwatch_events_dropped_total", labels); n != tt.wantDropped {
				t.Errorf("odwatch_events_dropped_total = %v, want %v", n, tt.wantDropped)
			}
		})
	}
}

// refusingReceiver is a webhook receiver that answers status to the
// first refusals requests for event e2 and takes every other event.
type refusingReceiver struct {
	status, refusals int

	mu       sync.Mutex
	e2Calls  int
	received []string // the ids taken, in order
}

func (rcv *refusingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	id := r.Header.Get("ce-id")
	if id == "e2" {
		rcv.e2Calls++
		if rcv.e2Calls <= rcv.refusals {
			http.Error(w, "refused", rcv.status)
			return
		}
	}
	rcv.received = append(rcv.received, id)
}

// saveOutbox saves an evaluation of stream at window end whose outbox
// holds events, as record does.
func saveOutbox(t testing.TB, m *Monitor, stream string, end uint64, events ...alerts.Event) {
	t.Helper()
	ev := &state.Evaluation{Stream: stream, WindowEnd: end}
	for _, e := range events {
		payload, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		ev.Events = append(ev.Events, state.OutboxEvent{ID: e.ID, Payload: payload})
	}
	if err := m.store.SaveEvaluation(ev); err != nil {
		t.Fatal(err)
	}
}
