package stream

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/window"
)

// Replayer runs a stream's window, evaluation and tracker offline, over
// records handed to it in order (odwatch replay): the code of the monitor
// without Kafka, the store or sinks. Record i (from 0) has sequence number
// i, so a count window is evaluated at the same records as the monitor
// evaluates it, and the same input and configuration give the same events
// and event ids. With two cadences (DiscoverEvery above Every) each check
// is the monitor's (the same incremental checker, fed the same deltas), and
// the discovery of each window it starts is run at once and merged into
// the check DiscoverEvery records later: the events of a monitor whose
// discoveries finished in time and whose checks were not coalesced. Time
// windows (Interval) are not replayed.
type Replayer struct {
	env   evalEnv
	win   *window.Window
	seq   uint64
	stats ReplayStats
	// Two cadences: where the last check job left the window, the checker, and the
	// discoveries run but not merged yet, by window end.
	cursor  checkCursor
	chk     checker
	pending map[uint64]discoveryOutcome
}

// ReplayStats summarises a replay so far.
type ReplayStats struct {
	Records     uint64
	Evaluations int
	// Failed counts windows not evaluated (a failed step, logged).
	Failed int
	Events map[alerts.EventType]int
	// EvalTime is the total time of the evaluations, MaxEval the longest.
	EvalTime, MaxEval time.Duration
}

// NewReplayer validates cfg (StreamConfig.Validate: Topic may be any
// label, it names the records' topic in events) and returns a replayer.
// Discovery uses every core: nothing else runs beside it.
func NewReplayer(cfg StreamConfig, log *slog.Logger) (*Replayer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval > 0 {
		return nil, fmt.Errorf("interval: time windows are not replayed; use a count window")
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("stream", cfg.Name)
	r := &Replayer{win: window.NewWindow(cfg.Window, 0), stats: ReplayStats{Events: map[alerts.EventType]int{}},
		chk: checker{typing: cfg.Typing}, pending: map[uint64]discoveryOutcome{}}
	r.env = evalEnv{name: cfg.Name, log: log, tracker: newTracker(cfg), workers: runtime.GOMAXPROCS(0)}
	r.env.cfg = &cfg
	return r, nil
}

// Add appends one record to the window (meta: its partition, offset and
// time) and, when it ends a count window (the first full window, then every
// Every records), evaluates the window and returns its events.
func (r *Replayer) Add(ctx context.Context, meta window.RowMeta, rec *decode.FlatRecord) ([]alerts.Event, error) {
	seq := r.seq
	r.seq++
	r.stats.Records++
	meta.Seq = seq
	r.win.Append(meta, rec)
	n, w, e := seq+1, uint64(r.env.cfg.Window), uint64(r.env.cfg.Every)
	if n < w || (n-w)%e != 0 || r.win.Len() == 0 {
		return nil, nil
	}
	start := time.Now()
	var out *evalOutcome
	var err error
	if r.env.cfg.twoCadence() {
		out, err = r.check(ctx, seq)
	} else {
		out, err = r.env.evaluateWindow(ctx, r.win.Snapshot(), seq)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if se, ok := err.(*stepError); ok {
			r.stats.Failed++
			r.env.log.Error("evaluation failed", "window_end", seq, "step", se.step, "err", se.err)
			return nil, nil
		}
		return nil, err
	}
	d := time.Since(start)
	r.stats.Evaluations++
	r.stats.EvalTime += d
	r.stats.MaxEval = max(r.stats.MaxEval, d)
	for _, ev := range out.events {
		r.stats.Events[ev.Type]++
	}
	r.env.log.Debug("evaluation done", "window_end", seq, "tracked", out.tracked,
		"discovered", out.found, "merged", out.merged, "events", len(out.events), "seconds", d.Seconds())
	return out.events, nil
}

// check is the monitor's two-cadence step at window end: the window's
// delta to the checker, the discovery of the window when it starts one
// (run at once, merged DiscoverEvery records later) and the check, which
// merges the discovery of the window DiscoverEvery records back.
func (r *Replayer) check(ctx context.Context, end uint64) (*evalOutcome, error) {
	cfg := r.env.cfg
	job := r.cursor.delta(r.win, !r.cursor.fed, r.win.Info(cfg.Name, cfg.Topic, end))
	if cfg.discoveryPoint(end) {
		disc, err := r.env.discoverSnapshot(ctx, r.win.Snapshot(), end)
		switch {
		case err == nil:
			r.pending[end] = disc
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			r.env.log.Error("discovery failed", "window_end", end, "err", err)
		}
	}
	if !r.chk.apply(job, false) {
		return nil, &stepError{"check", fmt.Errorf("window %d does not follow the checker's", end)}
	}
	var merge *discoveryOutcome
	if d := uint64(cfg.DiscoverEvery); end >= d {
		if disc, ok := r.pending[end-d]; ok {
			merge = &disc
			delete(r.pending, end-d)
		}
	}
	return r.env.checkWindow(ctx, &r.chk, job, merge, nil)
}

// Stats returns the summary so far.
func (r *Replayer) Stats() ReplayStats {
	s := r.stats
	s.Events = make(map[alerts.EventType]int, len(r.stats.Events))
	for k, v := range r.stats.Events {
		s.Events[k] = v
	}
	return s
}
