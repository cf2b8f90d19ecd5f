package pace

import "time"

// Options are the thresholds of discovery's pacing (Pacer), in one
// place so that a test can force each of them.
type Options struct {
	// Budget is the CPU discovery may use on average, in cores: a
	// discovery starts (beyond the window bound) only once the time since
	// the last one started is at least its estimated cost over Budget.
	Budget float64
	// Weight is the share of the newest measured cost in the estimate
	// (an exponentially weighted mean; 1 keeps the last one only).
	Weight float64
	// Behind is the lag, in windows, from which the stream counts as
	// behind (a backlog or a burst): the records already in the topic past
	// a check's last one. Behind, discovery keeps the window bound's fixed
	// schedule (every bound records from the first full window), merged
	// bound records later, as replay runs it.
	Behind float64
	// Settle is the lag, in windows, from which a discovery the budget
	// allows (caught up, before the window bound) waits for the stream to
	// settle: it would take a core from the consumer and the checks
	// draining a backlog (the one a cold start's wait leaves), so that the
	// checks of the catch-up coalesce longer and its bound arrives sooner
	// (a wait). 0 never waits.
	Settle float64
	// CatchUp is how long the evaluator checks a batch of queued checks
	// window by window (a backlog: a cold start's wait, a stall) before it
	// coalesces the rest of the batch into its last check (Coalesced).
	// Checking each window keeps every window's events and costs a few
	// milliseconds a window; coalescing bounds how far the checks fall
	// behind when they cannot keep up. 0 coalesces every batch at once.
	CatchUp time.Duration
}

// Default: half a core on average, leaving the other half of a
// two-core machine's second core to ingest and the checks; the last two
// measurements weigh three quarters; a lag of one window is a backlog; a
// lag of five checks at the default window and cadence (100k, 1000) is
// still settling; a batch is checked window by window for a quarter of a
// second, a quarter of the second within which a fault is to be reported.
var Default = Options{Budget: 0.5, Weight: 0.5, Behind: 1, Settle: 0.05, CatchUp: 250 * time.Millisecond}

// Coalesced reports whether a queued check that is not the last of its
// batch is coalesced into a later one (its delta applied, its window not
// checked) once checking the batch has taken elapsed: past CatchUp. The
// first windows of a backlog are thus checked one by one, and a batch
// never takes much longer than CatchUp and its last check.
func (o Options) Coalesced(elapsed time.Duration) bool { return elapsed >= o.CatchUp }

// Pacer decides, at each check of a two-cadence stream, whether a
// discovery starts there, and when consumption must wait for a running
// one. It is a pure state: the caller gives it the check's window end and
// time and the stream's lag, and tells it when discoveries start and end
// with their measured cost. It lives in the mailbox's cadenceFeed, under
// mailbox.mu: the consumer calls Next and Start, the discoverer Ended,
// drop Reset.
//
// With a fixed cadence (discover-every D) discoveries start at the fixed
// points (the first full window, then every D records) and each merges D
// records after its start (MergeAt), but the first full window's, which
// merges into the next check and is waited for there, whatever the
// cadence (a cold start tracks its rules one check after it). With auto
// (discover-every auto) they start:
//
//   - at the first full window;
//   - at least once per bound records (the window rounded up to a multiple
//     of every): at bound records after the last start;
//   - behind (lag of Behind windows or more): only at the fixed points of
//     the bound, each merged bound records later (replay's schedule);
//   - caught up: at the first check at which the time since the last start
//     is at least the estimated cost over Budget and the lag is under
//     Settle windows, merged into the first check after it ends.
//
// At most one discovery of auto runs at a time (after a restart, the ones
// run again may be several); transitions of next:
//
//	open discovery, check at or past one's wait point        -> wait
//	open discovery, behind, check at a fixed point (auto)     -> wait
//	open discovery, otherwise                                 -> none
//	none open, fixed cadence, at a fixed point               -> start
//	none open, auto, never started                           -> start
//	none open, auto, bound records since the last start      -> start
//	none open, auto, behind, at a fixed point                -> start
//	none open, auto, caught up, cost known, budget allows,
//	  lag under Settle                                        -> start
//	otherwise                                                -> none
//
// A wait ends when the discovery ends (Ended), and Next is asked again.
// The cost of a discovery is the worker time it ran, less the time its
// workers waited at the check gate: an upper bound of the CPU it used.
type Pacer struct {
	opts Options
	// auto: discover-every auto; else the fixed cadence of bound records.
	auto bool
	// window, every and bound (records): the first full window ends at
	// window-1, checks are every records apart, and a discovery runs at
	// least every bound records (the fixed cadence's D).
	window, every, bound uint64

	started bool
	lastSeq uint64    // window end of the last start
	lastAt  time.Time // and its time
	// open are the discoveries started and not ended, oldest first.
	open []openDiscovery
	// merges are the merge points of the discoveries started that are
	// also their wait points (MergeAt), not yet passed: those checks are
	// never coalesced (merging).
	merges []uint64
	// cost is the estimated cost of a discovery (measured: one ended
	// with a measurement).
	cost     time.Duration
	measured bool
	// spent is the measured cost of every discovery ended (benchmarks).
	spent time.Duration
}

// openDiscovery is a discovery started and not ended: its window end and
// the check that must wait for it (the first at or past waitAt).
type openDiscovery struct {
	endSeq, waitAt uint64
}

// Verdict is the Pacer's verdict at a check.
type Verdict int

const (
	VerdictNone  Verdict = iota // no discovery starts here
	VerdictStart                // a discovery starts on this check's window
	VerdictWait                 // consumption waits for the open discovery
)

