package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/alerts/schematest"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
)

func mustParse(t *testing.T, s string) discovery.Dependency {
	t.Helper()
	d, err := discovery.ParseDependency(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// payrollCSV is a payroll file: tax = perc% of salary, perc set by the
// salary's bracket; from row errFrom to errTo, 5% of the rows have a
// percentage with a zero appended.
func payrollCSV(n, errFrom, errTo int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("position,salary,perc,tax\n")
	for i := range n {
		salary := 1000 + rng.IntN(1000)*100
		perc := 10 + salary/20000*5
		if i >= errFrom && i < errTo && rng.Float64() < 0.05 {
			perc *= 10
		}
		fmt.Fprintf(&b, "%s,%d,%d,%d\n", []string{"clerk", "analyst", "manager"}[rng.IntN(3)], salary, perc, perc*salary/100)
	}
	return b.String()
}

// withTime adds a ts column to the CSV: row i at replayEpoch + i seconds.
func withTime(csv string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(csv, "\n"), "\n") {
		if i == 0 {
			b.WriteString(line + ",ts\n")
			continue
		}
		fmt.Fprintf(&b, "%s,%s\n", line, replayEpoch.Add(time.Duration(i-1)*time.Second).Format(time.RFC3339))
	}
	return b.String()
}

var replayEpoch = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

// TestReplayCommand: replay prints the events of a file as JSON Lines
// (each one an event of the published schema), the same ones on a second
// run, with the violated and restored story of the injected errors, and a
// summary on standard error.
func TestReplayCommand(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "payroll.csv", withTime(payrollCSV(4000, 1500, 2500)))
	args := []string{"replay", path, "--window", "500", "--every", "250", "--epsilon", "0.01", "--time-field", "ts", "--exclude", "ts", "--format", "json"}
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	salTax := alerts.DependencyID(mustParse(t, "{}: salary ~ tax (asc)"))
	schema, err := schematest.Compile([]byte(alerts.EventSchema()))
	if err != nil {
		t.Fatal(err)
	}
	story := map[alerts.EventType]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if err := schema.Validate([]byte(line)); err != nil {
			t.Fatalf("line %q does not conform to the event schema: %v", line, err)
		}
		var e alerts.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Involves(salTax) {
			story[e.Type]++
		}
		if e.Type == alerts.EventViolated && (e.Explanation == nil || len(e.Samples) == 0 || e.Samples[0].Expected == nil) {
			t.Errorf("violated event %s without its explanation or expected values: %s", e.DependencyText, line)
		}
		// The window of records 0..end_seq ends at the time of record end_seq.
		if want := replayEpoch.Add(time.Duration(e.Window.EndSeq) * time.Second); !e.Time.Equal(want) || !e.Window.EndTime.Equal(want) {
			t.Errorf("event time %v, window end %v; want the --time-field time of its last record, %v", e.Time, e.Window.EndTime, want)
		}
		if e.Stream != "payroll" || e.Window.Topic != "payroll" {
			t.Errorf("event of stream %q topic %q, want payroll", e.Stream, e.Window.Topic)
		}
	}
	if story[alerts.EventViolated] != 1 || story[alerts.EventRestored] != 1 {
		t.Errorf("events involving salary ~ tax: %v, want one violated and one restored", story)
	}
	if !strings.Contains(errOut.String(), "replay: 4000 records, 15 evaluations") || !strings.Contains(errOut.String(), "events: violated ") {
		t.Errorf("summary:\n%s", errOut.String())
	}
	var again, errAgain bytes.Buffer
	if code := run(args, &again, &errAgain); code != 0 || again.String() != out.String() {
		t.Errorf("second run: exit %d, output differs: %v", code, again.String() != out.String())
	}
	var text, errText bytes.Buffer
	if code := run(args[:len(args)-2], &text, &errText); code != 0 || !strings.Contains(text.String(), " VIOLATED payroll ") ||
		!strings.Contains(text.String(), "violating records in the window") || !strings.Contains(text.String(), "events: violated ") {
		t.Errorf("text output (exit %d):\n%s", code, text.String())
	}
}

