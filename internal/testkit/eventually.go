package testkit

import (
	"testing"
	"time"
)

// maxPollInterval bounds the pause between two polls of Eventually: the
// first polls follow each other closely, so a condition about to hold is
// seen at once, and a long wait costs little CPU.
const maxPollInterval = 20 * time.Millisecond

// Eventually polls cond until it holds, and fails the test (what names
// the condition) when timeout passes first. Tests synchronise with it
// rather than with sleeps: it returns as soon as cond holds.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyEvery(t, timeout, maxPollInterval, what, cond)
}

// EventuallyEvery is Eventually with pauses of at most every between two
// polls, for a condition that is costly to ask (one that runs a process or
// reads a topic) and would load the machine polled every few milliseconds.
func EventuallyEvery(t testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := min(time.Millisecond, every)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, every)
	}
}
