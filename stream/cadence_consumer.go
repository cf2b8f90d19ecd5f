package stream

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/odwatch/odwatch/stream/internal/pace"
)

// dispatchCheck is dispatch for two cadences: the window's delta to the
// checker and, when the pacer starts one there, a snapshot to discovery.
// replay marks a check lost in a crash, dispatched by restore.
func (s *streamRun) dispatchCheck(endSeq uint64, replay bool) {
	lag := s.totalLag()
	s.queueCheck(endSeq, replay)
	s.mb.mu.Lock()
	start := s.paceLocked(endSeq, lag, int64(len(s.mb.feed.checks)-1)*int64(s.cfg.Every), replay) == pace.VerdictStart
	s.mb.mu.Unlock()
	if start {
		s.dispatchDiscovery(endSeq, replay, false, lag)
	}
	s.mb.notify()
}

// queueCheck queues the check job of window end endSeq.
func (s *streamRun) queueCheck(endSeq uint64, replay bool) {
	s.evalSeq = max(s.evalSeq, endSeq+1)
	job := s.checkDelta(endSeq)
	job.replay, job.gen = replay, s.mb.gen.Load()
	if s.m.stateWriter != nil {
		job.next = maps.Clone(s.next)
	}
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	job.merging = s.pacerLocked().Merging(endSeq)
	s.mb.feed.checks = append(s.mb.feed.checks, job)
	s.mb.feed.gate.SetChecks(true)
}

// paceLocked is the pacer's verdict at the check of window end endSeq
// with lag records behind it and queued not checked, under mb.mu; replay: a check restore
// dispatches (pace.Pacer.Restored).
func (s *streamRun) paceLocked(endSeq uint64, lag, queued int64, replay bool) pace.Verdict {
	if replay {
		return s.pacerLocked().Restored(endSeq)
	}
	return s.pacerLocked().Next(endSeq, time.Now(), lag, queued)
}

// pacerLocked is the stream's pacer, made at its first use; under mb.mu.
func (s *streamRun) pacerLocked() *pace.Pacer {
	if s.mb.feed.pace == nil {
		s.mb.feed.pace = pace.New(s.cfg.Window, s.cfg.Every, s.cfg.DiscoverEvery, s.cfg.autoDiscover, s.m.hooks.paceOptions())
	}
	return s.mb.feed.pace
}

// totalLag is the records in the topic past the last one consumed.
func (s *streamRun) totalLag() int64 {
	var lag int64
	for _, l := range s.lag {
		lag += l
	}
	return lag
}

// mustAwait reports whether a count window's evaluation at endSeq must
// wait: two cadences, for an open discovery (the pacer's verdict); one,
// until the evaluator took the window before it (none is skipped).
func (s *streamRun) mustAwait(endSeq uint64) bool {
	if s.cfg.Interval > 0 {
		return false
	}
	lag := s.totalLag()
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	if !s.cfg.twoCadence() {
		return s.mb.pending != nil
	}
	return s.paceLocked(endSeq, lag, 0, false) == pace.VerdictWait
}

// awaitDiscovery holds the consumer while the evaluation of window end
// endSeq must wait (mustAwait): the checks queued before it drain, the gate
// opens and the discovery ends (or the evaluator takes the window before
// it). Nothing is consumed meanwhile: Kafka holds the records, the lag
// grows. It returns ctx's error when ctx is done first.
func (s *streamRun) awaitDiscovery(ctx context.Context, endSeq uint64) error {
	for waited := false; s.mustAwait(endSeq); waited = true {
		if !waited && s.cfg.twoCadence() {
			s.m.metrics.Discoveries.WithLabelValues(s.name, "waited").Inc()
			s.log.Debug("consumption waits for discovery", "window_end", endSeq, "lag", s.totalLag())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.mb.feed.consumerWake:
		}
	}
	return nil
}

// dispatchDiscovery hands the window (ending at endSeq, lag records behind
// it) to discovery, started as the pacer says, and keeps its records in the
// store until its latest merge (endSeq + DiscoverEvery) is saved, so that
// a restart can run it again (rerun). early: merged on its own window's
// check too (eval.Finished.Early).
func (s *streamRun) dispatchDiscovery(endSeq uint64, rerun, early bool, lag int64) {
	dj := &discoveryJob{snap: s.win.Snapshot(), endSeq: endSeq, rerun: rerun, early: early, gen: s.mb.gen.Load()}
	if len(s.holds) == maxHolds {
		s.holds = slices.Delete(s.holds, 0, 1)
	}
	s.holds = append(s.holds, evictHold{end: endSeq + uint64(s.cfg.DiscoverEvery), bounds: s.win.EvictionBounds()})
	f := &s.mb.feed
	s.mb.mu.Lock()
	dj.mergeAt = s.pacerLocked().Start(endSeq, time.Now(), lag)
	f.discs = append(f.discs, dj)
	if rerun || s.m.hooks.ordered() {
		f.rerun[endSeq] = true
	}
	s.mb.mu.Unlock()
	wake(f.discWake)
}

// restoreCadence is restore's step for two cadences, called with the
// window as it stood after the record endSeq (restore appends the stored
// records in arrival order). What a crash lost is dispatched again from
// the records the store kept (dispatchDiscovery's holds): every check
// after the last saved one (replayed, none coalesced), and every discovery
// whose result is not merged yet (the last one started at or before the
// saved check (saved, the evaluation the store holds), and any started
// after it), each merged at its own point. With auto, whose starts depend
// on time, a discovery of the saved check's window is run instead (the
// pacer's first start), merged into the first check after it ends, or on
// the saved check's window when none follows: the checker takes that
// window first (not checked again, runCheck).
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
	if s.cfg.autoDiscover {
		if endSeq == saved.end { // the one a crash may have lost, on the saved check's window
			s.queueCheck(endSeq, true) // not checked again (runCheck); its window is merged on (mergeFound)
			s.dispatchDiscovery(endSeq, false, true, 0)
			s.mb.notify()
		}
		return
	}
	if !s.cfg.discoveryPoint(endSeq) {
		return
	}
	s.mb.mu.Lock()
	mergeAt, _ := s.pacerLocked().MergeAt(endSeq, 0)
	s.mb.mu.Unlock()
	if mergeAt > saved.end {
		s.dispatchDiscovery(endSeq, true, false, 0)
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
