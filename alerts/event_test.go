package alerts

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func sampleEvent() Event {
	d := discovery.Dependency{Kind: discovery.KindOC, Context: []string{"position"}, Left: "salary", Right: "tax", Polarity: discovery.Asc}
	w := WindowInfo{
		Stream: "payroll", Topic: "payroll",
		StartOffsets: map[int32]int64{0: 100, 1: 90}, EndOffsets: map[int32]int64{0: 199, 1: 189},
		StartTime: time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC), EndTime: time.Date(2026, 11, 30, 1, 5, 0, 500, time.UTC),
		Records: 200, EndSeq: 400,
	}
	id := DependencyID(d)
	rel := discovery.Dependency{Kind: discovery.KindOFD, Context: []string{"tax"}, RHS: "salary"}
	return Event{
		ID: EventID("payroll", id, w.EndSeq, EventViolated), Type: EventViolated, Stream: "payroll", Time: w.EndTime,
		DependencyID: id, Dependency: d, DependencyText: d.String(),
		ErrorBefore: 0, ErrorNow: 0.045, Epsilon: 0.03, Margin: 0.005, Removals: 9, Strength: 0.93, Window: w,
		Samples: []Sample{
			{Topic: "payroll", Partition: 0, Offset: 123, Values: map[string]string{"salary": "5000", "tax": "12500", "position": "clerk"}},
			{Topic: "payroll", Partition: 1, Offset: 150, Values: map[string]string{"salary": "7000", "position": "clerk"}},
		},
		Related: []Related{{DependencyID: DependencyID(rel), Dependency: rel, DependencyText: rel.String(),
			ErrorBefore: 0.001, ErrorNow: 0.04, Removals: 8}},
	}
}

func TestEventJSONGolden(t *testing.T) {
	b, err := json.MarshalIndent(sampleEvent(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "event.golden.json")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(append(b, '\n'), want) {
		t.Fatalf("event JSON changed (the field names are a public contract):\n%s\nwant\n%s", b, want)
	}

	// Exactly the documented field names, at every level.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) string {
		var k []string
		for key := range v.(map[string]any) {
			k = append(k, key)
		}
		slices.Sort(k)
		return strings.Join(k, ",")
	}
	for _, c := range []struct {
		what string
		v    any
		want string
	}{
		{"event", m, "dependency,dependency_id,dependency_text,epsilon,error_before,error_now,id,margin,related,removals,samples,stream,strength,time,type,window"},
		{"related", m["related"].([]any)[0], "dependency,dependency_id,dependency_text,error_before,error_now,removals"},
		{"dependency", m["dependency"], "context,kind,left,polarity,right"},
		{"window", m["window"], "end_offsets,end_seq,end_time,records,start_offsets,start_time,topic"},
		{"sample", m["samples"].([]any)[0], "offset,partition,topic,values"},
	} {
		if got := keys(c.v); got != c.want {
			t.Errorf("%s keys %s, want %s", c.what, got, c.want)
		}
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	deps := []discovery.Dependency{
		{Kind: discovery.KindOFD, Context: []string{"zip"}, RHS: "city"},
		{Kind: discovery.KindOFD, RHS: "country"},
		{Kind: discovery.KindOC, Context: []string{"a", "b"}, Left: "x", Right: "y", Polarity: discovery.Desc},
		{Kind: discovery.KindListOD, LHSList: []string{"a", "b"}, RHSList: []string{"c"}},
	}
	for _, d := range deps {
		e := sampleEvent()
		e.Dependency, e.DependencyText, e.DependencyID = d, d.String(), DependencyID(d)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got Event
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		e.Dependency = canonical(e.Dependency) // decoding yields empty, not nil, lists
		if !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %s:\n%+v\nwant\n%+v", d, got, e)
		}
	}
	var e Event
	if err := json.Unmarshal([]byte(`{"dependency":{"kind":"nope"}}`), &e); err == nil {
		t.Error("unknown kind decoded without error")
	}
	if err := json.Unmarshal([]byte(`{"dependency":{"kind":"ofd"},"window":{"end_offsets":{"x":1}}}`), &e); err == nil {
		t.Error("bad partition decoded without error")
	}
}

