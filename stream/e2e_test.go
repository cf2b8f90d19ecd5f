package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestPayrollEndToEnd runs the paper's running example through the whole
// pipeline: a clean payroll stream gives discovered events (salary orders
// tax), injected data-entry errors give exactly one violated event for it
// whose samples are erroneous records, and a clean stream again gives
// restored.
func TestPayrollEndToEnd(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"payroll": 1, "events": 1})
	const (
		window = 500
		clean  = 2000
		stopAt = 4000
		total  = 6500
	)
	r := startMonitor(t, Config{
		Brokers:        []string{addr},
		Group:          "e2e",
		EventsTopic:    "events",
		StateDir:       t.TempDir(),
		SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{{
			Topic: "payroll", Window: window, Every: window, Epsilon: 0.01, Sample: 5,
			// A column the stream never carries: not observed, so no
			// event and no error series (see eval.Env.evaluateWindow).
			Pinned: []string{"{}: salary ~ bonus (asc)"},
		}},
	})
	testkit.Eventually(t, 30*time.Second, "consumer group join", r.m.Ready)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{
		Brokers: []string{addr}, Topic: "payroll", Rate: 5000, Count: total,
		CleanRecords: clean, ErrorRate: 0.04, StopErrorsAfter: stopAt, Seed: 7,
	}); err != nil {
		t.Fatalf("ProducePayroll: %v", err)
	}

	salTax, err := discovery.ParseDependency("{}: salary ~ tax (asc)")
	if err != nil {
		t.Fatal(err)
	}
	salTaxID := alerts.DependencyID(salTax)
	of := func(typ alerts.EventType) []alerts.Event { return eventsInvolving(r.sink.snapshot(), typ, salTaxID) }
	testkit.Eventually(t, 60*time.Second, "restored event for salary ~ tax", func() bool { return len(of(alerts.EventRestored)) > 0 })

	disc := of(alerts.EventDiscovered)
	if len(disc) != 1 || disc[0].Window.EndSeq >= clean {
		t.Errorf("discovered events for %s: %+v; want one in a clean window", salTax, disc)
	}
	viol := of(alerts.EventViolated)
	if len(viol) != 1 {
		t.Fatalf("violated events for %s: %d, want exactly 1", salTax, len(viol))
	}
	v := viol[0]
	if v.Window.EndSeq < clean || v.Window.EndSeq >= stopAt+window {
		t.Errorf("violated at window end %d, want within the erroneous part [%d, %d)", v.Window.EndSeq, clean, stopAt+window)
	}
	if v.Window.EndSeq > clean+2*window {
		t.Errorf("violated at window end %d, more than two windows after the errors started at %d", v.Window.EndSeq, clean)
	}
	if v.ErrorNow <= 0.01 || len(v.Samples) == 0 {
		t.Errorf("violated event: error %v, %d samples", v.ErrorNow, len(v.Samples))
	}
	checkPayrollSamples(t, addr, v)
	rest := of(alerts.EventRestored)
	if len(rest) != 1 || rest[0].Window.EndSeq < stopAt {
		t.Errorf("restored events: %+v; want one after the errors stopped at %d", rest, stopAt)
	}

	// The events reached the events topic as CloudEvents.
	testkit.Eventually(t, 20*time.Second, "events on the events topic", func() bool {
		for _, msg := range readTopic(t, addr, "events") {
			if headerValue(msg.Headers, "ce_id") == v.ID {
				return true
			}
		}
		return false
	})
	testkit.Eventually(t, 20*time.Second, "all records consumed", func() bool {
		return metricValue(t, r.reg, "odwatch_records_consumed_total", map[string]string{"stream": "payroll"}) == total
	})
	checkPayrollMetrics(t, r, window)
	t.Logf("events: %d total; violated %s at window end %d with error %.4f, samples %v", len(r.sink.snapshot()), salTax, v.Window.EndSeq, v.ErrorNow, fmt.Sprint(v.Samples))
}

// eventsInvolving are the events of type typ that involve the dependency
// id: leading the event or related in it.
func eventsInvolving(events []alerts.Event, typ alerts.EventType, id string) []alerts.Event {
	var out []alerts.Event
	for _, e := range events {
		if e.Type == typ && e.Involves(id) {
			out = append(out, e)
		}
	}
	return out
}

// checkPayrollSamples checks that the violated event v's samples are
// erroneous payroll records, with the values of its leading dependency's
// columns.
func checkPayrollSamples(t *testing.T, addr string, v alerts.Event) {
	t.Helper()
	for _, s := range v.Samples {
		msg := readAt(t, addr, s.Topic, int(s.Partition), s.Offset)
		var rec struct{ Salary, Perc, Tax int }
		if err := json.Unmarshal(msg.Value, &rec); err != nil {
			t.Fatalf("sample %d: %v", s.Offset, err)
		}
		if _, perc := demo.PayrollBracket(rec.Salary); rec.Perc != perc*10 {
			t.Errorf("sample offset %d is not an erroneous record: %s", s.Offset, msg.Value)
		}
		// The samples carry the columns of the event's leading dependency.
		if v, ok := s.Values["tax"]; ok && v != strconv.Itoa(rec.Tax) || s.Values["salary"] != strconv.Itoa(rec.Salary) {
			t.Errorf("sample %d values %v do not match the record %s", s.Offset, s.Values, msg.Value)
		}
	}
}

// checkPayrollMetrics checks TestPayrollEndToEnd's metrics once every
// record is consumed: the window, epsilon and evaluation series, the
// tracked dependencies, and nothing for the pinned rule on an absent
// column.
func checkPayrollMetrics(t *testing.T, r *running, window int) {
	t.Helper()
	stream := map[string]string{"stream": "payroll"}
	if got := metricValue(t, r.reg, "odwatch_window_records", stream); got != float64(window) {
		t.Errorf("odwatch_window_records = %v, want %d", got, window)
	}
	if got := metricValue(t, r.reg, "odwatch_epsilon", stream); got != 0.01 {
		t.Errorf("odwatch_epsilon = %v", got)
	}
	for _, name := range []string{"odwatch_evaluation_duration_seconds", "odwatch_events_total", "odwatch_evaluations_total"} {
		if metricValue(t, r.reg, name, stream) <= 0 {
			t.Errorf("metric %s has no positive sample", name)
		}
	}
	if n := seriesCount(t, r.reg, "odwatch_dependency_error", stream); n == 0 {
		t.Errorf("no odwatch_dependency_error series")
	}
	if got := metricValue(t, r.reg, "odwatch_dependencies", map[string]string{"stream": "payroll", "state": "holding"}); got <= 0 {
		t.Errorf("odwatch_dependencies{state=holding} = %v", got)
	}
	for _, e := range r.sink.snapshot() {
		if strings.Contains(e.DependencyText, "bonus") {
			t.Errorf("event for a dependency on an absent column: %s %s", e.Type, e.DependencyText)
		}
	}
	if n := seriesCount(t, r.reg, "odwatch_dependency_error", map[string]string{"stream": "payroll", "dependency": "{}: salary ~ bonus (asc)"}); n != 0 {
		t.Errorf("error series for a dependency on an absent column: %v", n)
	}
	if got := metricValue(t, r.reg, "odwatch_dependencies", map[string]string{"stream": "payroll", "state": "pinned"}); got != 1 {
		t.Errorf("odwatch_dependencies{state=pinned} = %v, want 1", got)
	}
}
