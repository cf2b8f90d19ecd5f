package integration

import (
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestEndToEndKcat: payroll JSON produced by kcat, half in lz4 batches and
// half in zstd ones, goes through odwatch run on a real broker; kcat reads
// the events topic: salary ~ tax is discovered on the clean records and
// violated once the data-entry errors start, each event in CloudEvents
// binary mode (ce_* headers matching the JSON body, keyed by the
// dependency).
func TestEndToEndKcat(t *testing.T) {
	requireKcat(t)
	c := kafkatest.Start(t, kafkatest.Options{})
	for _, topic := range []string{"src", "payroll", "events"} {
		c.CreateTopic(t, topic, 1, nil)
	}
	const total = 3000
	generate(t, c.Bootstrap(), "src", "--count", "3000", "--clean", "1500", "--error-rate", "0.1", "--rate", "0", "--seed", "7")
	var lines []string
	for _, r := range kcatConsume(t, c.Bootstrap(), "src") {
		lines = append(lines, string(r.Value))
	}
	if len(lines) != total {
		t.Fatalf("kcat read %d generated records, want %d", len(lines), total)
	}
	began := time.Now()
	p := startOdwatch(t, "odwatch", "--brokers", c.Bootstrap(), "--topic", "payroll", "--events-topic", "events",
		"--group", "e2e", "--state-dir", t.TempDir(), "--window", "500", "--every", "500", "--discover-every", "500",
		"--epsilon", "0.01")
	kcatProduce(t, c.Bootstrap(), "payroll", "lz4", lines[:total/2])
	kcatProduce(t, c.Bootstrap(), "payroll", "zstd", lines[total/2:])
	waitEvaluated(t, p, "payroll", total, 500)
	t.Logf("odwatch evaluated %d records %v after its start", total, time.Since(began).Round(10*time.Millisecond))
	if n := p.Metric(t, "odwatch_records_rejected_total"); n != 0 {
		t.Errorf("%v records rejected, want none (lz4 and zstd batches decode)", n)
	}
	if n := p.Metric(t, "odwatch_records_consumed_total", "stream=payroll"); n != total {
		t.Errorf("consumed %v records, want %d", n, total)
	}

	var recs []kcatRecord
	testkit.EventuallyEvery(t, 30*time.Second, pollEvery, "the violated event on the events topic", func() bool {
		recs = kcatConsume(t, c.Bootstrap(), "events")
		for _, e := range events(t, recs) {
			if e.Type == alerts.EventViolated && e.DependencyText == "{}: salary ~ tax (asc)" {
				return true
			}
		}
		return false
	})
	seen := map[alerts.EventType]int{}
	for i, e := range events(t, recs) {
		h := recs[i].Headers
		want := map[string]string{
			"ce_specversion": "1.0", "ce_id": e.ID, "ce_type": "io.odwatch.dependency." + string(e.Type),
			"ce_source": "odwatch/payroll", "ce_subject": e.DependencyID, "content-type": "application/json",
		}
		for k, v := range want {
			if h[k] != v {
				t.Errorf("event %s: header %s = %q, want %q", e.ID, k, h[k], v)
			}
		}
		if recs[i].Key != e.DependencyID {
			t.Errorf("event %s: key %q, want the dependency id %q", e.ID, recs[i].Key, e.DependencyID)
		}
		if e.DependencyText == "{}: salary ~ tax (asc)" {
			seen[e.Type]++
		}
	}
	if seen[alerts.EventDiscovered] != 1 || seen[alerts.EventViolated] != 1 {
		t.Errorf("salary ~ tax events %v, want one discovered and one violated", seen)
	}
}
