package alerts

import (
	"fmt"
	"strings"
	"time"
)

// Explanation says why a violated event's rule broke (docs/DESIGN.md,
// "Explanations"): how many records of the window violate it, the
// segments those records share far more than the window does, best first,
// and the record the break starts at.
type Explanation struct {
	// Violating counts the window's violating records (the rule's
	// complete minimal removal set).
	Violating int
	Segments  []Segment
	// First is the violating record from which on the violations most
	// exceed epsilon: the earliest one, unless the rule had exceptions
	// within epsilon before.
	First RecordRef
}

// Segment is a (column, value) pair of the window's records: its share of
// the violating records against its share of the window. Null: the value
// is NULL (Value empty).
type Segment struct {
	Column                      string
	Value                       string
	Null                        bool
	Violating                   int
	ViolatingShare, WindowShare float64
	Lift                        float64
}

// RecordRef identifies one record of a window: its Kafka coordinates and
// record time.
type RecordRef struct {
	Topic     string
	Partition int32
	Offset    int64
	Time      time.Time
}

// Expected is what a rule expected of a violating record: an FD the value
// of its right-hand column its class holds in the rest of the window
// (Null: NULL), an OC the range of its right-hand column the records
// around it allow (Range; Low and High, each absent, HasLow or HasHigh
// false, when that side is open).
type Expected struct {
	Column          string
	Value           string
	Null            bool
	Range           bool
	Low, High       string
	HasLow, HasHigh bool
	// Or, for an equivalence's record that breaks the FD between its
	// members both ways, is what the other way expected: the record's
	// pair of values disagrees, and which member a fault changed the
	// data cannot tell (a member replaced by another record's value
	// breaks both FDs alike). Nil otherwise.
	Or *Expected
}

// String is "source=import-2026" ("source=NULL" for the NULL value).
func (s Segment) String() string {
	if s.Null {
		return s.Column + "=NULL"
	}
	return s.Column + "=" + s.Value
}

// Cause is the one-line reading of the explanation's top segment, "100%
// of the violating records have source=import-2026, against 12% of the
// window", or "" without a segment.
func (x *Explanation) Cause() string {
	if x == nil || len(x.Segments) == 0 {
		return ""
	}
	s := x.Segments[0]
	return fmt.Sprintf("%s of the violating records have %s, against %s of the window", percent(s.ViolatingShare), s, percent(s.WindowShare))
}

