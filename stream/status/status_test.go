package status

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream"
)

// fakeSource is a Source with fixed contents.
type fakeSource struct {
	streams []stream.StreamStatus
	rules   map[string][]stream.RuleStatus
	history map[string][]state.RulePoint    // by rule id
	events  map[string][]stream.StatusEvent // oldest first
}

func (f *fakeSource) StatusStreams() []stream.StreamStatus { return f.streams }
func (f *fakeSource) StatusRules(s string) ([]stream.RuleStatus, error) {
	r, ok := f.rules[s]
	if !ok {
		return nil, fmt.Errorf("%w %q", stream.ErrUnknownStream, s)
	}
	return r, nil
}
func (f *fakeSource) StatusHistory(_, id string) ([]state.RulePoint, error) {
	return f.history[id], nil
}
func (f *fakeSource) StatusEvents(s string) ([]stream.StatusEvent, error) {
	return f.events[s], nil
}

func mustDep(t *testing.T, text string) discovery.Dependency {
	t.Helper()
	d, err := discovery.ParseDependency(text)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// payrollSource: salary ~ tax violated with two sampled records, tax_group
// determines perc holding, and the events that led there.
func payrollSource(t *testing.T) *fakeSource {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := stream.StreamStatus{Name: "payroll", Topic: "payroll", Epsilon: 0.01, Margin: 0.004, Window: 1000,
		LastEvaluation: t0.Add(time.Minute), WindowRecords: 1000, WindowStart: t0, WindowEnd: t0.Add(4 * time.Second),
		RecordsPerSecond: 249.75, Holding: 1, Violated: 1}
	st2 := stream.StreamStatus{Name: "orders/eu", Topic: "orders", Epsilon: 0.02, Window: 500}
	sal, grp := mustDep(t, "{}: salary ~ tax (asc)"), mustDep(t, "{tax_group}: [] -> perc")
	var hist []state.RulePoint
	for i := range 120 {
		e := 0.0
		if i >= 110 {
			e = 0.03
		}
		hist = append(hist, state.RulePoint{DependencyID: sal.ID(), WindowEnd: uint64(500*i + 999), Time: t0.Add(time.Duration(i) * time.Second), Error: e, Removals: int(e * 1000), Records: 1000, Violated: i >= 110})
	}
	win := alerts.WindowInfo{Stream: "payroll", Topic: "payroll", StartOffsets: map[int32]int64{0: 54000}, EndOffsets: map[int32]int64{0: 54999}, Records: 1000, EndSeq: 54999, StartTime: t0, EndTime: t0.Add(4 * time.Second)}
	disc := alerts.Event{ID: "ev-disc", Type: alerts.EventDiscovered, Stream: "payroll", Time: t0, DependencyID: sal.ID(), Dependency: sal, DependencyText: sal.String(), Epsilon: 0.01, Margin: 0.004, Window: win}
	viol := alerts.Event{ID: "ev-viol", Type: alerts.EventViolated, Stream: "payroll", Time: t0.Add(time.Minute), DependencyID: sal.ID(), Dependency: sal, DependencyText: sal.String(),
		ErrorBefore: 0, ErrorNow: 0.03, Epsilon: 0.01, Margin: 0.004, Removals: 30, Window: win,
		Samples: []alerts.Sample{
			{Topic: "payroll", Partition: 0, Offset: 54321, Values: map[string]string{"salary": "52000", "tax": "15600"}},
			{Topic: "payroll", Partition: 0, Offset: 54400, Values: map[string]string{"salary": "61000"}},
		}}
	return &fakeSource{
		streams: []stream.StreamStatus{st, st2},
		rules: map[string][]stream.RuleStatus{
			"payroll": {
				{ID: sal.ID(), Text: sal.String(), Dependency: sal, State: alerts.StateViolated, Measured: true, Error: 0.03, Removals: 30},
				{ID: grp.ID(), Text: grp.String(), Dependency: grp, State: alerts.StateHolding, Measured: true},
			},
			"orders/eu": {},
		},
		history: map[string][]state.RulePoint{sal.ID(): hist},
		events:  map[string][]stream.StatusEvent{"payroll": {{Event: disc}, {Event: viol}}},
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body), rec.Result().Header
}

func getJSON(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	code, body, hd := get(t, h, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if ct := hd.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

func TestAPIStreams(t *testing.T) {
	src := payrollSource(t)
	h := Handler(src, Options{Values: true})
	var v struct {
		Version string
		Streams []map[string]any
	}
	getJSON(t, h, "/api/streams", &v)
	if len(v.Streams) != 2 || v.Version == "" {
		t.Fatalf("streams: %+v", v)
	}
	p := v.Streams[0]
	for k, want := range map[string]any{"name": "payroll", "records_per_second": 249.75, "window": 1000.0, "window_records": 1000.0,
		"window_span_seconds": 4.0, "holding": 1.0, "violated": 1.0, "epsilon": 0.01, "last_evaluation": "2026-01-02T03:05:05Z"} {
		if p[k] != want {
			t.Errorf("payroll %s = %v, want %v", k, p[k], want)
		}
	}
	if v.Streams[1]["last_evaluation"] != nil {
		t.Errorf("a stream not evaluated yet has last_evaluation %v, want null", v.Streams[1]["last_evaluation"])
	}
	// The version moves with an evaluation.
	src.streams[1].LastEvaluation = time.Now()
	var v2 struct{ Version string }
	getJSON(t, h, "/api/streams", &v2)
	if v2.Version == v.Version {
		t.Error("version unchanged after an evaluation")
	}
}

func TestAPIStream(t *testing.T) {
	h := Handler(payrollSource(t), Options{Values: true})
	var v struct {
		Stream struct{ Name string }
		Rules  []struct {
			Text, Description, State string
			Error                    float64
			Band                     struct{ Low, Epsilon, High float64 }
			History                  []struct {
				WindowEnd uint64 `json:"window_end"`
				Error     float64
				Violated  bool
			}
		}
		Events []struct {
			ID, Type string
		}
	}
	getJSON(t, h, "/api/streams/payroll", &v)
	if len(v.Rules) != 2 {
		t.Fatalf("rules: %+v", v.Rules)
	}
	r := v.Rules[0]
	if r.Text != "{}: salary ~ tax (asc)" || r.State != "violated" || r.Description != "sorting by salary sorts tax" {
		t.Errorf("first rule %+v, want the violated salary ~ tax", r)
	}
	if r.Band.Low != 0.006 || r.Band.Epsilon != 0.01 || r.Band.High != 0.014 {
		t.Errorf("band %+v, want 0.006 .. 0.014", r.Band)
	}
	if len(r.History) != 120 || r.History[0].WindowEnd != 999 || !r.History[119].Violated {
		t.Errorf("history: %d points, first %+v", len(r.History), r.History[0])
	}
	if len(v.Events) != 2 || v.Events[0].ID != "ev-viol" {
		t.Errorf("events %+v, want newest first", v.Events)
	}
	// A stream name that needs escaping in a path.
	var o struct{ Stream struct{ Name string } }
	getJSON(t, h, "/api/streams/orders%2Feu", &o)
	if o.Stream.Name != "orders/eu" {
		t.Errorf("escaped stream name: got %q", o.Stream.Name)
	}
}

func TestAPIRule(t *testing.T) {
	src := payrollSource(t)
	id := src.rules["payroll"][0].ID
	for _, values := range []bool{true, false} {
		t.Run(fmt.Sprintf("values=%v", values), func(t *testing.T) {
			h := Handler(src, Options{Values: values})
			var v struct {
				Rule        struct{ Text, Description string }
				Columns     []string
				Values      bool
				SamplesFrom string `json:"samples_from"`
				Samples     []struct {
					Topic     string
					Partition int32
					Offset    int64
					Values    map[string]string
				}
				Events []struct {
					Type    string
					Samples []struct {
						Offset int64
						Values map[string]string
					}
				}
			}
			getJSON(t, h, "/api/streams/payroll/rules/"+id, &v)
			if v.Rule.Description != "sorting by salary sorts tax" || strings.Join(v.Columns, ",") != "salary,tax" {
				t.Errorf("rule %+v columns %v", v.Rule, v.Columns)
			}
			if len(v.Samples) != 2 || v.Samples[0].Offset != 54321 || v.SamplesFrom != "ev-viol" || v.Values != values {
				t.Fatalf("samples %+v from %q", v.Samples, v.SamplesFrom)
			}
			if got := v.Samples[0].Values["tax"]; (got == "15600") != values {
				t.Errorf("sample tax value %q with values=%v", got, values)
			}
			if len(v.Events) != 2 || v.Events[0].Type != "violated" || v.Events[0].Samples[0].Offset != 54321 {
				t.Fatalf("events %+v", v.Events)
			}
			if got := v.Events[0].Samples[0].Values["salary"]; (got == "52000") != values {
				t.Errorf("event sample value %q with values=%v", got, values)
			}
			// The page agrees.
			_, page, _ := get(t, h, "/streams/payroll/rules/"+id)
			if !strings.Contains(page, "54321") || strings.Contains(page, "15600") != values {
				t.Errorf("rule page with values=%v: offset shown %v, value shown %v", values, strings.Contains(page, "54321"), strings.Contains(page, "15600"))
			}
		})
	}
	// The source is not changed by redaction.
	if src.events["payroll"][1].Event.Samples[0].Values["tax"] != "15600" {
		t.Error("redaction changed the source's events")
	}
}

func TestNotFoundAndReadOnly(t *testing.T) {
	h := Handler(payrollSource(t), Options{Values: true})
	for _, p := range []string{"/streams/nope", "/api/streams/nope", "/api/streams/payroll/rules/0000", "/streams/payroll/rules/0000", "/nope", "/static/pages.html"} {
		if code, body, _ := get(t, h, p); code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", p, code, body)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, p := range []string{"/", "/api/streams", "/api/streams/payroll", "/streams/payroll"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(m, p, strings.NewReader("{}")))
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", m, p, rec.Code)
			}
		}
	}
	for _, p := range []string{"/", "/static/status.js", "/static/status.css"} {
		code, _, hd := get(t, h, p)
		if code != http.StatusOK || !strings.Contains(hd.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: %d, CSP %q", p, code, hd.Get("Content-Security-Policy"))
		}
	}
}

// TestInjectionRendersAsText: column names and values holding markup are
// shown as text on every page, never as elements.
func TestInjectionRendersAsText(t *testing.T) {
	const evilCol = `<script>alert("col")</script>`
	const evilVal = `"><img src=x onerror=alert(1)>`
	const evilStream = `<b>s</b>`
	d := discovery.Dependency{Kind: discovery.KindOC, Context: []string{evilCol}, Left: "salary", Right: evilVal, Polarity: discovery.Asc}
	src := payrollSource(t)
	src.streams = append(src.streams, stream.StreamStatus{Name: evilStream, Topic: evilCol, Epsilon: 0.01})
	src.rules[evilStream] = []stream.RuleStatus{{ID: d.ID(), Text: d.String(), Dependency: d, State: alerts.StateViolated, Measured: true, Error: 0.5}}
	src.events[evilStream] = []stream.StatusEvent{{Event: alerts.Event{ID: "e1", Type: alerts.EventViolated, Stream: evilStream, DependencyID: d.ID(), Dependency: d, DependencyText: d.String(),
		Window:  alerts.WindowInfo{StartOffsets: map[int32]int64{0: 1}, EndOffsets: map[int32]int64{0: 2}},
		Samples: []alerts.Sample{{Topic: evilCol, Offset: 7, Values: map[string]string{evilCol: evilVal, "salary": evilVal, evilVal: evilCol}}}}}}
	h := Handler(src, Options{Values: true})
	paths := []string{"/", streamHref(evilStream), ruleHref(evilStream, d.ID())}
	for _, p := range paths {
		code, body, _ := get(t, h, p)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, code, body)
		}
		for _, bad := range []string{"<script>alert", "<img", "<b>s</b>", "onerror=alert(1)>"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: page contains %q unescaped", p, bad)
			}
		}
		if p != "/" && !strings.Contains(body, "&lt;script&gt;alert(&#34;col&#34;)&lt;/script&gt;") {
			t.Errorf("GET %s: the column name is not shown as text", p)
		}
	}
	_, body, _ := get(t, h, ruleHref(evilStream, d.ID()))
	if !strings.Contains(body, "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("the value is not shown as text:\n%s", body)
	}
}

