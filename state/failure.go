package state

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// failure is the first fatal condition Pebble reported about the store
// outside a call's return value: on-disk corruption found by a read or a
// background job (the DataCorruption event), or an invariant violation
// (Logger.Fatalf). Once set, every Store method returns it, so the caller
// stops with one error naming the directory instead of the panic Pebble's
// default handlers would raise.
type failure struct {
	mu   sync.Mutex
	err  error
	done chan struct{}
}

func newFailure() *failure { return &failure{done: make(chan struct{})} }

// set records err unless a failure is already recorded.
func (f *failure) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
		close(f.done)
	}
}

func (f *failure) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// corruptError is the error of a damaged store: one line naming the
// directory and what is wrong, matching ErrCorrupt.
func corruptError(dir, what string) error {
	return fmt.Errorf("state %s: %w: %s", dir, ErrCorrupt, oneLine(what))
}

// oneLine joins the lines of a library's message, so that an error stays one
// log line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// eventListener routes Pebble's corruption reports into f instead of its
// default handler, which calls Logger.Fatalf. They are not logged here: the
// failure is returned by the read that met it and by every later call, and
// Failed tells the owner, who reports it once. WALCreated keeps the write-ahead log mark's view of the current log.
// Flushes and compactions are logged at debug level (what was written to
// which level, and what kind of compaction: a rewrite, a move, a
// delete-only one).
func eventListener(dir string, log *slog.Logger, f *failure, wal *walMark) *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			log.Debug("pebble "+info.String(), "source", "pebble")
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			log.Debug("pebble "+info.String(), "source", "pebble")
		},
		WALCreated: func(info pebble.WALCreateInfo) {
			if info.Err == nil {
				wal.created(info.Path)
			}
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			f.set(corruptError(dir, filepath.Base(info.Path)+": "+info.Details.Error()))
		},
		BackgroundError: func(err error) {
			if pebble.IsCorruptionError(err) {
				f.set(corruptError(dir, err.Error()))
				return
			}
			log.Error("pebble background error", "source", "pebble", "err", oneLine(err.Error()))
		},
	}
}

// pebbleLogger routes Pebble's logging to slog. Pebble's info lines are
// chatty and operational, so they go to debug.
type pebbleLogger struct {
	log  *slog.Logger
	dir  string
	fail *failure
}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "source", "pebble")
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(oneLine(fmt.Sprintf(format, args...)), "source", "pebble")
}

// Fatalf is called by Pebble on conditions it cannot continue from (an
// invariant violation, a failed WAL or manifest write). Rather than
// panicking or exiting from inside Pebble, it records the failure and
// returns: from then on every Store method (writes included, even one whose
// commit Pebble reported as done) returns the error, and the caller stops.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.fail.set(fmt.Errorf("state %s: %w: %s", l.dir, ErrFailed, oneLine(fmt.Sprintf(format, args...))))
}
