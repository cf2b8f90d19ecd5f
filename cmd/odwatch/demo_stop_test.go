package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
)

// TestDemoCtrlCStopsFast interrupts the demo (main turns Ctrl-C into the
// cancellation of ctx) once it evaluates: it returns within 2 s and logs no
// warning (the monitor commits and leaves its group before the in-process
// broker stops).
func TestDemoCtrlCStopsFast(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut testkit.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, []string{"--metrics-addr", "", "--rate", "2000", "--window", "500", "--every", "500", "--seed", "3"}, &out, &errOut)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "DISCOVERED") {
		if time.Now().After(deadline) {
			t.Fatalf("no event within 60 s\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		select {
		case err := <-done:
			t.Fatalf("demo stopped early: %v\nstderr:\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	start := time.Now()
	stopDemo(t, cancel, done)
	took := time.Since(start)
	t.Logf("demo stopped %v after Ctrl-C", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("demo stopped %v after Ctrl-C, want within 2 s", took)
	}
	if strings.Contains(errOut.String(), "level=WARN") || strings.Contains(errOut.String(), "level=ERROR") {
		t.Errorf("warnings on Ctrl-C:\n%s", errOut.String())
	}
}

// stopDemo cancels a running demo (as Ctrl-C does) and waits up to 30 s for
// runDemo, started in a goroutine that sends its result on done, to return
// without an error.
func stopDemo(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo returned %v after Ctrl-C", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop within 30 s of Ctrl-C")
	}
}
