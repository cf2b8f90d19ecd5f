package discovery

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

type field struct {
	name, value string
	null        bool
}

func flatten(t testing.TB, input string) ([]field, FlattenStats, error) {
	t.Helper()
	var got []field
	st, err := FlattenJSON([]byte(input), func(name, value []byte, null bool) {
		got = append(got, field{string(name), string(value), null})
	})
	return got, st, err
}

func TestFlattenJSON(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []field
		stats FlattenStats
	}{
		{"empty object", ` { } `, nil, FlattenStats{}},
		{"scalars", `{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null}`,
			[]field{{"s", "x", false}, {"n", "-1.5e3", false}, {"t", "true", false}, {"f", "false", false}, {"z", "", true}},
			FlattenStats{Fields: 5}},
		{"nested", `{"a":{"b":{"c":1},"d":"x"},"e":{}}`,
			[]field{{"a.b.c", "1", false}, {"a.d", "x", false}}, FlattenStats{Fields: 2}},
		{"arrays ignored", `{"a":[1,[2],{"x":[]}],"b":[],"c":0}`,
			[]field{{"c", "0", false}}, FlattenStats{Fields: 1, Ignored: 2}},
		{"escapes", `{"k\"ey":"a\\b\n\u00e9\ud83d\ude00\/"}`,
			[]field{{`k"ey`, "a\\b\né😀/", false}}, FlattenStats{Fields: 1}},
		{"lone surrogate", `{"k":"\ud800x\udc00"}`,
			[]field{{"k", "\uFFFDx\uFFFD", false}}, FlattenStats{Fields: 1}},
		{"escaped nested key", `{"a\u002eb":{"c\n":1}}`,
			[]field{{"a.b.c\n", "1", false}}, FlattenStats{Fields: 1}},
		{"duplicate keys both emitted", `{"a":1,"a":2}`,
			[]field{{"a", "1", false}, {"a", "2", false}}, FlattenStats{Fields: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st, err := flatten(t, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("fields = %+v, want %+v", got, tt.want)
			}
			if st != tt.stats {
				t.Errorf("stats = %+v, want %+v", st, tt.stats)
			}
		})
	}
}

func TestFlattenJSONErrors(t *testing.T) {
	for _, input := range []string{
		``, `[]`, `1`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} {}`,
		`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":"\x"}`,
		`{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a":[1,]}`, `{"a":[1 2]}`, `{a:1}`,
		`{"a":{"b":1}`, `{"a":"x`,
	} {
		if _, _, err := flatten(t, input); err == nil {
			t.Errorf("%q: no error", input)
		}
	}
	deep := strings.Repeat(`{"a":`, 10) + "1" + strings.Repeat("}", 10)
	f := Flattener{MaxDepth: 5}
	if _, err := f.Flatten([]byte(deep), func(_, _ []byte, _ bool) {}); err == nil {
		t.Error("depth 10 accepted with MaxDepth 5")
	}
	deepArr := `{"a":` + strings.Repeat("[", 10) + strings.Repeat("]", 10) + "}"
	if _, err := f.Flatten([]byte(deepArr), func(_, _ []byte, _ bool) {}); err == nil {
		t.Error("array depth 10 accepted with MaxDepth 5")
	}
}

func FuzzFlattenJSON(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":"x","d":[1,{"e":null}]},"f":true}`)
	f.Add(`{"k\"":"\ud83d\ude00\u0000"}`)
	f.Add(`{"a":-0.0e+1}`)
	f.Add(`{"a":{"b":{}}}`)
	f.Add(`[{"a":1}]`)
	f.Fuzz(func(t *testing.T, input string) {
		var fields int
		st, err := FlattenJSON([]byte(input), func(name, value []byte, null bool) {
			fields++
			if null && len(value) != 0 {
				t.Fatalf("null with value %q", value)
			}
		})
		if st.Fields != fields {
			t.Fatalf("stats say %d fields, %d emitted", st.Fields, fields)
		}
		// Differential check against encoding/json on syntax: whatever
		// parses as one JSON object there must parse here and vice versa.
		var obj map[string]any
		stdErr := json.Unmarshal([]byte(input), &obj)
		isObject := stdErr == nil && obj != nil
		if err == nil && !json.Valid([]byte(input)) {
			t.Fatalf("accepted invalid JSON %q", input)
		}
		if err == nil && !isObject {
			t.Fatalf("accepted a non-object %q", input)
		}
		if err != nil && isObject && !strings.Contains(err.Error(), "too deep") {
			t.Fatalf("rejected an object encoding/json accepts: %q: %v", input, err)
		}
	})
}

// sixFields is a record shaped like the stream's payroll events.
var sixFields = []byte(`{"id": 1234567, "name": "Jane Doe", "dept": {"name": "sales", "floor": 3}, "salary": 85000.5, "active": true, "ts": "2026-11-30T01:02:03Z"}`)

func BenchmarkFlattenJSON(b *testing.B) {
	var f Flattener
	var n int
	emit := func(name, value []byte, null bool) { n += len(value) }
	b.SetBytes(int64(len(sixFields)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Flatten(sixFields, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}

// BenchmarkFlattenJSONStdlib is the encoding/json baseline the hand-written
// scanner is measured against.
func BenchmarkFlattenJSONStdlib(b *testing.B) {
	b.SetBytes(int64(len(sixFields)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(sixFields, &m); err != nil {
			b.Fatal(err)
		}
	}
}
