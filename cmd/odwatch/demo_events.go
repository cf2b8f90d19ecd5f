package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
)

// demoSink prints events for a person watching the demo (see
// demoEventText), instead of the one long line of alerts.Event.Text.
type demoSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *demoSink) Send(ctx context.Context, events []alerts.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range events {
		if err := ctx.Err(); err != nil {
			return &alerts.SendError{Sent: i, Err: err}
		}
		if _, err := io.WriteString(s.w, demoEventText(e)); err != nil {
			return &alerts.SendError{Sent: i, Err: fmt.Errorf("demo: write event %s: %w", e.ID, err)}
		}
	}
	return nil
}

func (s *demoSink) Close() error { return nil }

// demoEventText renders an event as a headline (clock, type, stream,
// dependency), a line saying in plain words what changed, with the figures
// that matter for the type (a discovered rule: its exceptions and
// strength), one line per related rule that changed with it, a violated
// event's cause and the record its break starts at, and up to three sample
// records with what the rule expected of them:
//
//	10:02:03 DISCOVERED payroll {}: salary ~ tax (asc)
//	         sorting by salary sorts tax, except 2 rows (0.1%); strength 0.97; window p0:0-1999 (2000 records)
//	10:02:03 DISCOVERED payroll {tax_group}: [] -> perc
//	         tax_group determines perc, with no exception; strength 1.00; window p0:0-1999 (2000 records)
//	10:02:09 VIOLATED   payroll {}: salary ~ tax (asc)
//	         error 0% -> 3.1%, above epsilon 1% + margin 0.4%: 62 rows to remove; window p0:4000-5999 (2000 records)
//	         related {salary}: [] -> tax: error 0% -> 1.4%
//	         cause: 100% of the violating records have source=import-2026, against 33% of the window
//	         since payroll/0@4017 (10:02:04); 62 violating records in the window
//	         e.g. payroll/0@4123 perc=250 salary=71900 (expected perc 25)
func demoEventText(e alerts.Event) string {
	return eventText(e, fmt.Sprintf("%s %-10s %s %s", e.Time.Local().Format("15:04:05"), eventType(e), e.Stream, e.DependencyText))
}

// eventType is the event's type as a headline shows it.
func eventType(e alerts.Event) string { return strings.ToUpper(string(e.Type)) }

// eventText is demoEventText under the given headline (the demo's has its
// clock; a replay's says where in its input it was).
func eventText(e alerts.Event, headline string) string {
	var b strings.Builder
	b.WriteString(headline)
	b.WriteByte('\n')
	now := discovery.Result{Dependency: e.Dependency, Removals: e.Removals, Error: e.ErrorNow}
	const indent = "         "
	b.WriteString(indent)
	switch e.Type {
	case alerts.EventDiscovered:
		b.WriteString(discovery.DescribeResult(now))
		if e.Removals == 0 {
			b.WriteString(", with no exception")
		}
		if e.Strength > 0 {
			fmt.Fprintf(&b, "; strength %.2f", e.Strength)
		}
	case alerts.EventViolated:
		fmt.Fprintf(&b, "error %s -> %s, above epsilon %s + margin %s: %d rows to remove",
			pct(e.ErrorBefore), pct(e.ErrorNow), pct(e.Epsilon), pct(e.Margin), e.Removals)
	case alerts.EventRestored:
		fmt.Fprintf(&b, "holds again: error %s -> %s, back within epsilon %s - margin %s",
			pct(e.ErrorBefore), pct(e.ErrorNow), pct(e.Epsilon), pct(e.Margin))
	case alerts.EventChanged:
		fmt.Fprintf(&b, "holds again with other values: error %s -> %s", pct(e.ErrorBefore), pct(e.ErrorNow))
		if e.Change != nil {
			fmt.Fprintf(&b, "; %s", e.Change.Text(e.Dependency))
		}
	case alerts.EventRetired:
		if e.ReplacedBy != "" {
			fmt.Fprintf(&b, "no longer tracked: replaced by %s (error %s)", e.ReplacedBy, pct(e.ErrorNow))
		} else {
			fmt.Fprintf(&b, "no longer tracked (error %s)", pct(e.ErrorNow))
		}
	default:
		fmt.Fprintf(&b, "error %s -> %s", pct(e.ErrorBefore), pct(e.ErrorNow))
	}
	fmt.Fprintf(&b, "; window%s (%d records)\n", strings.TrimPrefix(e.Window.Range(), e.Window.Topic), e.Window.Records)
	for _, r := range e.Related {
		fmt.Fprintf(&b, "%srelated %s: error %s -> %s\n", indent, r.DependencyText, pct(r.ErrorBefore), pct(r.ErrorNow))
	}
	if x := e.Explanation; x != nil {
		if c := x.Cause(); c != "" {
			fmt.Fprintf(&b, "%scause: %s\n", indent, c)
		}
		at := "" // a file replayed without --time-field has no record times
		if !x.First.Time.IsZero() {
			at = " (" + x.First.Time.Local().Format("15:04:05") + ")"
		}
		fmt.Fprintf(&b, "%ssince %s/%d@%d%s; %d violating records in the window\n",
			indent, x.First.Topic, x.First.Partition, x.First.Offset, at, x.Violating)
	}
	for i, s := range e.Samples {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "%se.g. %s/%d@%d", indent, s.Topic, s.Partition, s.Offset)
		for _, k := range slices.Sorted(maps.Keys(s.Values)) {
			fmt.Fprintf(&b, " %s=%s", k, s.Values[k])
		}
		if s.Expected != nil {
			fmt.Fprintf(&b, " (expected %s)", s.Expected)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// pct writes a share as a percentage with two significant digits.
func pct(share float64) string {
	return strconv.FormatFloat(share*100, 'g', 2, 64) + "%"
}