// TestReplayFileTimes: without --time-field a file's events carry no time
// (no year 1, and no clock time in the text where the break starts); a --time-field value that is no time is an error naming the
// line; a window larger than the input says so, and how to fix it.
func TestReplayFileTimes(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, "payroll.csv", payrollCSV(2000, 500, 2000))
	var out, errOut bytes.Buffer
	if code := run([]string{"replay", path, "--window", "500", "--every", "250", "--format", "json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if out.Len() == 0 || strings.Contains(out.String(), "0001-01-01") || strings.Contains(out.String(), `"time"`) || strings.Contains(out.String(), `"end_time"`) {
		t.Errorf("events of a file without times:\n%s", out.String())
	}
	var text, errText bytes.Buffer
	if code := run([]string{"replay", path, "--window", "500", "--every", "250"}, &text, &errText); code != 0 ||
		!strings.Contains(text.String(), "violating records in the window") || strings.Contains(text.String(), "(00:00:00)") {
		t.Errorf("text events of a file without times (exit %d): the record the break starts at has no time to show\n%s", code, text.String())
	}
	bad := writeTemp(t, "bad.csv", "a,ts\n1,2026-11-30T01:00:00Z\n2,yesterday\n")
	var b, errB bytes.Buffer
	if code := run([]string{"replay", bad, "--window", "2", "--time-field", "ts"}, &b, &errB); code != exitUsage ||
		!strings.Contains(errB.String(), "line 3: --time-field ts: \"yesterday\" is not an ISO 8601 time") {
		t.Errorf("bad time: exit %d\n%s", code, errB.String())
	}
	var s, errS bytes.Buffer
	code := run([]string{"replay", path, "--window", "5000"}, &s, &errS)
	if code != exitUsage || !strings.Contains(errS.String(), "2000 records, fewer than --window 5000: no window was evaluated") ||
		!strings.Contains(errS.String(), "lower --window to at most 2000") || !strings.Contains(s.String(), "replay: 2000 records, 0 evaluations") {
		t.Errorf("window larger than the file: exit %d\nstdout %s\nstderr %s", code, s.String(), errS.String())
	}
	var e, errE bytes.Buffer
	code = run([]string{"replay", writeTemp(t, "header.csv", "a,b\n")}, &e, &errE)
	if code != exitUsage || !strings.Contains(errE.String(), "no records: nothing was evaluated") || strings.Contains(errE.String(), "at most 0") {
		t.Errorf("a file of no records: exit %d\nstderr %s", code, errE.String())
	}
}

// TestReplayUsageErrors: at most three lines on standard error, exit 2.
func TestReplayUsageErrors(t *testing.T) {
	path := writeTemp(t, "p.csv", payrollCSV(10, 0, 0))
	for _, args := range [][]string{
		{"replay"},
		{"replay", path, path},
		{"replay", path, "--topic", "t"},
		{"replay", "--topic", "t"},
		{"replay", path, "--windw", "5"},
		{"replay", path, "--margin", "-2"},
		{"replay", path, "--window", "0"},
		{"replay", path, "--format", "xml"},
		{"replay", path + ".absent"},
		{"replay", "--brokers", "x:1", "--topic", "t", "--from", "yesterday"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if code != 2 || len(lines) > 3 || strings.Contains(errOut.String(), "<nil>") {
			t.Errorf("%v: exit %d, stderr (%d lines):\n%s", args[1:], code, len(lines), errOut.String())
		}
	}
}

// TestReplayTopic: replay reads a topic range from a broker, bounded by
// offsets, with the same events as the same records from a file.
func TestReplayTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	addr, stop, err := demo.StartBroker(ctx, map[string]int{"payroll": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "payroll", Count: 4000,
		CleanRecords: 1500, ErrorRate: 0.05, StopErrorsAfter: 2500, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"replay", "--brokers", addr, "--topic", "payroll", "--from", "500", "--to", "3500",
		"--window", "500", "--every", "250", "--epsilon", "0.01", "--format", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "replay: 3000 records, 11 evaluations") {
		t.Errorf("summary:\n%s", errOut.String())
	}
	var violated int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e alerts.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Window.StartOffsets[0] < 500 || e.Window.EndOffsets[0] >= 3500 {
			t.Errorf("event window %v-%v outside [500, 3500)", e.Window.StartOffsets, e.Window.EndOffsets)
		}
		if e.Type == alerts.EventViolated {
			violated++
		}
	}
	if violated == 0 {
		t.Errorf("no violated event in a range with errors:\n%s", out.String())
	}
}
