package alerts

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// explainedEvent is sampleEvent with an explanation and expected values
// (an OC's range, open on one side, and an FD-style value and NULL).
func explainedEvent() Event {
	e := sampleEvent()
	e.Explanation = &Explanation{Violating: 9,
		Segments: []Segment{
			{Column: "source", Value: "import", Violating: 9, ViolatingShare: 1, WindowShare: 0.12, Lift: 8.3},
			{Column: "region", Null: true, Violating: 6, ViolatingShare: 0.667, WindowShare: 0.1, Lift: 6.67},
		},
		First: RecordRef{Topic: "payroll", Partition: 1, Offset: 95, Time: time.Date(2026, 11, 30, 1, 1, 0, 0, time.UTC)},
	}
	e.Samples[0].Expected = &Expected{Column: "tax", Range: true, Low: "500", High: "750", HasLow: true, HasHigh: true}
	e.Samples[1].Expected = &Expected{Column: "tax", Range: true, Low: "700", HasLow: true}
	e.Samples = append(e.Samples,
		Sample{Topic: "payroll", Offset: 160, Values: map[string]string{"salary": "1"}, Expected: &Expected{Column: "tax", Value: "10"}},
		Sample{Topic: "payroll", Offset: 161, Values: map[string]string{"salary": "2"}, Expected: &Expected{Column: "tax", Null: true}},
		// an equivalence's record that breaks its FD both ways
		Sample{Topic: "payroll", Offset: 162, Values: map[string]string{"salary": "3", "tax": "4"},
			Expected: &Expected{Column: "tax", Value: "30", Or: &Expected{Column: "salary", Value: "40"}}})
	return e
}

func TestExplanationJSON(t *testing.T) {
	t.Parallel()
	e := explainedEvent()
	validateEvents(t, eventSchemaT(t), []Event{e})
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"explanation":{"violating":9,"segments":[{"column":"source","value":"import","violating":9,"violating_share":1,"window_share":0.12,"lift":8.3}`,
		`{"column":"region","null":true,"violating":6,`,
		`"first":{"topic":"payroll","partition":1,"offset":95,"time":"2026-11-30T01:01:00Z"}`,
		`"expected":{"column":"tax","low":"500","high":"750"}`,
		`"expected":{"column":"tax","low":"700"}`,
		`"expected":{"column":"tax","value":"10"}`,
		`"expected":{"column":"tax","null":true}`,
		`"expected":{"column":"tax","value":"30","or":{"column":"salary","value":"40"}}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Explanation, e.Explanation) {
		t.Errorf("explanation round trip: %+v, want %+v", back.Explanation, e.Explanation)
	}
	for i := range e.Samples {
		if !reflect.DeepEqual(back.Samples[i].Expected, e.Samples[i].Expected) {
			t.Errorf("sample %d expected round trip: %+v, want %+v", i, back.Samples[i].Expected, e.Samples[i].Expected)
		}
	}
	// Without one, the event's JSON has no explanation and no expected.
	plain, _ := json.Marshal(sampleEvent())
	if strings.Contains(string(plain), "explanation") || strings.Contains(string(plain), "expected") {
		t.Errorf("an event without an explanation: %s", plain)
	}
}

func TestExplanationText(t *testing.T) {
	t.Parallel()
	text := explainedEvent().Text()
	for _, want := range []string{
		"\n    cause: 100% of the violating records have source=import, against 12% of the window",
		"\n    also: 67% of the violating records have region=NULL, against 10% of the window",
		"\n    since: payroll/1@95 at 2026-11-30T01:01:00Z (9 violating records)",
		"payroll/0@123 position=clerk salary=5000 tax=12500 (expected tax 500..750)",
		"(expected tax >= 700)", "(expected tax 10)", "(expected tax NULL)", "(expected tax 30, or salary 40)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if c := (&Explanation{Segments: []Segment{{Column: "a", Value: "x", ViolatingShare: 0.5, WindowShare: 0.004}}}).Cause(); c != "50% of the violating records have a=x, against 0.4% of the window" {
		t.Errorf("cause %q", c)
	}
	if s := (Expected{Column: "perc", Range: true, Low: "30", High: "30", HasLow: true, HasHigh: true}).String(); s != "perc 30" {
		t.Errorf("a one-value range reads %q", s)
	}
	if c := (*Explanation)(nil).Cause(); c != "" {
		t.Errorf("no explanation: cause %q", c)
	}
}

// TestMetricsCause: a violated event with an explanation sets
// odwatch_dependency_cause for its dependency; restoring removes it.
func TestMetricsCause(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	tr := NewTracker(Config{Stream: "payroll", Epsilon: 0.1, Margin: 0.05, K: 1})
	x := &Explanation{Violating: 3, Segments: []Segment{{Column: "source", Value: "import", ViolatingShare: 1, WindowShare: 0.25}}}
	key := "100% of the violating records have source=import, against 25% of the window|" + testDeps["A"].String() + "|payroll"
	for i, a := range []float64{0.01, 0.3, 0.3, 0.01} {
		evs := tr.Observe(testWindow(i+1), testObs(map[string]o{"A": {a, true}}))
		for j := range evs {
			if evs[j].Type == EventViolated {
				evs[j].Explanation = x
			}
		}
		m.Observe(evs)
		m.UpdateTracker("payroll", tr)
		got := series(t, reg, "odwatch_dependency_cause")
		if want := i == 1 || i == 2; (got[key] == 1) != want || len(got) > 1 {
			t.Fatalf("window %d (error %g): cause series %v, want set: %v", i+1, a, got, want)
		}
	}
}
