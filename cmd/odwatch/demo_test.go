package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/state"
)

// syncBuffer is a strings.Builder safe for the demo goroutine to write while
// the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDemoShowsSalaryTaxViolation runs the demo as a user would and checks
// its promise: a violated event for the salary/tax dependency within two
// windows of the errors starting.
func TestDemoShowsSalaryTaxViolation(t *testing.T) {
	const clean, window = 4000, 1000
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, []string{
			"--metrics-addr", "", "--rate", "4000", "--clean", strconv.Itoa(clean),
			"--window", strconv.Itoa(window), "--every", "500", "--seed", "7", "--duration", "2m",
		}, &out, &errOut)
	}()
	// "10:02:09 VIOLATED   payroll {}: salary ~ tax (asc)\n   error ...; window p0:4000-4999 (1000 records)"
	re := regexp.MustCompile(`VIOLATED +payroll \{[^}]*\}: (salary ~ tax|tax ~ salary) .*\n.*; window p0:(\d+)-(\d+)`)
	deadline := time.Now().Add(90 * time.Second)
	var m []string
	for time.Now().Before(deadline) {
		if m = re.FindStringSubmatch(out.String()); m != nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("demo stopped early: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if m == nil {
		t.Fatalf("no violated event for salary/tax within the deadline\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	end, _ := strconv.Atoi(m[3])
	if end >= clean+2*window {
		t.Errorf("violated at window end offset %d, want within two windows of the errors starting at %d", end, clean)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo returned %v after Ctrl-C", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop within 30 s of cancellation")
	}
	if !strings.Contains(out.String(), "DISCOVERED") {
		t.Errorf("no discovered events printed")
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
	var out, errOut syncBuffer
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
		Dependency: dep, DependencyText: dep.String(), ErrorNow: 0.001, Removals: 2, Epsilon: 0.01, Margin: 0.004,
		Window: alerts.WindowInfo{Topic: "payroll", StartOffsets: map[int32]int64{0: 0}, EndOffsets: map[int32]int64{0: 1999}, Records: 2000},
	}
	want := "10:02:03 DISCOVERED payroll {}: salary ~ tax (asc)\n" +
		"         sorting by salary sorts tax, except 2 rows (0.1%); window p0:0-1999 (2000 records)\n"
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
