package explain

import (
	"slices"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// Event is what a violated event's explanation reads of its window
// besides Window: the rows' metadata, the topic and how many samples the
// event carries.
type Event struct {
	Window
	// Meta is row i's metadata (0 = oldest).
	Meta    func(i int) window.RowMeta
	Topic   string
	Samples int
}

// ForEvent explains d's violation on the event's window in the event's
// terms: the explanation (the violating records, segments, the record the
// break starts at) and the samples, taken from the violating records that
// entered last (so that a fault that began in this window shows its own
// rows, not the last clean ones), in record order, each with the rule's
// values, all of its record's fields and what the rule expected. back,
// when set, is d the other way (an equivalence's FD between its members
// from d's right-hand side to its context's last column): a sample that
// breaks it too also says what it expected (alerts.Expected.Or).
func ForEvent(ev Event, d discovery.Dependency, back *discovery.Dependency, o Options) (*alerts.Explanation, []alerts.Sample, error) {
	r, err := Explain(ev.Window, d, o)
	if err != nil || len(r.Violating) == 0 {
		return nil, nil, err
	}
	var rb Result
	if back != nil {
		b := takeBuffers(o)
		rb, err = b.violations(ev.Rule, *back)
		pool.Put(b)
		if err != nil {
			return nil, nil, err
		}
	}
	first := ev.Meta(r.Violating[r.First])
	x := &alerts.Explanation{Violating: len(r.Violating),
		First: alerts.RecordRef{Topic: ev.Topic, Partition: first.Partition, Offset: first.Offset, Time: first.Time}}
	for _, s := range r.Segments {
		x.Segments = append(x.Segments, alerts.Segment{Column: s.Column, Value: s.Value, Null: s.Null, Violating: s.Violating,
			ViolatingShare: s.ViolatingShare, WindowShare: s.WindowShare, Lift: s.Lift})
	}
	cols := d.Columns()
	from := max(0, len(r.Violating)-ev.Samples)
	samples := make([]alerts.Sample, 0, len(r.Violating)-from)
	for i := from; i < len(r.Violating); i++ {
		row := r.Violating[i]
		m := ev.Meta(row)
		fields := rowValues(ev.Columns, ev.slot(row))
		values := make(map[string]string, len(cols))
		for _, c := range cols {
			if v, ok := fields[c]; ok {
				values[c] = v
			}
		}
		e := r.Expected[i]
		if k, ok := slices.BinarySearch(rb.Violating, row); ok {
			or := rb.Expected[k]
			e.Or = &or
		}
		samples = append(samples, alerts.Sample{Topic: ev.Topic, Partition: m.Partition, Offset: m.Offset,
			Values: values, Fields: fields, Expected: &e})
	}
	return x, samples, nil
}

// rowValues are the non-NULL values at index at of the columns' codes,
// by column name.
func rowValues(cols []table.DictColumn, at int) map[string]string {
	out := make(map[string]string, len(cols))
	for _, c := range cols {
		if code := c.Codes[at]; code != 0 {
			out[c.Name] = c.Dict[code-1]
		}
	}
	return out
}
