package testkit

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's CPU time so far (user + system, all threads):
// what a benchmark on a loaded machine measures better than wall time,
// since the time spent waiting for a core is not counted.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