// TestChangedEvent: a changed event shows what moved (its examples only
// with values shown) and a retired one what replaced it.
func TestChangedEvent(t *testing.T) {
	src := payrollSource(t)
	grp := mustDep(t, "{tax_group}: [] -> perc")
	ch := alerts.Event{ID: "ev-ch", Type: alerts.EventChanged, Stream: "payroll", DependencyID: grp.ID(), Dependency: grp, DependencyText: grp.String(),
		Change: &alerts.Change{Share: 1, Moved: 2, Compared: 2, Examples: []alerts.ChangeExample{{Class: map[string]string{"tax_group": "A"}, Before: "10", After: "16"}}}}
	ret := alerts.Event{ID: "ev-ret", Type: alerts.EventRetired, Stream: "payroll", DependencyID: grp.ID(), Dependency: grp, DependencyText: grp.String(),
		ReplacedBy: "{}: [] -> perc"}
	src.events["payroll"] = append(src.events["payroll"], stream.StatusEvent{Event: ch}, stream.StatusEvent{Event: ret})
	for _, values := range []bool{true, false} {
		_, body, _ := get(t, Handler(src, Options{Values: values}), streamHref("payroll"))
		for _, want := range []string{"perc changed in 2 of the 2 tax_group classes compared (100% of the window&#39;s records)", "replaced by <code>{}: [] -&gt; perc</code>", `class="type changed"`} {
			if !strings.Contains(body, want) {
				t.Errorf("values %v: the stream page lacks %q", values, want)
			}
		}
		if got := strings.Contains(body, "A 10 -&gt; 16"); got != values {
			t.Errorf("values %v: the example shown: %v", values, got)
		}
	}
}

