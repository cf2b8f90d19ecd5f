package stream

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/eval"
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
	r *eval.Replay
}

// ReplayStats summarises a replay so far.
type ReplayStats = eval.ReplayStats

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
	return &Replayer{r: eval.NewReplay(cfg.evalConfig(), log, runtime.GOMAXPROCS(0))}, nil
}

// Add appends one record to the window (meta: its partition, offset and
// time) and, when it ends a count window (the first full window, then every
// Every records), evaluates the window and returns its events.
func (r *Replayer) Add(ctx context.Context, meta window.RowMeta, rec *decode.FlatRecord) ([]alerts.Event, error) {
	return r.r.Add(ctx, meta, rec)
}

// Stats returns the summary so far.
func (r *Replayer) Stats() ReplayStats { return r.r.Stats() }
