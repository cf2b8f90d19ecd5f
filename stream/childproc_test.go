package stream

import (
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
)

// startChild re-executes the test binary running only the test named
// helper, with env added to this process's environment, its output on
// standard error under -v. kill sends SIGKILL (no store close, no group
// leave: a crash) and reaps the child; it is idempotent and also runs at
// the test's cleanup.
func startChild(t testing.TB, helper string, env ...string) (kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", helper, err)
	}
	var done atomic.Bool
	kill = func() {
		if done.CompareAndSwap(false, true) {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(kill)
	return kill
}