func TestChartGeometry(t *testing.T) {
	b := band{Low: 0.006, Eps: 0.01, High: 0.014}
	c := newChart(nil, b, largeW, largeH)
	if c.Line != "" || c.Points != 0 || c.BandH <= 0 {
		t.Errorf("empty chart %+v", c)
	}
	pts := []pointJSON{{WindowEnd: 1, Error: 0}, {WindowEnd: 2, Error: 0.02, Violated: true}, {WindowEnd: 3, Error: 0.01}}
	c = newChart(pts, b, largeW, largeH)
	// ymax = 0.02 * headroom: the top of the plot is above the highest point.
	if c.Line != "52,224 432,36.17 812,130.09" {
		t.Errorf("line %q", c.Line)
	}
	if len(c.Dots) != 1 || !c.Dots[0].Violated || c.Dots[0].X != 432 {
		t.Errorf("dots %+v, want the violated point", c.Dots)
	}
	if !(c.BandY < c.EpsY && c.EpsY < c.BandY+c.BandH) {
		t.Errorf("eps line %v outside the band %v+%v", c.EpsY, c.BandY, c.BandH)
	}
}

// TestAPIRuleRelated: a rule that changed state as a related one of
// another rule's event lists that event, with the samples the status
// history computed for it, never the leading rule's; a rule known only
// from such an event (no longer tracked) still has a page.
func TestAPIRuleRelated(t *testing.T) {
	src := payrollSource(t)
	lead, rel, gone := mustDep(t, "{}: tax_group ~ tax (asc)"), mustDep(t, "{tax_group}: [] -> perc"), mustDep(t, "{}: perc ~ tax (asc)")
	src.events["payroll"] = append(src.events["payroll"], stream.StatusEvent{Event: alerts.Event{ID: "ev-group", Type: alerts.EventViolated, Stream: "payroll",
		DependencyID: lead.ID(), Dependency: lead, DependencyText: lead.String(), ErrorNow: 0.02,
		Window:  alerts.WindowInfo{StartOffsets: map[int32]int64{0: 1}, EndOffsets: map[int32]int64{0: 2}},
		Samples: []alerts.Sample{{Topic: "payroll", Offset: 99, Values: map[string]string{"tax_group": "C", "tax": "1"}}},
		Related: []alerts.Related{
			{DependencyID: rel.ID(), Dependency: rel, DependencyText: rel.String(), ErrorNow: 0.02},
			{DependencyID: gone.ID(), Dependency: gone, DependencyText: gone.String(), ErrorNow: 0.03},
		}}, RelatedSamples: map[string][]alerts.Sample{gone.ID(): {{Topic: "payroll", Offset: 77, Values: map[string]string{"perc": "250"}}}}})
	h := Handler(src, Options{Values: true})
	var v struct {
		Rule        struct{ Text, Description string }
		Events      []struct{ ID string }
		Samples     []struct{ Offset int64 }
		SamplesWith string `json:"samples_with"`
	}
	getJSON(t, h, "/api/streams/payroll/rules/"+rel.ID(), &v)
	if len(v.Events) != 1 || v.Events[0].ID != "ev-group" || len(v.Samples) != 0 {
		t.Errorf("related rule: events %+v samples %+v, want the group's event and no samples", v.Events, v.Samples)
	}
	v.Samples = nil
	getJSON(t, h, "/api/streams/payroll/rules/"+gone.ID(), &v)
	if v.Rule.Text != gone.String() || v.Rule.Description != "sorting by perc sorts tax" {
		t.Errorf("untracked related rule: %+v", v.Rule)
	}
	if len(v.Samples) != 1 || v.Samples[0].Offset != 77 || v.SamplesWith != lead.String() {
		t.Errorf("related rule's own samples %+v with %q, want offset 77 with %q", v.Samples, v.SamplesWith, lead.String())
	}
	_, page, _ := get(t, h, streamHref("payroll"))
	if !strings.Contains(page, "and 2 related") || !strings.Contains(page, ruleHref("payroll", gone.ID())) {
		t.Error("the stream's timeline does not list the related rules of a grouped event")
	}
}