// New is the Pacer of a two-cadence count window of window records
// checked every every records: with auto, discover-every auto bounded by
// bound records (the window rounded up to a multiple of every); else
// every bound records.
func New(window, every, bound int, auto bool, opts Options) *Pacer {
	return &Pacer{opts: opts, auto: auto, window: uint64(window), every: uint64(every), bound: uint64(bound)}
}

// Restored is the verdict at a check a restart dispatches again, which
// cannot wait: a fixed cadence starts at its fixed points (the ones after
// the saved check: the others are run again as such), auto as Next says.
func (p *Pacer) Restored(endSeq uint64) Verdict {
	switch {
	case p.auto:
		if v := p.Next(endSeq, time.Now(), 0, 0); v == VerdictStart {
			return v
		}
	case p.Point(endSeq):
		return VerdictStart
	}
	return VerdictNone
}

// Spent is the measured cost of every discovery ended so far.
func (p *Pacer) Spent() time.Duration { return p.spent }

// Point reports whether the check of window end endSeq is a fixed point:
// the first full window, then every bound records.
func (p *Pacer) Point(endSeq uint64) bool {
	n := endSeq + 1
	return n >= p.window && (n-p.window)%p.bound == 0
}

// behind reports whether a lag of lag records is a backlog.
func (p *Pacer) behind(lag int64) bool {
	return p.auto && float64(lag) >= p.opts.Behind*float64(p.window)
}

// settling reports whether a lag of lag records is a backlog still
// draining, too large for a discovery the budget allows (Settle).
func (p *Pacer) settling(lag int64) bool {
	return p.opts.Settle > 0 && float64(lag) >= p.opts.Settle*float64(p.window)
}

// Next is the verdict at the check of window end endSeq, at now, with lag
// records already in the topic past it and queued records consumed but
// not checked yet (the checks queued before it): both are the backlog a
// settling stream drains (Settle), the topic's alone a stream behind.
func (p *Pacer) Next(endSeq uint64, now time.Time, lag, queued int64) Verdict {
	behind := p.behind(lag)
	if len(p.open) > 0 {
		wait := behind && p.Point(endSeq)
		for _, o := range p.open {
			wait = wait || endSeq >= o.waitAt
		}
		if wait {
			return VerdictWait
		}
		return VerdictNone
	}
	switch {
	case !p.auto || behind:
		if p.Point(endSeq) {
			return VerdictStart
		}
	case !p.started, endSeq >= p.lastSeq+p.bound:
		return VerdictStart
	case p.measured && p.opts.Budget > 0 && now.Sub(p.lastAt).Seconds()*p.opts.Budget >= p.cost.Seconds() && !p.settling(lag+queued):
		return VerdictStart
	}
	return VerdictNone
}

// MergeAt is the window end of the check that merges a discovery started
// at endSeq with lag records behind it, and waitAt the check that waits
// for it: the next check for the first full window's (both), so that a
// cold start tracks a rule one check after it whatever the cadence
// (eval.MergeAt, which replay follows); bound records later (a fixed
// cadence, or behind); else (auto, caught up) merged into the first check
// after it ends, waited for bound records later.
func (p *Pacer) MergeAt(endSeq uint64, lag int64) (mergeAt, waitAt uint64) {
	if endSeq+1 == p.window { // eval.MergeAt: a cold start tracks one check after the first full window
		return endSeq + p.every, endSeq + p.every
	}
	if !p.auto || p.behind(lag) {
		return endSeq + p.bound, endSeq + p.bound
	}
	return endSeq + p.every, endSeq + p.bound
}

// Start records a discovery started on the window ending at endSeq, at
// now, with lag records behind it, and returns the check that merges it
// (MergeAt).
func (p *Pacer) Start(endSeq uint64, now time.Time, lag int64) (mergeAt uint64) {
	mergeAt, waitAt := p.MergeAt(endSeq, lag)
	p.started, p.lastSeq, p.lastAt = true, endSeq, now
	p.open = append(p.open, openDiscovery{endSeq: endSeq, waitAt: waitAt})
	if mergeAt == waitAt {
		p.merges = append(p.merges, mergeAt)
	}
	return mergeAt
}

// Merging reports whether the check of window end endSeq is the merge
// point of a discovery that is also its wait point (MergeAt), which the
// evaluator must check on its own, never coalesced, so that the merge
// falls there; it forgets the merge points up to endSeq.
func (p *Pacer) Merging(endSeq uint64) bool {
	at := false
	for len(p.merges) > 0 && p.merges[0] <= endSeq {
		at = at || p.merges[0] == endSeq
		p.merges = p.merges[1:]
	}
	return at
}

// Ended records the end of the discovery of window endSeq; cost is its
// measured cost when measured (a discovery that failed has none).
func (p *Pacer) Ended(endSeq uint64, cost time.Duration, measured bool) {
	for i, o := range p.open {
		if o.endSeq == endSeq {
			p.open = append(p.open[:i], p.open[i+1:]...)
			break
		}
	}
	if !measured {
		return
	}
	p.spent += cost
	if p.measured {
		cost = time.Duration(p.opts.Weight*float64(cost) + (1-p.opts.Weight)*float64(p.cost))
	}
	p.cost, p.measured = cost, true
}

// Reset forgets the open discoveries (drop): the window they ran on is
// gone, and so are their results. What was measured stays.
func (p *Pacer) Reset() {
	p.open, p.merges = p.open[:0], p.merges[:0]
	p.started = false
}
