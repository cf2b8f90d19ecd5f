package stream

import (
	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/window"
)

// historyJob is one evaluation's part of the status history: the append
// with its rule points and dropped rules (taken on the evaluator, from the
// tracker of that evaluation), the events to store, and what their related
// rules' samples need (nil: none to take, or skipped). The stream's
// historian (history.Historian) runs it through appendStatus.
type historyJob struct {
	h       *state.HistoryAppend
	events  []alerts.Event
	related *relatedWork
}

// relatedWork is what the samples of an evaluation's related rules need
// from its window, taken on the evaluator so that the historian reads
// nothing the evaluator changes: a check's sampler, detached from the
// checker once it copied the columns the rules mention (checkSampler.take),
// or a full evaluation's encoded window and its immutable snapshot.
type relatedWork struct {
	deps []discovery.Dependency
	at   map[string]int
	chk  *checkSampler
	// a full evaluation's
	table *table.Table
	snap  *window.Snapshot
}
