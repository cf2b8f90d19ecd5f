package discovery

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func sampleDiscovery() *Discovery {
	return &Discovery{
		Rows:    1000,
		Columns: []string{"zip", "city", "sal", "tax"},
		Epsilon: 0.05,
		Dependencies: []Result{
			{Dependency: Dependency{Kind: KindOFD, Context: []string{"zip"}, RHS: "city"}, Removals: 12, Error: 0.012, Score: 0.31, Strength: 0.75, Reliable: true, RemovalSample: []int{3, 17}},
			{Dependency: Dependency{Kind: KindOC, Left: "sal", Right: "tax", Polarity: Desc}, Removals: 50, Error: 0.05, Score: 1, Strength: NoStrength},
		},
		Stats:    Stats{Seconds: 0.5, Candidates: 10, Validations: 8, Levels: 3},
		Complete: true,
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleDiscovery().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	want := map[string]any{
		"rows": 1000.0, "columns": []any{"zip", "city", "sal", "tax"}, "epsilon": 0.05,
		"dependencies": []any{
			map[string]any{"kind": "ofd", "context": []any{"zip"}, "rhs": "city", "error": 0.012, "removals": 12.0, "score": 0.31, "strength": 0.75, "reliable": true, "removal_sample": []any{3.0, 17.0}, "text": "{zip}: [] -> city"},
			map[string]any{"kind": "oc", "context": []any{}, "left": "sal", "right": "tax", "polarity": "desc", "error": 0.05, "removals": 50.0, "score": 1.0, "strength": nil, "reliable": false, "text": "{}: sal ~ tax (desc)"},
		},
		"stats": map[string]any{"seconds": 0.5, "candidates": 10.0, "validations": 8.0, "levels": 3.0},
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("document\n%s\nwant %v", buf.String(), want)
	}
	if !strings.Contains(buf.String(), `"context":[]`) {
		t.Errorf("empty context not written as []:\n%s", buf.String())
	}

	empty := &Discovery{}
	buf.Reset()
	if err := empty.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("empty discovery not JSON: %v\n%s", err, buf.String())
	}
	if doc["columns"] == nil || doc["dependencies"] == nil {
		t.Errorf("null arrays in %s", buf.String())
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	d := sampleDiscovery()
	if err := d.WriteText(&buf, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		"{zip}: [] -> city  strength=0.75  e=0.012  removals=12  score=0.31  sample=[3,17]",
		"# 1 more hold but look like chance (near-key contexts, near-constant columns); --all lists them",
		"# 2 dependencies (1 ofd, 1 oc), 1 reliable, on 1000 rows x 4 columns at eps=0.05; 10 candidates, 8 validations, 3 levels, 0.50s",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("text:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
	buf.Reset()
	if err := d.WriteText(&buf, true); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want = []string{
		"{zip}: [] -> city     strength=0.75  e=0.012  removals=12  score=0.31  sample=[3,17]",
		"# 1 more hold but look like chance (near-key contexts, near-constant columns):",
		"{}: sal ~ tax (desc)  strength=-  e=0.05  removals=50  score=1",
		"# 2 dependencies (1 ofd, 1 oc), 1 reliable, on 1000 rows x 4 columns at eps=0.05; 10 candidates, 8 validations, 3 levels, 0.50s",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("text --all:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
	// A bound of an unreliable strength (Options.BoundUnreliable) reads
	// as one, rounded up.
	d.Dependencies[1].Strength, d.Dependencies[1].StrengthBound = 0.123, true
	buf.Reset()
	if err := d.WriteText(&buf, true); err != nil {
		t.Fatal(err)
	}
	if want := "{}: sal ~ tax (desc)  strength<=0.13  e=0.05"; !strings.Contains(buf.String(), want) {
		t.Errorf("text --all with a strength bound:\n%s\nwant a line with %q", buf.String(), want)
	}
	d.Complete = false
	buf.Reset()
	d.WriteText(&buf, false)
	if !strings.Contains(buf.String(), "incomplete") {
		t.Errorf("incomplete run not flagged:\n%s", buf.String())
	}
}

func TestDependencyJSONRoundTrip(t *testing.T) {
	for _, d := range []Dependency{
		{Kind: KindOFD, Context: []string{}, RHS: "a"},
		{Kind: KindOFD, Context: []string{"x", "y"}, RHS: "a"},
		{Kind: KindOC, Context: []string{"x"}, Left: "a", Right: "b", Polarity: Desc},
		{Kind: KindOC, Context: []string{}, Left: "a", Right: "b"},
		{Kind: KindListOD, LHSList: []string{"a", "b"}, RHSList: []string{"c"}},
	} {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back Dependency
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(back, d) {
			t.Errorf("%s: got %#v, want %#v", data, back, d)
		}
		for _, r := range []Result{
			{Dependency: d, Removals: 3, Error: 0.3, Score: 0.5, RemovalSample: []int{1, 2, 3}},
			{Dependency: d, Removals: 3, Error: 0.3, Score: 0.5, Strength: 0.2, StrengthBound: true},
		} {
			data, err = json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(data), `"strength_bound":true`); got != r.StrengthBound {
				t.Errorf("%s: strength_bound written %v, want %v", data, got, r.StrengthBound)
			}
			var rback Result
			if err := json.Unmarshal(data, &rback); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			if !reflect.DeepEqual(rback, r) {
				t.Errorf("%s: got %#v, want %#v", data, rback, r)
			}
		}
	}
	for _, bad := range []string{`{"kind":"x"}`, `{"kind":"ofd","rhs":[1]}`, `{"kind":"oc","polarity":"up"}`, `{"kind":"od","rhs":"c"}`, `[]`} {
		var d Dependency
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := json.Marshal(Dependency{Kind: Kind(9)}); err == nil {
		t.Error("unknown kind marshalled")
	}
}

func TestDependencyID(t *testing.T) {
	a := Dependency{Kind: KindOC, Context: []string{"x", "y"}, Left: "a", Right: "b"}
	b := Dependency{Kind: KindOC, Context: []string{"y", "x"}, Left: "b", Right: "a"}
	if a.ID() != b.ID() {
		t.Errorf("column order changes the id: %s vs %s", a.ID(), b.ID())
	}
	if len(a.ID()) != 16 {
		t.Errorf("id %q is not 16 hex digits", a.ID())
	}
	distinct := []Dependency{
		a,
		{Kind: KindOC, Context: []string{"x", "y"}, Left: "a", Right: "b", Polarity: Desc},
		{Kind: KindOC, Context: []string{"x"}, Left: "a", Right: "b"},
		{Kind: KindOFD, Context: []string{"x", "y"}, RHS: "a"},
		{Kind: KindOFD, Context: []string{"x,y"}, RHS: "a"},
		{Kind: KindListOD, LHSList: []string{"a", "b"}, RHSList: []string{"c"}},
		{Kind: KindListOD, LHSList: []string{"b", "a"}, RHSList: []string{"c"}},
	}
	seen := map[string]string{}
	for _, d := range distinct {
		if prev, ok := seen[d.ID()]; ok {
			t.Errorf("%s and %s share id %s", prev, d, d.ID())
		}
		seen[d.ID()] = d.String()
	}
}