// percent renders a share as a whole percentage, keeping one decimal
// below 10% so that a small share does not read as 0%.
func percent(x float64) string {
	if x < 0.1 && x > 0 {
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// String renders what the rule expected: "perc 30", "perc NULL", "tax
// 3051..3117" ("tax 3051" when both bounds are one value), "tax >= 3051",
// "tax <= 3117".
func (e Expected) String() string {
	if e.Or != nil {
		or := *e.Or
		e.Or = nil
		return e.String() + ", or " + or.String()
	}
	switch {
	case e.Range && e.HasLow && e.HasHigh && e.Low == e.High:
		return e.Column + " " + e.Low
	case !e.Range && e.Null:
		return e.Column + " NULL"
	case !e.Range:
		return e.Column + " " + e.Value
	case e.HasLow && e.HasHigh:
		return e.Column + " " + e.Low + ".." + e.High
	case e.HasLow:
		return e.Column + " >= " + e.Low
	case e.HasHigh:
		return e.Column + " <= " + e.High
	}
	return e.Column
}

// Wire forms (event JSON, schema version 4; expected.or since 5).
type explanationJSON struct {
	Violating int           `json:"violating"`
	Segments  []segmentJSON `json:"segments"`
	First     recordRefJSON `json:"first"`
}

type segmentJSON struct {
	Column         string  `json:"column"`
	Value          *string `json:"value,omitempty"`
	Null           bool    `json:"null,omitempty"`
	Violating      int     `json:"violating"`
	ViolatingShare float64 `json:"violating_share"`
	WindowShare    float64 `json:"window_share"`
	Lift           float64 `json:"lift"`
}

// recordRefJSON leaves time out for a record that has none (a file
// replayed without --time-field), as the event leaves out its own.
type recordRefJSON struct {
	Topic     string     `json:"topic"`
	Partition int32      `json:"partition"`
	Offset    int64      `json:"offset"`
	Time      *time.Time `json:"time,omitempty"`
}

func toRecordRefJSON(r RecordRef) recordRefJSON {
	out := recordRefJSON{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if !r.Time.IsZero() {
		out.Time = &r.Time
	}
	return out
}

func fromRecordRefJSON(j recordRefJSON) RecordRef {
	out := RecordRef{Topic: j.Topic, Partition: j.Partition, Offset: j.Offset}
	if j.Time != nil {
		out.Time = *j.Time
	}
	return out
}

type expectedJSON struct {
	Column string        `json:"column"`
	Value  *string       `json:"value,omitempty"`
	Null   bool          `json:"null,omitempty"`
	Low    *string       `json:"low,omitempty"`
	High   *string       `json:"high,omitempty"`
	Or     *expectedJSON `json:"or,omitempty"`
}

func toExplanationJSON(x *Explanation) *explanationJSON {
	if x == nil {
		return nil
	}
	out := &explanationJSON{Violating: x.Violating, Segments: make([]segmentJSON, len(x.Segments)),
		First: toRecordRefJSON(x.First)}
	for i, s := range x.Segments {
		out.Segments[i] = segmentJSON{Column: s.Column, Null: s.Null, Violating: s.Violating,
			ViolatingShare: s.ViolatingShare, WindowShare: s.WindowShare, Lift: s.Lift}
		if !s.Null {
			out.Segments[i].Value = &s.Value
		}
	}
	return out
}

func fromExplanationJSON(j *explanationJSON) *Explanation {
	if j == nil {
		return nil
	}
	x := &Explanation{Violating: j.Violating, First: fromRecordRefJSON(j.First)}
	for _, s := range j.Segments {
		seg := Segment{Column: s.Column, Null: s.Null, Violating: s.Violating,
			ViolatingShare: s.ViolatingShare, WindowShare: s.WindowShare, Lift: s.Lift}
		if s.Value != nil {
			seg.Value = *s.Value
		}
		x.Segments = append(x.Segments, seg)
	}
	return x
}

func toExpectedJSON(e *Expected) *expectedJSON {
	if e == nil {
		return nil
	}
	j := &expectedJSON{Column: e.Column, Or: toExpectedJSON(e.Or)}
	switch {
	case e.Range:
		if e.HasLow {
			j.Low = &e.Low
		}
		if e.HasHigh {
			j.High = &e.High
		}
	case e.Null:
		j.Null = true
	default:
		j.Value = &e.Value
	}
	return j
}

func fromExpectedJSON(j *expectedJSON) *Expected {
	if j == nil {
		return nil
	}
	e := &Expected{Column: j.Column, Null: j.Null, Range: j.Low != nil || j.High != nil, Or: fromExpectedJSON(j.Or)}
	if j.Value != nil {
		e.Value = *j.Value
	}
	if j.Low != nil {
		e.Low, e.HasLow = *j.Low, true
	}
	if j.High != nil {
		e.High, e.HasHigh = *j.High, true
	}
	return e
}

// explanationText is the explanation's lines of Event.Text: the cause,
// the other segments, the record the break starts at.
func explanationText(b *strings.Builder, x *Explanation) {
	if x == nil {
		return
	}
	if c := x.Cause(); c != "" {
		fmt.Fprintf(b, "\n    cause: %s", c)
	}
	for _, s := range x.Segments[min(1, len(x.Segments)):] {
		fmt.Fprintf(b, "\n    also: %s of the violating records have %s, against %s of the window",
			percent(s.ViolatingShare), s, percent(s.WindowShare))
	}
	at := ""
	if !x.First.Time.IsZero() {
		at = " at " + x.First.Time.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(b, "\n    since: %s/%d@%d%s (%d violating records)",
		x.First.Topic, x.First.Partition, x.First.Offset, at, x.Violating)
}
