package stream

import (
	"context"
	"sync"
	"time"

	"github.com/odwatch/odwatch/stream/internal/eval"
)

// discoverer runs a two-cadence stream's discoveries on a goroutine of its
// own (run), started and waited for by the evaluator. It owns nothing but
// the discovery it runs: it takes jobs from mb.feed.discs and puts results
// in mb.feed.done, both under mb.mu, checks a job's generation there
// (mb.gen) and registers how drop stops it (feed.stopDiscovery); its
// workers wait at feed.gate while checks are queued or running.
type discoverer struct {
	*streamBase
}

// start starts the discoverer's goroutine when on (a two-cadence stream);
// wait returns once it has stopped.
func (s *discoverer) start(ctx context.Context, on bool) (wait func()) {
	if !on {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.run(ctx) })
	return wg.Wait
}

// run runs the discovery jobs until ctx is done, handing each result to
// the checker.
func (s *discoverer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.mb.feed.discWake:
		}
		for {
			s.mb.mu.Lock()
			var job *discoveryJob
			if len(s.mb.feed.discs) > 0 {
				job = s.mb.feed.discs[0]
				s.mb.feed.discs = s.mb.feed.discs[1:]
			}
			s.mb.mu.Unlock()
			if job == nil {
				break
			}
			if !s.discover(ctx, job) {
				return // ctx is done
			}
		}
	}
}

// discover runs one discovery job and hands its result to the checker; it
// reports false when ctx is done. The discovery of a window dropped
// meanwhile is stopped (cadenceFeed.forget) and its result never handed
// over. However it ends, the pacer is told (with its cost when it
// succeeded) and a consumer waiting for it is woken.
func (s *discoverer) discover(ctx context.Context, job *discoveryJob) bool {
	defer func() {
		wake(s.mb.feed.discDone)
		wake(s.mb.feed.consumerWake)
	}()
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	s.mb.mu.Lock()
	live := job.gen == s.mb.gen.Load()
	if live {
		s.mb.feed.stopDiscovery = stop
	}
	s.mb.mu.Unlock()
	if !live {
		return true
	}
	defer func() {
		s.mb.mu.Lock()
		s.mb.feed.stopDiscovery = nil
		s.mb.mu.Unlock()
	}()
	s.m.hooks.discoveryStarts(dctx, job.endSeq)
	start, waited := time.Now(), s.mb.feed.gate.Waited()
	done := eval.Finished{EndSeq: job.endSeq, MergeAt: job.mergeAt, Early: job.early}
	workers := eval.DiscoveryWorkers()
	env := eval.Env{Name: s.name, Cfg: s.cfg.evalConfig(), Log: s.log, Pause: s.pauseDiscovery, Workers: workers}
	var err error
	done.Outcome, err = env.DiscoverSnapshot(dctx, job.snap, job.endSeq)
	switch {
	case ctx.Err() != nil:
		return false
	case dctx.Err() != nil:
		s.log.Info("discovery of a dropped window stopped", "window_end", job.endSeq)
		return true
	case err != nil:
		s.log.Error("discovery failed", "window_end", job.endSeq, "err", err)
		s.mb.mu.Lock()
		delete(s.mb.feed.rerun, job.endSeq) // nothing to wait for
		s.ended(job, 0, false)
		s.mb.mu.Unlock()
		return true
	}
	done.Took = time.Since(start)
	s.m.metrics.DiscDuration.WithLabelValues(s.name).Observe(done.Took.Seconds())
	s.m.metrics.Discoveries.WithLabelValues(s.name, "ok").Inc()
	done.Held = time.Duration(s.mb.feed.gate.Waited() - waited)
	// The worker time not spent waiting at the gate: at most the CPU it used.
	cost := max(0, done.Took*time.Duration(workers)-done.Held)
	s.log.Debug("discovery done", "window_end", job.endSeq, "seconds", done.Took.Seconds(), "held_s", done.Held.Seconds(),
		"cost_s", cost.Seconds(), "found", len(done.Outcome.Results), "merged_at", job.mergeAt, "rerun", job.rerun)
	s.mb.mu.Lock()
	if job.gen == s.mb.gen.Load() {
		s.mb.feed.done = append(s.mb.feed.done, done)
		s.ended(job, cost, true)
	}
	s.mb.mu.Unlock()
	s.mb.notify() // the evaluator merges it now when it is overdue (mergeFound)
	return true
}

// ended tells the pacer job's discovery ended, unless its window was
// dropped; under mb.mu.
func (s *discoverer) ended(job *discoveryJob, cost time.Duration, measured bool) {
	if p := s.mb.feed.pace; p != nil && job.gen == s.mb.gen.Load() {
		p.Ended(job.endSeq, cost, measured)
	}
}

// pauseDiscovery is discovery's Pause with two cadences: the check gate.
func (s *discoverer) pauseDiscovery(ctx context.Context) error {
	s.m.hooks.discoveryStepped(ctx)
	return s.mb.feed.gate.Wait(ctx)
}
