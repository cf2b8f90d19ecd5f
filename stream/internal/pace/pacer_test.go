package pace

import (
	"testing"
	"time"
)

// TestPacer runs the Pacer's transitions (its doc lists them) as
// scenarios: a sequence of checks, starts and ends, each check with the
// verdict and merge point it must get. Thresholds are forced per scenario.
func TestPacer(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// step is one check at window end seq and time ms (lag records
	// behind it), the verdict want and, when it starts one, the merge
	// point; or, with end set, the end of discovery end with cost.
	type step struct {
		seq       uint64
		ms        int
		lag       int64
		queued    int64 // records consumed, not checked
		want      Verdict
		mergeAt   uint64
		end       uint64 // a discovery ends (seq unused)
		ends      bool
		cost      time.Duration
		unmeasure bool // the discovery failed: no cost
	}
	ended := func(end uint64, cost time.Duration) step { return step{end: end, ends: true, cost: cost} }
	failed := func(end uint64) step { return step{end: end, ends: true, unmeasure: true} }
	// window 1000, every 100, bound 1000: fixed points 999, 1999, ...
	auto := func(o Options) *Pacer { return New(1000, 100, 1000, true, o) }
	fixed := func(o Options) *Pacer { return New(1000, 100, 500, false, o) }
	half := Options{Budget: 0.5, Weight: 1, Behind: 1}
	for _, tc := range []struct {
		name  string
		cfg   func(Options) *Pacer
		opts  Options
		steps []step
	}{
		{"fixed: fixed points, merged D later, waits at the merge point", fixed, half, []step{
			{seq: 999, want: VerdictStart, mergeAt: 1099}, // the first full window's: the next check
			{seq: 1099, ms: 10_000, want: VerdictWait},    // which waits for it
			ended(999, time.Millisecond),
			{seq: 1099, ms: 10_000, want: VerdictNone}, // no budget for fixed
			{seq: 1199, ms: 20_000, want: VerdictNone}, // budget irrelevant
			{seq: 1499, want: VerdictStart, mergeAt: 1999},
			{seq: 1999, want: VerdictWait}, // 1499 still open
			ended(1499, time.Millisecond),
			{seq: 1999, want: VerdictStart, mergeAt: 2499},
		}},
		{"auto: cheap discovery at every check", auto, half, []step{
			{seq: 999, ms: 0, want: VerdictStart, mergeAt: 1099},
			ended(999, 10*time.Millisecond),
			{seq: 1099, ms: 100, want: VerdictStart, mergeAt: 1199},
			ended(1099, 10*time.Millisecond),
			{seq: 1199, ms: 200, want: VerdictStart, mergeAt: 1299},
		}},
		{"auto: costly discovery backs off to the budget", auto, half, []step{
			{seq: 999, ms: 0, want: VerdictStart, mergeAt: 1099},
			ended(999, 300*time.Millisecond),
			{seq: 1099, ms: 100, want: VerdictNone},                 // 0.1 s * 0.5 < 0.3 s
			{seq: 1199, ms: 200, want: VerdictNone},                 // 0.2 s * 0.5 < 0.3 s
			{seq: 1299, ms: 599, want: VerdictNone},                 // 0.599 s * 0.5 < 0.3 s
			{seq: 1399, ms: 600, want: VerdictStart, mergeAt: 1499}, // 0.6 s * 0.5 = 0.3 s
		}},
		{"auto: at least once per window, waiting past the bound", auto, half, []step{
			{seq: 999, ms: 0, want: VerdictStart, mergeAt: 1099},
			ended(999, time.Hour),
			{seq: 1099, ms: 100, want: VerdictNone},
			{seq: 1999, ms: 1000, want: VerdictStart, mergeAt: 2099}, // the bound
			{seq: 2099, ms: 1100, want: VerdictNone},
			{seq: 2999, ms: 2000, want: VerdictWait}, // open at its bound
			{seq: 2999, ms: 2500, want: VerdictWait},
			ended(1999, time.Hour),
			{seq: 2999, ms: 3000, want: VerdictStart, mergeAt: 3099},
		}},
		{"auto: behind keeps the fixed points, merged a bound later", auto, half, []step{
			{seq: 999, lag: 5000, want: VerdictStart, mergeAt: 1099}, // the first: the next check, behind too
			{seq: 1099, ms: 10, lag: 4900, want: VerdictWait},
			ended(999, time.Millisecond),
			{seq: 1099, ms: 10_000, lag: 4900, want: VerdictNone}, // budget allows, but behind
			{seq: 1999, ms: 10_000, lag: 4000, want: VerdictStart, mergeAt: 2999},
			{seq: 2099, ms: 10_000, lag: 3900, want: VerdictNone},
			{seq: 2999, ms: 10_000, lag: 3000, want: VerdictWait},
			ended(1999, time.Millisecond),
			{seq: 2999, ms: 10_000, lag: 3000, want: VerdictStart, mergeAt: 3999},
			ended(2999, time.Millisecond),
			{seq: 3099, ms: 20_000, lag: 999, want: VerdictStart, mergeAt: 3199}, // caught up: under a window
		}},
		{"auto: behind again waits for a budget start at the next fixed point", auto, half, []step{
			{seq: 999, want: VerdictStart, mergeAt: 1099},
			ended(999, time.Millisecond),
			{seq: 1099, ms: 100, want: VerdictStart, mergeAt: 1199},
			{seq: 1999, ms: 200, lag: 1000, want: VerdictWait}, // behind, a fixed point, 1099 open
			ended(1099, time.Millisecond),
			{seq: 1999, ms: 300, lag: 1000, want: VerdictStart, mergeAt: 2999},
		}},
		{"auto: a failed discovery measures nothing; the bound still holds", auto, half, []step{
			{seq: 999, want: VerdictStart, mergeAt: 1099},
			failed(999),
			{seq: 1099, ms: 10_000, want: VerdictNone}, // no cost known
			{seq: 1999, ms: 20_000, want: VerdictStart, mergeAt: 2099},
		}},
		{"auto: the estimate weighs the newest cost by Weight", auto, Options{Budget: 1, Weight: 0.5, Behind: 1}, []step{
			{seq: 999, ms: 0, want: VerdictStart, mergeAt: 1099},
			ended(999, 100*time.Millisecond),
			{seq: 1099, ms: 100, want: VerdictStart, mergeAt: 1199},
			ended(1099, 300*time.Millisecond), // estimate 200 ms
			{seq: 1199, ms: 299, want: VerdictNone},
			{seq: 1299, ms: 300, want: VerdictStart, mergeAt: 1399},
		}},
		{"auto: a settling lag defers the budget's start, never the bound's", auto, Options{Budget: 1, Weight: 1, Behind: 1, Settle: 0.1}, []step{
			{seq: 999, want: VerdictStart, mergeAt: 1099},
			ended(999, 10*time.Millisecond),
			{seq: 1099, ms: 100, lag: 100, want: VerdictNone},            // settling
			{seq: 1199, ms: 200, lag: 50, queued: 50, want: VerdictNone}, // the checks queued count
			{seq: 1299, ms: 300, lag: 99, want: VerdictStart, mergeAt: 1399},
			ended(1299, 10*time.Millisecond),
			{seq: 2299, ms: 10_000, lag: 500, queued: 500, want: VerdictStart, mergeAt: 2399}, // the bound
		}},
		{"auto: budget 0 keeps the window bound only", auto, Options{Budget: 0, Weight: 1, Behind: 1}, []step{
			{seq: 999, want: VerdictStart, mergeAt: 1099},
			ended(999, 0),
			{seq: 1099, ms: 100_000, want: VerdictNone},
			{seq: 1999, ms: 200_000, want: VerdictStart, mergeAt: 2099},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.cfg(tc.opts)
			for i, s := range tc.steps {
				if s.ends {
					p.Ended(s.end, s.cost, !s.unmeasure)
					continue
				}
				got := p.Next(s.seq, at(s.ms), s.lag, s.queued)
				if got != s.want {
					t.Fatalf("step %d (check %d at %d ms, lag %d): verdict %d, want %d", i, s.seq, s.ms, s.lag, got, s.want)
				}
				if got == VerdictStart {
					if m := p.Start(s.seq, at(s.ms), s.lag); m != s.mergeAt {
						t.Fatalf("step %d (check %d): merged at %d, want %d", i, s.seq, m, s.mergeAt)
					}
				}
			}
		})
	}
}

