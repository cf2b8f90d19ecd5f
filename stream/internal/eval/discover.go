package eval

import (
	"context"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// DiscoverSnapshot is the discovery path of two cadences on one window:
// encode it as the checks type it (encodeSnapshot), then discover
// (Env.discover), both passing e.Pause between units of work. It
// returns a *StepError when encoding fails, ctx's error when ctx is done.
func (e Env) DiscoverSnapshot(ctx context.Context, snap *window.Snapshot, endSeq uint64) (DiscoveryOutcome, error) {
	cols := snap.Columns()
	table, err := encodeSnapshot(ctx, cols, e.Cfg.typingFor(cols), e.Pause)
	if err != nil {
		return DiscoveryOutcome{}, err
	}
	return e.discover(ctx, table, endSeq)
}

// encodeSnapshot encodes cols typed by ty (discovery.EncodeTypedPause),
// passing pause, when set, before each column and within one (every few
// thousand values typed, between its steps). It returns pause's error as
// it is, a *StepError when encoding fails.
func encodeSnapshot(ctx context.Context, cols []table.DictColumn, ty table.Typing, pause func(context.Context) error) (*table.Table, error) {
	var paused error
	track := pause
	if pause != nil {
		track = func(ctx context.Context) error { paused = pause(ctx); return paused }
	}
	t, err := table.EncodeTypedPause(ctx, cols, ty, track)
	switch {
	case paused != nil:
		return nil, paused
	case err != nil:
		return nil, &StepError{Step: "encode", Err: err}
	}
	return t, nil
}
