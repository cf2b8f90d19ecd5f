package stream

import (
	"context"
	"time"

	"github.com/odwatch/odwatch/stream/internal/eval"
)

// waitMerge waits, before the check of the window ending at endSeq, for
// the discovery that check merges when it was re-run after a restart (or,
// with inOrder, whenever it is running): the uninterrupted run merged it
// there. The check gate is open while it waits. It returns ctx's error.
func (s *evaluator) waitMerge(ctx context.Context, endSeq uint64) error {
	start, ok := eval.MergedAt(endSeq, s.cfg.Window, s.cfg.Every, s.cfg.DiscoverEvery)
	if !ok {
		return nil
	}
	f := &s.mb.feed
	for {
		s.mb.mu.Lock()
		wait := f.rerun[start] && !f.done.Has(start)
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

// runChecks applies the queued check jobs in order and checks their
// windows one by one for pace.Options.CatchUp, then the last; the others
// are counted as skipped, except replayed ones and merge points (and all
// with inOrder), which are checked each. While a job builds the checker
// from a whole window the gate lets discovery go on (pace.Gate).
func (s *evaluator) runChecks(ctx context.Context, c *eval.Checker, jobs []*checkJob) error {
	start, opts := time.Now(), s.m.hooks.paceOptions()
	defer s.building(false)
	for i, job := range jobs {
		if job.gen != s.mb.gen.Load() {
			continue // a dropped window's: the next live job is a reset
		}
		if job.delta.Whole() {
			s.building(true)
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
		last := *job
		last.delta, s.last = nil, &last // the checker's window now (mergeFound)
		switch {
		case i < len(jobs)-1 && !job.replay && !job.merging && !s.m.hooks.ordered() && opts.Coalesced(time.Since(start)):
			s.m.metrics.Evaluations.WithLabelValues(s.name, "skipped").Inc()
		default:
			if err := s.runCheck(ctx, c, job); err != nil {
				return err
			}
			s.building(false)
		}
	}
	return nil
}

// building opens the gate while a check builds the checker (on), or
// closes it again.
func (s *evaluator) building(on bool) {
	s.mb.mu.Lock()
	s.mb.feed.gate.SetBuilding(on)
	s.mb.mu.Unlock()
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

// mergeFound merges on the last check's window the new rules of a
// discovery that ended after that check passed its merge point, when no
// check is queued (eval.Env.MergeFound), so that a finished discovery's
// rules are tracked without waiting for the next record; the next check
// merges it as usual. The checker still holds that window.
func (s *evaluator) mergeFound(ctx context.Context) error {
	job := s.last
	if job == nil || job.gen != s.mb.gen.Load() {
		return nil
	}
	var merge *eval.DiscoveryOutcome
	s.mb.mu.Lock()
	if len(s.mb.feed.checks) == 0 {
		if f := s.mb.feed.done.Overdue(job.endSeq); f != nil {
			o := f.Outcome // f points into the list, which changes under mb.mu
			merge = &o
		}
	}
	s.mb.mu.Unlock()
	if merge == nil {
		return nil
	}
	out, err := s.env().MergeFound(ctx, &s.chk, job.info, merge)
	if err != nil || out.Checked == 0 {
		return err
	}
	s.log.Debug("discovery merged on the last check's window", "window_end", job.endSeq, "events", len(out.Events))
	return s.record(ctx, &evalJob{endSeq: job.endSeq, next: job.next, replay: job.replay, gen: job.gen}, out)
}

// dueDiscovery takes the discovery results due at window endSeq (finished,
// their merge point at or before it: eval.FinishedList.Due) and returns
// the newest; older due ones are dropped unmerged. One merged past the
// latest point (DiscoverEvery records after its window: after a restart)
// is counted late.
func (s *evaluator) dueDiscovery(endSeq uint64) (eval.Finished, bool) {
	s.mb.mu.Lock()
	due, superseded, found := s.mb.feed.done.Due(endSeq)
	for _, end := range superseded {
		delete(s.mb.feed.rerun, end)
	}
	if found {
		delete(s.mb.feed.rerun, due.EndSeq)
	}
	s.mb.mu.Unlock()
	if len(superseded) > 0 {
		s.log.Warn("discovery result superseded before it was merged", "window_end", superseded)
	}
	if found && due.EndSeq+uint64(s.cfg.DiscoverEvery) < endSeq {
		s.m.metrics.Discoveries.WithLabelValues(s.name, "late").Inc()
		s.log.Warn("discovery merged late: it took longer than discover-every records",
			"window_end", due.EndSeq, "merged_at", endSeq, "seconds", due.Took.Seconds(), "held_s", due.Held.Seconds())
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
		merge = &done.Outcome
	}
	var pending []eval.Pending
	if !s.m.hooks.unprepared() {
		s.mb.mu.Lock()
		pending = s.mb.feed.done.Pending()
		s.mb.mu.Unlock()
	}
	out, err := s.env().CheckWindow(ctx, c, job.info, merge, pending)
	if err == nil {
		s.m.hooks.checkDone(job.endSeq, out)
	}
	return out, err
}