// TestRuleExplained: an explained violated event's rule page shows its
// segments (with their bars), the first violating record, and each
// sample's expected value and every field of its record; with values
// redacted, none of the values.
func TestRuleExplained(t *testing.T) {
	src := payrollSource(t)
	id := src.rules["payroll"][0].ID
	ev := &src.events["payroll"][1].Event
	ev.Explanation = &alerts.Explanation{Violating: 30,
		Segments: []alerts.Segment{{Column: "source", Value: "import-2026", Violating: 30, ViolatingShare: 1, WindowShare: 0.34, Lift: 2.94}},
		First:    alerts.RecordRef{Topic: "payroll", Partition: 0, Offset: 54017, Time: ev.Time}}
	ev.Samples[0].Expected = &alerts.Expected{Column: "tax", Range: true, Low: "1300", High: "1560", HasLow: true, HasHigh: true}
	ev.Samples[0].Fields = map[string]string{"salary": "52000", "tax": "15600", "source": "import-2026", "position": "clerk"}
	for _, values := range []bool{true, false} {
		h := Handler(src, Options{Values: values})
		var v struct {
			Columns     []string
			Explanation struct {
				Violating int
				Segments  []struct{ Column, Value string }
				First     struct{ Offset int64 }
			}
			Samples []struct {
				Values   map[string]string
				Expected string
			}
		}
		getJSON(t, h, "/api/streams/payroll/rules/"+id, &v)
		x := v.Explanation
		if x.Violating != 30 || len(x.Segments) != 1 || x.Segments[0].Column != "source" || x.First.Offset != 54017 {
			t.Fatalf("values=%v: explanation %+v", values, x)
		}
		if (x.Segments[0].Value == "import-2026") != values || (v.Samples[0].Expected == "tax 1300..1560") != values ||
			(v.Samples[0].Values["position"] == "clerk") != values {
			t.Errorf("values=%v: segment %+v, sample %+v", values, x.Segments[0], v.Samples[0])
		}
		if strings.Join(v.Columns, ",") != "salary,tax,position,source" {
			t.Errorf("columns %v: the rule's, then the records' other fields", v.Columns)
		}
		_, page, _ := get(t, h, "/streams/payroll/rules/"+id)
		for _, want := range []string{"54017", `class="bars"`, "100.0% / 34.0%"} {
			if !strings.Contains(page, want) {
				t.Errorf("values=%v: the rule page lacks %q", values, want)
			}
		}
		if strings.Contains(page, "<th>source</th>") != values {
			t.Errorf("values=%v: the records table's columns shown: %v", values, !values)
		}
		if strings.Contains(page, "import-2026") != values || strings.Contains(page, "1300..1560") != values {
			t.Errorf("values=%v: the rule page shows values: %v", values, !values)
		}
		var sv struct{ Events []alerts.Event }
		getJSON(t, h, "/api/streams/payroll", &sv)
		if got := sv.Events[0].Explanation; got == nil || (got.Segments[0].Value == "import-2026") != values {
			t.Errorf("values=%v: stream page event explanation %+v", values, got)
		}
	}
}

// TestAutoMarginJSON: an automatic margin is reported as "auto" with its
// value, and the band uses the value, not AutoMargin's -1.
func TestAutoMarginJSON(t *testing.T) {
	st := stream.StreamStatus{Name: "p", Epsilon: 0.01, Margin: 0.005, MarginAuto: true, Window: 2000}
	b, err := json.Marshal(toStreamJSON(st))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"margin":"auto","margin_value":0.005`) {
		t.Errorf("stream JSON %s, want margin auto and its value", b)
	}
	if got := bandOf(st); got.Low != 0.005 || got.High != 0.015 {
		t.Errorf("band %+v, want 0.005..0.015", got)
	}
	st.MarginAuto = false
	if b, _ := json.Marshal(toStreamJSON(st)); !strings.Contains(string(b), `"margin":0.005,"margin_value":0.005`) {
		t.Errorf("fixed margin: %s", b)
	}
}
