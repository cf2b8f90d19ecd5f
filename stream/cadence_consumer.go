package stream

import (
	"slices"
)

// dispatchCheck is dispatch for two cadences: the window's delta to the
// checker and, every DiscoverEvery records, a snapshot to discovery.
// replay marks a check lost in a crash, dispatched by restore.
func (s *streamRun) dispatchCheck(endSeq uint64, replay bool) {
	s.evalSeq = max(s.evalSeq, endSeq+1)
	job := s.checkDelta(endSeq)
	job.replay, job.gen = replay, s.mb.gen.Load()
	if s.m.stateWriter != nil {
		job.next = make(map[int32]int64, len(s.next))
		for p, o := range s.next {
			job.next[p] = o
		}
	}
	s.mb.mu.Lock()
	s.mb.feed.checks = append(s.mb.feed.checks, job)
	s.mb.feed.gate.setChecks(true)
	s.mb.mu.Unlock()
	if s.cfg.discoveryPoint(endSeq) {
		s.dispatchDiscovery(endSeq, replay)
	}
	s.mb.notify()
}

// dispatchDiscovery hands the window (ending at endSeq) to discovery, and
// keeps its records in the store until the check that merges its result
// (endSeq + DiscoverEvery) is saved, so that a restart can run it again
// (rerun). A live discovery due while the previous live one still waits
// replaces it (skipped); a rerun is never skipped.
func (s *streamRun) dispatchDiscovery(endSeq uint64, rerun bool) {
	dj := &discoveryJob{snap: s.win.Snapshot(), endSeq: endSeq, rerun: rerun, gen: s.mb.gen.Load()}
	if len(s.holds) == maxHolds {
		s.holds = slices.Delete(s.holds, 0, 1)
	}
	s.holds = append(s.holds, evictHold{end: endSeq + uint64(s.cfg.DiscoverEvery), bounds: s.win.EvictionBounds()})
	f := &s.mb.feed
	s.mb.mu.Lock()
	inOrder := s.m.hooks.ordered()
	if n := len(f.discs); !rerun && !inOrder && n > 0 && !f.discs[n-1].rerun {
		s.m.metrics.Discoveries.WithLabelValues(s.name, "skipped").Inc()
		s.log.Warn("discovery skipped: the previous one is still running", "window_end", f.discs[n-1].endSeq)
		delete(f.rerun, f.discs[n-1].endSeq)
		f.discs = f.discs[:n-1]
	}
	f.discs = append(f.discs, dj)
	if rerun || inOrder {
		f.rerun[endSeq] = true
	}
	s.mb.mu.Unlock()
	select {
	case f.discWake <- struct{}{}:
	default:
	}
}

// restoreCadence is restore's step for two cadences, called with the
// window as it stood after the record endSeq (restore appends the stored
// records in arrival order). What a crash lost is dispatched again from
// the records the store kept (dispatchDiscovery's holds): every check
// after the last saved one (replayed, none coalesced), and every discovery
// whose result is not merged yet (the last one started at or before the
// saved check (saved, the evaluation the store holds), and any started
// after it), each merged at its own point.
// The events and ids are then those of an uninterrupted run; the first
// replayed check counts every dependency exactly, where the uninterrupted
// run may have kept a skipped one's last exact count (the errors an event
// carries may differ, not its type, window or id).
func (s *streamRun) restoreCadence(endSeq uint64, saved savedTracker) {
	if !s.countBoundary(endSeq) || s.win.Len() < s.cfg.Window {
		return
	}
	if !saved.ok || endSeq > saved.end {
		s.dispatchCheck(endSeq, true)
		return
	}
	if s.cfg.discoveryPoint(endSeq) && endSeq+uint64(s.cfg.DiscoverEvery) > saved.end {
		s.dispatchDiscovery(endSeq, true)
	}
}

// checkDelta takes the window's change since the previous job
// (eval.Cursor.Delta). The whole window goes when there is no previous
// job, or the checker or drop asked for it (feed.resync).
func (s *streamRun) checkDelta(endSeq uint64) *checkJob {
	f := &s.mb.feed
	s.mb.mu.Lock()
	reset := !s.cursor.Fed() || f.resync
	f.resync = false
	s.mb.mu.Unlock()
	return &checkJob{endSeq: endSeq, delta: s.cursor.Delta(s.win, reset), info: s.win.Info(s.name, s.cfg.Topic, endSeq)}
}
