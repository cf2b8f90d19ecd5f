package history

import (
	"strings"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/state"
)

// NewAppend is the status history's append of one evaluation of stream
// (its window info, observations and events), taken on the evaluator from
// the tracker's errors after it (tracked): a point for each observed rule
// still tracked (violated or not), and the rules the evaluation retired,
// whose history is dropped. The events are added by the historian
// (EncodeEvent). ruleRing and eventRing bound what the store keeps.
func NewAppend(stream string, info alerts.WindowInfo, obs []alerts.Observation, events []alerts.Event,
	tracked []alerts.DependencyError, ruleRing, eventRing int) *state.HistoryAppend {
	violated := make(map[string]bool, len(tracked))
	for _, e := range tracked {
		violated[e.ID] = e.State == alerts.StateViolated
	}
	h := &state.HistoryAppend{Stream: stream, WindowEnd: info.EndSeq, RuleRing: ruleRing, EventRing: eventRing}
	for _, o := range obs {
		id := alerts.DependencyID(o.Dependency)
		v, tracked := violated[id]
		if !tracked || strings.IndexByte(id, 0) >= 0 {
			continue
		}
		h.Rules = append(h.Rules, state.RulePoint{DependencyID: id, WindowEnd: info.EndSeq, Time: info.EndTime,
			Error: o.Error, Removals: o.Removals, Records: info.Records, Violated: v})
	}
	for _, e := range events {
		if _, tracked := violated[e.DependencyID]; !tracked && e.Type == alerts.EventRetired {
			h.Drop = append(h.Drop, e.DependencyID)
		}
	}
	return h
}
