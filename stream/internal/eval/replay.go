package eval

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/window"
)

// Replay is stream.Replayer's engine (see its doc): the monitor's window,
// evaluation and tracker over records handed to it in order, with the
// checks and merges of two cadences, without Kafka, the store or sinks.
type Replay struct {
	env   Env
	win   *window.Window
	seq   uint64
	stats ReplayStats
	// Two cadences: where the last check job left the window, the checker, and the
	// discoveries run but not merged yet, by window end.
	cursor  Cursor
	chk     Checker
	pending map[uint64]DiscoveryOutcome
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

// NewReplay is a replay of a stream configured by cfg (validated: a
// count window), logging to log, with discovery on workers workers.
func NewReplay(cfg *Config, log *slog.Logger, workers int) *Replay {
	return &Replay{win: window.NewWindow(cfg.Window, 0), stats: ReplayStats{Events: map[alerts.EventType]int{}},
		chk: NewChecker(cfg.Typing), pending: map[uint64]DiscoveryOutcome{},
		env: Env{Name: cfg.Name, Cfg: cfg, Log: log, Tracker: NewTracker(cfg), Workers: workers}}
}

// Add appends one record to the window (meta: its partition, offset and
// time) and, when it ends a count window (the first full window, then every
// Every records), evaluates the window and returns its events.
func (r *Replay) Add(ctx context.Context, meta window.RowMeta, rec *decode.FlatRecord) ([]alerts.Event, error) {
	seq := r.seq
	r.seq++
	r.stats.Records++
	meta.Seq = seq
	r.win.Append(meta, rec)
	n, w, e := seq+1, uint64(r.env.Cfg.Window), uint64(r.env.Cfg.Every)
	if n < w || (n-w)%e != 0 || r.win.Len() == 0 {
		return nil, nil
	}
	start := time.Now()
	var out *Outcome
	var err error
	if r.env.Cfg.DiscoverEvery > r.env.Cfg.Every { // two cadences
		out, err = r.check(ctx, seq)
	} else {
		out, err = r.env.EvaluateWindow(ctx, r.win.Snapshot(), seq)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if se, ok := err.(*StepError); ok {
			r.stats.Failed++
			r.env.Log.Error("evaluation failed", "window_end", seq, "step", se.Step, "err", se.Err)
			return nil, nil
		}
		return nil, err
	}
	d := time.Since(start)
	r.stats.Evaluations++
	r.stats.EvalTime += d
	r.stats.MaxEval = max(r.stats.MaxEval, d)
	for _, ev := range out.Events {
		r.stats.Events[ev.Type]++
	}
	r.env.Log.Debug("evaluation done", "window_end", seq, "tracked", out.Tracked,
		"discovered", out.Found, "merged", out.Merged, "events", len(out.Events), "seconds", d.Seconds())
	return out.Events, nil
}

// check is the monitor's two-cadence step at window end: the window's
// delta to the checker, the discovery of the window when it starts one
// (run at once, merged DiscoverEvery records later) and the check, which
// merges the discovery of the window DiscoverEvery records back.
func (r *Replay) check(ctx context.Context, end uint64) (*Outcome, error) {
	cfg := r.env.Cfg
	delta, info := r.cursor.Delta(r.win, !r.cursor.Fed()), r.win.Info(cfg.Name, cfg.Topic, end)
	if DiscoveryPoint(end, cfg.Window, cfg.DiscoverEvery) {
		disc, err := r.env.DiscoverSnapshot(ctx, r.win.Snapshot(), end)
		switch {
		case err == nil:
			r.pending[end] = disc
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			r.env.Log.Error("discovery failed", "window_end", end, "err", err)
		}
	}
	if !r.chk.Apply(delta, false) {
		return nil, &StepError{Step: "check", Err: fmt.Errorf("window %d does not follow the checker's", end)}
	}
	var merge *DiscoveryOutcome
	if d := uint64(cfg.DiscoverEvery); end >= d {
		if disc, ok := r.pending[end-d]; ok {
			merge = &disc
			delete(r.pending, end-d)
		}
	}
	return r.env.CheckWindow(ctx, &r.chk, info, merge, nil)
}

// Stats returns the summary so far.
func (r *Replay) Stats() ReplayStats {
	s := r.stats
	s.Events = make(map[alerts.EventType]int, len(r.stats.Events))
	for k, v := range r.stats.Events {
		s.Events[k] = v
	}
	return s
}

// DiscoveryPoint reports whether the check of the window ending at endSeq
// also starts a discovery (two cadences, a count window of window
// records): the first full window, then every discoverEvery records.
func DiscoveryPoint(endSeq uint64, window, discoverEvery int) bool {
	n, w := endSeq+1, uint64(window)
	return n >= w && (n-w)%uint64(discoverEvery) == 0
}
