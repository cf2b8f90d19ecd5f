package stream

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/odwatch/odwatch/stream/internal/eval"
)

// waitMerge waits, before the check of the window ending at endSeq, for
// the discovery that check merges when it was re-run after a restart (or,
// with inOrder, whenever it is running): the uninterrupted run merged it
// there. The check gate is open while it waits. It returns ctx's error.
func (s *evaluator) waitMerge(ctx context.Context, endSeq uint64) error {
	d := uint64(s.cfg.DiscoverEvery)
	if endSeq < d {
		return nil
	}
	start := endSeq - d
	f := &s.mb.feed
	for {
		s.mb.mu.Lock()
		wait := f.rerun[start]
		if wait && slices.ContainsFunc(f.done, func(d discoveryDone) bool { return d.endSeq == start }) {
			wait = false
		}
		if !wait {
			delete(f.rerun, start)
		}
		f.gate.SetMerging(wait)
		s.mb.mu.Unlock()
		if !wait {
			return nil
		}
		select {
		case <-ctx.Done():
			s.mb.mu.Lock()
			f.gate.SetMerging(false)
			s.mb.mu.Unlock()
			return ctx.Err()
		case <-f.discDone:
		}
	}
}

// runChecks applies the queued check jobs in order and checks the last
// window; the earlier ones are counted as skipped, except replayed ones
// (and all with inOrder), which are checked each.
func (s *evaluator) runChecks(ctx context.Context, c *eval.Checker, jobs []*checkJob) error {
	for i, job := range jobs {
		if job.gen != s.mb.gen.Load() {
			continue // a dropped window's: the next live job is a reset
		}
		if !c.Apply(job.delta, s.m.hooks.exact()) {
			s.mb.mu.Lock()
			if job.gen == s.mb.gen.Load() { // else the next job is a reset
				s.mb.feed.resync = true
			}
			s.mb.mu.Unlock()
			c.Forget()
			s.log.Warn("check skipped: the window changed under the checker; resynchronizing", "window_end", job.endSeq)
			return nil
		}
		switch {
		case i < len(jobs)-1 && !job.replay && !job.merging && !s.m.hooks.ordered():
			s.m.metrics.Evaluations.WithLabelValues(s.name, "skipped").Inc()
		default:
			if err := s.runCheck(ctx, c, job); err != nil {
				return err
			}
		}
	}
	return nil
}

// runCheck checks the checker's window (job's), after the discovery it
// merges when that one must be waited for (waitMerge), and records the
// outcome.
func (s *evaluator) runCheck(ctx context.Context, c *eval.Checker, job *checkJob) error {
	if s.hasTracker && job.endSeq <= s.trackerEnd {
		return nil // evaluated and saved before a restart
	}
	if err := s.waitMerge(ctx, job.endSeq); err != nil {
		return err
	}
	s.m.hooks.checkStarts(ctx, job.endSeq)
	if job.gen != s.mb.gen.Load() {
		return nil // dropped meanwhile (record checks again, as it saves)
	}
	start := time.Now()
	out, err := s.check(ctx, c, job)
	if err != nil {
		return err
	}
	checked := time.Now()
	if err := s.record(ctx, &evalJob{endSeq: job.endSeq, next: job.next, replay: job.replay, gen: job.gen}, out); err != nil {
		return err
	}
	d := time.Since(start)
	s.observeEval(d, out.Result)
	s.m.metrics.LastEval.WithLabelValues(s.name).Set(float64(time.Now().UnixNano()) / 1e9)
	s.log.Debug("check done", "window_end", job.endSeq, "records", c.Rows(), "tracked", out.Tracked,
		"discovery_merged", out.Merged, "events", len(out.Events), "seconds", d.Seconds(),
		"check_s", checked.Sub(start).Seconds(), "delivered_s", out.Delivered.Sub(start).Seconds(),
		"record_s", time.Since(checked).Seconds(), "prepared", out.Prepared,
		"built_nodes", out.Builds.Nodes, "built_fds", out.Builds.FDs, "built_ocs", out.Builds.Rebuilt,
		"restarted_ocs", out.Builds.Restarted)
	return nil
}

// dueDiscovery takes the discovery results due at window endSeq (finished,
// their merge point at or before it: discoveryDone.mergeAt) and returns
// the newest; older due ones are dropped unmerged. One merged past the
// latest point (DiscoverEvery records after its window: after a restart)
// is counted late.
func (s *evaluator) dueDiscovery(endSeq uint64) (discoveryDone, bool) {
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	var due discoveryDone
	found := false
	kept := s.mb.feed.done[:0]
	for _, d := range s.mb.feed.done {
		if d.mergeAt <= endSeq {
			delete(s.mb.feed.rerun, d.endSeq)
			if found {
				s.log.Warn("discovery result superseded before it was merged", "window_end", due.endSeq)
			}
			due, found = d, true
			continue
		}
		kept = append(kept, d)
	}
	s.mb.feed.done = kept
	if found && due.endSeq+uint64(s.cfg.DiscoverEvery) < endSeq {
		s.m.metrics.Discoveries.WithLabelValues(s.name, "late").Inc()
		s.log.Warn("discovery merged late: it took longer than discover-every records",
			"window_end", due.endSeq, "merged_at", endSeq, "seconds", due.took.Seconds(), "held_s", due.held.Seconds())
	}
	return due, found
}

// check runs one check on the checker's window: the tracked dependencies'
// counts (with the newly minimal ones of a due discovery), the
// observations, the tracker and samples.
func (s *evaluator) check(ctx context.Context, c *eval.Checker, job *checkJob) (*eval.Outcome, error) {
	done, merging := s.dueDiscovery(job.endSeq)
	var merge *eval.DiscoveryOutcome
	if merging {
		merge = &done.outcome
	}
	var pending []eval.Pending
	if !s.m.hooks.unprepared() {
		pending = s.pendingDiscoveries()
	}
	out, err := s.env().CheckWindow(ctx, c, job.info, merge, pending)
	if err == nil {
		s.m.hooks.checkDone(job.endSeq, out)
	}
	return out, err
}

// pendingDiscoveries are the discovery results finished and not merged
// yet, oldest first (after dueDiscovery took the due one: none is due).
func (s *evaluator) pendingDiscoveries() []eval.Pending {
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	done := slices.Clone(s.mb.feed.done)
	slices.SortFunc(done, func(x, y discoveryDone) int { return cmp.Compare(x.endSeq, y.endSeq) })
	out := make([]eval.Pending, len(done))
	for i := range done {
		out[i] = eval.Pending{EndSeq: done[i].endSeq, MergeAt: done[i].mergeAt, Outcome: &done[i].outcome}
	}
	return out
}