// TestPacerReset: a dropped window's open discoveries are forgotten, and
// the next check starts one as the first full window does.
func TestPacerReset(t *testing.T) {
	t.Parallel()
	p := New(1000, 100, 1000, true, Default)
	now := time.Now()
	p.Start(1099, now, 0) // caught up: merged at 1199, waited for at 2099
	if v := p.Next(2099, now, 0, 0); v != VerdictWait {
		t.Fatalf("open at its bound: verdict %d, want wait", v)
	}
	p.Reset()
	if v := p.Next(2199, now, 0, 0); v != VerdictStart {
		t.Fatalf("after reset: verdict %d, want start", v)
	}
}

// TestPacerMerging: the checks at the merge points of discoveries started
// at fixed points are kept from coalescing, each once; the next check of
// auto caught up is not.
func TestPacerMerging(t *testing.T) {
	t.Parallel()
	p := New(1000, 100, 1000, true, Default)
	now := time.Now()
	start := func(end, lag uint64) {
		p.Start(end, now, int64(lag))
		p.Ended(end, 0, false)
	}
	start(999, 0)     // the first full window's: merged and waited for at 1099
	start(1999, 5000) // behind: 2999
	start(2099, 0)    // caught up: 2199, waited at 3099
	start(2199, 5000) // behind: 3199
	for _, c := range []struct {
		seq  uint64
		want bool
	}{{999, false}, {1099, true}, {2199, false}, {2999, true}, {3099, false}, {3199, true}, {3199, false}, {3999, false}} {
		if got := p.Merging(c.seq); got != c.want {
			t.Fatalf("merging(%d) = %v, want %v", c.seq, got, c.want)
		}
	}
}
