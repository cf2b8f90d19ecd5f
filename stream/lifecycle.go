package stream

import (
	"errors"
	"sync"
	"sync/atomic"
)

// phase is a Monitor's place in its life. The transitions, all under
// lifecycle.mu, are:
//
//	phaseCreated -> phaseRunning   Run starts
//	phaseRunning -> phaseClosing   Run returns: it releases what NewMonitor opened
//	phaseClosing -> phaseClosed    everything is released
//	phaseCreated -> phaseClosing   Close before Run: it releases everything itself
//
// and no other: Run in any phase but phaseCreated fails (called twice, or
// after Close); Close while Run runs (phaseRunning, phaseClosing) waits
// for phaseClosed, and after that returns at once.
type phase int32

const (
	phaseCreated phase = iota
	phaseRunning
	phaseClosing
	phaseClosed
)

// lifecycle is a Monitor's phase. Run and Close change it; Ready reads it
// without the lock.
type lifecycle struct {
	mu    sync.Mutex
	phase atomic.Int32
	// byClose: Close released everything (no Run), with error err.
	byClose bool
	err     error
	// done is closed on reaching phaseClosed.
	done chan struct{}
}

func newLifecycle() *lifecycle { return &lifecycle{done: make(chan struct{})} }

// is reports whether the monitor is in phase p.
func (l *lifecycle) is(p phase) bool { return phase(l.phase.Load()) == p }

// start moves phaseCreated -> phaseRunning for Run.
func (l *lifecycle) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.is(phaseCreated):
		l.phase.Store(int32(phaseRunning))
		return nil
	case l.byClose:
		return errors.New("monitor: Run after Close")
	default:
		return errors.New("monitor: Run called twice")
	}
}

// stop moves phaseRunning -> phaseClosing -> phaseClosed around release,
// when Run returns, and returns release's error.
func (l *lifecycle) stop(release func() error) error {
	l.mu.Lock()
	l.phase.Store(int32(phaseClosing))
	l.mu.Unlock()
	err := release()
	l.mu.Lock()
	l.phase.Store(int32(phaseClosed))
	close(l.done)
	l.mu.Unlock()
	return err
}

// close is Close: in phaseCreated it releases everything (to phaseClosed,
// holding the lock, so that a Run meanwhile finds it closed) and returns
// release's error, then and on every later call; otherwise it waits for
// Run to reach phaseClosed and returns nil.
func (l *lifecycle) close(release func() error) error {
	l.mu.Lock()
	switch {
	case l.is(phaseCreated):
		defer l.mu.Unlock()
		l.phase.Store(int32(phaseClosing))
		l.err, l.byClose = release(), true
		l.phase.Store(int32(phaseClosed))
		close(l.done)
		return l.err
	case l.byClose:
		defer l.mu.Unlock()
		return l.err
	}
	done := l.done
	l.mu.Unlock()
	<-done
	return nil
}
