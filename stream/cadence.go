package stream

import (
	"context"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/internal/pace"
	"github.com/odwatch/odwatch/stream/window"
)

// Two cadences (StreamConfig.DiscoverEvery > Every, count windows): every
// Every records the tracked dependencies are re-checked incrementally
// (eval.Checker), and full discovery runs on its own goroutine, on a
// snapshot, never delaying a check: the check gate (pace.Gate) stops
// discovery's workers while checks are queued or running. The pacer
// (pace.Pacer) says when discoveries start, which check merges each, and
// when the consumer must wait for one (streamRun.awaitDiscovery), so that
// discovery never starves (the pace package doc). The consumer hands each
// check a delta of the window; the evaluator applies every delta in order
// and checks a batch queued behind a slow check window by window for
// pace.Options.CatchUp, then coalesces the rest into its last (counted as
// skipped), except those at a merge point.
//
// Crashes: the records of a discovery's window stay in the store until
// its merge is saved (an evictHold ending there: the store holds up to
// Window + DiscoverEvery records besides the batches not yet checked), and
// a restart (restoreCadence) dispatches again what a crash lost (the
// package doc, "Delivery guarantees", says with which events; with auto,
// a discovery of the saved check's window). Starting the checker over at fixed points would
// make a restart's errors equal to the uninterrupted run's too, at the
// cost of a full count every DiscoverEvery records on the check path.

// twoCadence reports whether the stream checks and discovers on separate
// cadences.
func (c *StreamConfig) twoCadence() bool {
	return c.Interval == 0 && c.DiscoverEvery > c.Every
}

// checkJob is one check: the window's change since the previous job
// (delta), and what the evaluator needs to record the check.
type checkJob struct {
	endSeq uint64
	delta  *eval.Delta
	info   alerts.WindowInfo
	next   map[int32]int64
	// replay: a check lost in a crash, dispatched again by restore
	// (restoreCadence): it is checked on its own (never coalesced) and not
	// published to the state topic (see evalJob.replay).
	replay  bool
	merging bool   // a merge point (pace.Pacer.Merging): never coalesced
	gen     uint64 // the window's generation (mailbox.gen) at dispatch
}

// discoveryJob is one window to run discovery on.
type discoveryJob struct {
	snap   *window.Snapshot
	endSeq uint64
	// rerun: a discovery lost in a crash (or a restart), run again from
	// the records the store kept for it; it is never skipped, and the
	// check it merges into waits for it (see restoreCadence).
	rerun   bool
	gen     uint64 // the window's generation (mailbox.gen) at dispatch
	mergeAt uint64 // merged into the first check at or past it (pace.Pacer.MergeAt)
	early   bool   // or on its own window's when it ends after that check (eval.Finished.Early)
}

// cadenceFeed is the two-cadence part of the mailbox: the queues between
// the consumer (which fills checks and discs), the evaluator (which takes
// checks, asks for a resync and merges done) and the discoverer (which
// takes discs and fills done), all under mailbox.mu; the channels that
// wake the discoverer and a check waiting for its merge; and the check
// gate (pace.Gate), which has its own lock, changed under mailbox.mu.
type cadenceFeed struct {
	// resync is set by the checker when a delta does not fit its rows,
	// and by drop: the next job carries the whole window.
	resync bool

	checks []*checkJob
	// discs are the discoveries waiting to run, oldest first: at most one
	// live one (a newer one replaces it) after the re-runs.
	discs []*discoveryJob
	done  eval.FinishedList
	// rerun are the window ends of discoveries the check at end +
	// DiscoverEvery waits for: the re-run ones (and with inOrder all),
	// until they are merged.
	rerun map[uint64]bool
	// stopDiscovery cancels the running discovery (drop); nil when none
	// runs.
	stopDiscovery context.CancelFunc

	pace *pace.Pacer // made at the consumer's first check (pacerLocked)

	discWake chan struct{}
	// discDone is signalled when a discovery ends (waitMerge); consumerWake
	// too and when the evaluator takes a pending window (awaitDiscovery).
	discDone, consumerWake chan struct{}
	// gate holds discovery back while checks are queued or running.
	gate *pace.Gate
}

// newCadenceFeed returns an empty feed.
func newCadenceFeed() cadenceFeed {
	return cadenceFeed{discWake: make(chan struct{}, 1), discDone: make(chan struct{}, 1), consumerWake: make(chan struct{}, 1),
		rerun: map[uint64]bool{}, gate: pace.NewGate()}
}

// forget is drop's part for two cadences, on the consumer goroutine under
// mailbox.mu (with the mailbox's generation already moved on): the queued
// checks and discoveries, the results not merged and the merges waited
// for are forgotten, the running discovery is stopped, the gate is opened
// (nothing of the dropped window is queued; the running check, if any, is
// discarded), a check waiting for its merge is woken, the pacer reset, and
// the next check job carries the whole window (the checker starts over).
func (f *cadenceFeed) forget() {
	f.checks, f.discs, f.done = nil, nil, nil
	clear(f.rerun)
	if f.stopDiscovery != nil {
		f.stopDiscovery()
	}
	if f.pace != nil {
		f.pace.Reset()
	}
	f.gate.SetChecks(false)
	f.gate.SetMerging(false)
	f.resync = true
	wake(f.discDone)
}

// discoveryPoint reports whether the check of the window ending at endSeq
// also starts a discovery: the first full window, then every DiscoverEvery
// records.
func (c *StreamConfig) discoveryPoint(endSeq uint64) bool {
	return eval.DiscoveryPoint(endSeq, c.Window, c.DiscoverEvery)
}