func TestEventText(t *testing.T) {
	got := sampleEvent().Text()
	want := "2026-11-30T01:05:00Z VIOLATED payroll {position}: salary ~ tax (asc) error 0.0000 -> 0.0450 (eps 0.0300, margin 0.0050) removals 9 window payroll p0:100-199 p1:90-189 (200 records) id " + sampleEvent().ID + "\n" +
		"    related {tax}: [] -> salary error 0.0010 -> 0.0400 removals 8\n" +
		"    payroll/0@123 position=clerk salary=5000 tax=12500\n" +
		"    payroll/1@150 position=clerk salary=7000"
	if got != want {
		t.Fatalf("Text():\n%s\nwant\n%s", got, want)
	}
}

func TestDependencyID(t *testing.T) {
	oc := func(ctx []string, l, r string, p discovery.Polarity) discovery.Dependency {
		return discovery.Dependency{Kind: discovery.KindOC, Context: ctx, Left: l, Right: r, Polarity: p}
	}
	base := oc([]string{"a", "b"}, "x", "y", discovery.Asc)
	same := []discovery.Dependency{
		oc([]string{"b", "a"}, "x", "y", discovery.Asc),
		oc([]string{"a", "b"}, "y", "x", discovery.Asc),
	}
	different := []discovery.Dependency{
		oc([]string{"a", "b"}, "x", "y", discovery.Desc),
		oc([]string{"a"}, "x", "y", discovery.Asc),
		oc([]string{"a,b"}, "x", "y", discovery.Asc),
		oc([]string{"ab"}, "x", "y", discovery.Asc),
		{Kind: discovery.KindOFD, Context: []string{"a", "b"}, RHS: "x"},
		{Kind: discovery.KindListOD, LHSList: []string{"a", "b"}, RHSList: []string{"x"}},
		{Kind: discovery.KindListOD, LHSList: []string{"b", "a"}, RHSList: []string{"x"}},
	}
	id := DependencyID(base)
	if len(id) != 16 {
		t.Fatalf("id %q is not 16 hex chars", id)
	}
	// Golden: the id is persisted and used as a Kafka key; it must not change.
	if want := goldenDepID; id != want {
		t.Fatalf("DependencyID(%s) = %s, want %s", base, id, want)
	}
	for _, d := range same {
		if DependencyID(d) != id {
			t.Errorf("%s: id %s differs from %s's %s", d, DependencyID(d), base, id)
		}
	}
	seen := map[string]string{id: base.String()}
	for _, d := range different {
		if prev, ok := seen[DependencyID(d)]; ok {
			t.Errorf("%s has the same id as %s", d, prev)
		}
		seen[DependencyID(d)] = d.String()
	}
}

func TestEventID(t *testing.T) {
	id := EventID("payroll", "0123456789abcdef", 400, EventViolated)
	if want := goldenEventID; id != want {
		t.Fatalf("EventID = %s, want %s (ids must be stable across releases)", id, want)
	}
	if EventID("payroll", "0123456789abcdef", 400, EventViolated) != id {
		t.Fatal("EventID not deterministic")
	}
	for _, other := range []string{
		EventID("payroll2", "0123456789abcdef", 400, EventViolated),
		EventID("payroll", "0123456789abcdee", 400, EventViolated),
		EventID("payroll", "0123456789abcdef", 401, EventViolated),
		EventID("payroll", "0123456789abcdef", 400, EventRestored),
		EventID("payrol", "l0123456789abcdef", 400, EventViolated),
	} {
		if other == id {
			t.Errorf("different input gave the same id %s", id)
		}
	}
}

const (
	goldenDepID   = "110493d83b78b05d"
	goldenEventID = "cf41860bbce5b2b25853908f3ebafc41"
)
