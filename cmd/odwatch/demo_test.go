package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	// "... VIOLATED payroll {}: salary ~ tax (asc) ... window payroll p0:4000-4999 ..."
	re := regexp.MustCompile(`VIOLATED payroll \{[^}]*\}: (salary ~ tax|tax ~ salary) .* window payroll p0:(\d+)-(\d+)`)
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
