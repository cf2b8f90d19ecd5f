package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
)

// demoBlock is one printed event: its headline and indented lines.
type demoBlock struct {
	typ, text string
	end       int // window end offset
}

var (
	demoHeadline = regexp.MustCompile(`^\d\d:\d\d:\d\d ([A-Z]+) `)
	demoWindow   = regexp.MustCompile(`; window p0:(\d+)-(\d+) `)
)

// demoBlocks splits the demo's output into events.
func demoBlocks(out string) []demoBlock {
	var blocks []demoBlock
	for _, line := range strings.Split(out, "\n") {
		if m := demoHeadline.FindStringSubmatch(line); m != nil {
			blocks = append(blocks, demoBlock{typ: m[1], text: line})
			continue
		}
		if len(blocks) > 0 && strings.HasPrefix(line, "         ") {
			b := &blocks[len(blocks)-1]
			b.text += "\n" + line
			if m := demoWindow.FindStringSubmatch(line); m != nil {
				b.end, _ = strconv.Atoi(m[2])
			}
		}
	}
	return blocks
}

// TestDemoShowsSalaryTaxViolation runs the demo as a user would and checks
// its promise: one violated event tells the salary/tax break (leading it or
// among its related rules) within two windows of the errors starting, no
// other violated event of its window shares a column with it, and when the
// errors stop a restored event tells the recovery.
func TestDemoShowsSalaryTaxViolation(t *testing.T) {
	t.Parallel()
	const clean, window, stopAfter = 4000, 1000, 6000
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut testkit.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, []string{
			"--metrics-addr", "", "--rate", "4000", "--clean", strconv.Itoa(clean),
			"--window", strconv.Itoa(window), "--every", "500", "--seed", "7", "--duration", "2m",
			"--stop-errors-after", strconv.Itoa(stopAfter),
		}, &out, &errOut)
	}()
	// "10:02:09 VIOLATED   payroll {}: salary ~ perc (asc)\n   error ...; window p0:4000-4999 (1000 records)\n   related {}: salary ~ tax (asc) ..."
	salTax := regexp.MustCompile(`\{[^}]*\}: (salary ~ tax|tax ~ salary) `)
	find := func(typ string) *demoBlock {
		for _, b := range demoBlocks(out.String()) {
			if b.typ == typ && salTax.MatchString(b.text) {
				return &b
			}
		}
		return nil
	}
	deadline := time.Now().Add(90 * time.Second)
	var v, r *demoBlock
	for time.Now().Before(deadline) {
		if v, r = find("VIOLATED"), find("RESTORED"); v != nil && r != nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("demo stopped early: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if v == nil || r == nil {
		t.Fatalf("no violated and restored events for salary/tax within the deadline\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if v.end >= clean+2*window {
		t.Errorf("violated at window end offset %d, want within two windows of the errors starting at %d", v.end, clean)
	}
	if !strings.Contains(v.text, "related ") {
		t.Errorf("the violated event carries no related rules:\n%s", v.text)
	}
	// The whole story: the errors' source, where the break starts and what
	// the rule expected (issue 23).
	for _, want := range []string{"cause: ", "have source=" + demo.PayrollFaultySource + ", against ", "violating records in the window", "(expected "} {
		if !strings.Contains(v.text, want) {
			t.Errorf("the violated event does not say %q:\n%s", want, v.text)
		}
	}
	// One cause, one alert: the violated events of the window share no
	// column (rules that do are one event). The data-entry error breaks
	// two facts on disjoint columns: tax_group <-> perc, and salary ~ tax
	// with salary <-> tax related.
	owner := map[string]string{}
	for _, b := range demoBlocks(out.String()) {
		if b.typ != "VIOLATED" || b.end != v.end {
			continue
		}
		head, _, _ := strings.Cut(b.text, "\n")
		_, text, _ := strings.Cut(head, "payroll ")
		d, err := discovery.ParseDependency(strings.TrimSpace(text))
		if err != nil {
			t.Fatalf("violated event %q: %v", head, err)
		}
		for _, c := range d.Columns() {
			if o, ok := owner[c]; ok {
				t.Errorf("violated events %q and %q in the window ending at %d share %s (one cause, one alert)\nstdout:\n%s", o, d, v.end, c, out.String())
			}
			owner[c] = d.String()
		}
	}
	if r.end < stopAfter {
		t.Errorf("restored at window end offset %d, before the errors stopped at %d", r.end, stopAfter)
	}
	stopDemo(t, cancel, done)
	if !strings.Contains(out.String(), "DISCOVERED") {
		t.Errorf("no discovered events printed")
	}
	checkREADMEDemoRules(t, v.text)
}

// checkREADMEDemoRules: every rule of the demo's violated event (its
// leader and its related rules) is named in the README's paragraph on the
// demo, so that what the README says the demo prints is what it prints.
func checkREADMEDemoRules(t *testing.T, violated string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(readme)
	start := strings.Index(md, "The demo starts an in-process Kafka broker")
	end := strings.Index(md[max(start, 0):], "\n\n")
	if start < 0 || end < 0 {
		t.Fatal("README: no paragraph starting 'The demo starts an in-process Kafka broker'")
	}
	para := strings.Join(strings.Fields(md[start:start+end]), " ")
	rule := regexp.MustCompile(`(?m)(?:VIOLATED +payroll |related )(\{[^}]*\}: .+?)(?:: error|$)`)
	matches := rule.FindAllStringSubmatch(violated, -1)
	if len(matches) < 2 {
		t.Errorf("found %d rules in the violated event, want a leader and related rules:\n%s", len(matches), violated)
	}
	for _, m := range matches {
		if !strings.Contains(para, "`"+m[1]+"`") {
			t.Errorf("the demo's violated event names %s, which the README's demo paragraph does not:\n%s", m[1], violated)
		}
	}
}

// TestDemoStopsWhenMonitorFails: a monitor that cannot run (here its
// store holds a window record it cannot decode) ends the demo with the
// error, without waiting for Ctrl-C or --duration.
func TestDemoStopsWhenMonitorFails(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(&state.Commit{Stream: "payroll", Records: []state.Record{{Offset: 0, Seq: 0, Value: []byte{0xff, 0xff, 0xff}}},
		NextOffset: map[int32]int64{0: 1}, NextSeq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var out, errOut testkit.SyncBuffer
	go func() {
		done <- runDemo(t.Context(), []string{"--metrics-addr", "", "--state-dir", dir, "--duration", "10m"}, &out, &errOut)
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("demo returned nil on a store it cannot restore\nstderr:\n%s", errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("demo still running 60 s after its monitor failed")
	}
}

// TestDemoEventText: a discovered event says the rule in words with its
// error (not "0 -> 0"); a violated one the error change against eps and
// margin; both name the window, and samples follow.
func TestDemoEventText(t *testing.T) {
	dep := discovery.Dependency{Kind: discovery.KindOC, Left: "salary", Right: "tax"}
	e := alerts.Event{
		Type: alerts.EventDiscovered, Stream: "payroll", Time: time.Date(2026, 11, 30, 10, 2, 3, 0, time.Local),
		Dependency: dep, DependencyText: dep.String(), ErrorNow: 0.001, Removals: 2, Epsilon: 0.01, Margin: 0.004, Strength: 0.97,
		Window: alerts.WindowInfo{Topic: "payroll", StartOffsets: map[int32]int64{0: 0}, EndOffsets: map[int32]int64{0: 1999}, Records: 2000},
	}
	want := "10:02:03 DISCOVERED payroll {}: salary ~ tax (asc)\n" +
		"         sorting by salary sorts tax, except 2 rows (0.1%); strength 0.97; window p0:0-1999 (2000 records)\n"
	if got := demoEventText(e); got != want {
		t.Errorf("discovered:\n%s\nwant\n%s", got, want)
	}
	e.Type, e.ErrorBefore, e.ErrorNow, e.Removals = alerts.EventViolated, 0, 0.031, 62
	e.Samples = []alerts.Sample{{Topic: "payroll", Offset: 4123, Values: map[string]string{"tax": "12500", "salary": "5000"}}}
	want = "10:02:03 VIOLATED   payroll {}: salary ~ tax (asc)\n" +
		"         error 0% -> 3.1%, above epsilon 1% + margin 0.4%: 62 rows to remove; window p0:0-1999 (2000 records)\n" +
		"         e.g. payroll/0@4123 salary=5000 tax=12500\n"
	if got := demoEventText(e); got != want {
		t.Errorf("violated:\n%s\nwant\n%s", got, want)
	}
}

// TestDemoConfigAndIntro: the demo's flags, defaults or set, give a valid
// monitor configuration for the payroll topic, and the intro names the
// broker, the stream's settings and the status page only when served.
func TestDemoConfigAndIntro(t *testing.T) {
	for _, args := range [][]string{nil, {"--window", "500", "--every", "250", "--epsilon", "0.05", "--margin", "0", "--metrics-addr", ""}} {
		f := newDemoFlags()
		if err := f.fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg := f.monitorConfig("127.0.0.1:1", t.TempDir())
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if st := cfg.Streams[0]; st.Topic != demoTopic || st.Window != f.window || st.Every != f.every || st.Epsilon != f.eps || cfg.EventsTopic != demoEventsTopic {
			t.Errorf("%q: config %+v", args, cfg)
		}
		var out strings.Builder
		f.printIntro(&out, "127.0.0.1:1", "127.0.0.1:2", cfg.Streams[0].DiscoverEvery)
		intro := out.String()
		if !strings.Contains(intro, "in-process Kafka at 127.0.0.1:1") || !strings.Contains(intro, "window "+strconv.Itoa(f.window)+" records") ||
			!strings.Contains(intro, "discovered every "+strconv.Itoa(cfg.Streams[0].DiscoverEvery)) {
			t.Errorf("%q: intro %q", args, intro)
		}
		if served := strings.Contains(intro, "http://127.0.0.1:2/"); served != (f.metricsAddr != "") {
			t.Errorf("%q: intro %q names the status page: %v", args, intro, served)
		}
	}
}
