package stream

import (
	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/internal/eval"
)

// historyJob is one evaluation's part of the status history: the append
// with its rule points and dropped rules (taken on the evaluator, from the
// tracker of that evaluation), the events to store, and what their related
// rules' samples need (nil: none to take, or skipped). The stream's
// historian (history.Historian) runs it through appendStatus.
type historyJob struct {
	h       *state.HistoryAppend
	events  []alerts.Event
	related *eval.Related
}
