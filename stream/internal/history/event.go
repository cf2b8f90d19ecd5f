package history

import (
	"encoding/json"

	"github.com/odwatch/odwatch/alerts"
)

// eventJSON is an event as the status history stores it: the event, all
// of the fields of its samples' records (the event's JSON carries only
// the rule's columns; SampleFields[i] is sample i's, when taken) and the
// samples of its related dependencies (by dependency id).
type eventJSON struct {
	Event          json.RawMessage            `json:"event"`
	SampleFields   []map[string]string        `json:"sample_fields,omitempty"`
	RelatedSamples map[string][]alerts.Sample `json:"related_samples,omitempty"`
}

// EncodeEvent stores e with the samples of its related dependencies that
// have removals, related(id) giving a dependency id's (nil: none taken).
func EncodeEvent(e alerts.Event, related func(id string) []alerts.Sample) ([]byte, error) {
	ev, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	se := eventJSON{Event: ev}
	for i, smp := range e.Samples {
		if smp.Fields != nil {
			if se.SampleFields == nil {
				se.SampleFields = make([]map[string]string, len(e.Samples))
			}
			se.SampleFields[i] = smp.Fields
		}
	}
	if related != nil {
		for _, r := range e.Related {
			if r.Removals == 0 {
				continue
			}
			if smp := related(alerts.DependencyID(r.Dependency)); len(smp) > 0 {
				if se.RelatedSamples == nil {
					se.RelatedSamples = map[string][]alerts.Sample{}
				}
				se.RelatedSamples[r.DependencyID] = smp
			}
		}
	}
	return json.Marshal(se)
}

// DecodeEvent reads an event EncodeEvent stored, and its related samples.
func DecodeEvent(p []byte) (alerts.Event, map[string][]alerts.Sample, error) {
	var se eventJSON
	if err := json.Unmarshal(p, &se); err != nil {
		return alerts.Event{}, nil, err
	}
	if len(se.Event) == 0 {
		se.Event = p // the first version stored the event alone
	}
	var e alerts.Event
	if err := json.Unmarshal(se.Event, &e); err != nil {
		return alerts.Event{}, nil, err
	}
	for i, f := range se.SampleFields {
		if i < len(e.Samples) {
			e.Samples[i].Fields = f
		}
	}
	return e, se.RelatedSamples, nil
}
