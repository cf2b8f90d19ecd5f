package tableio

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

type field struct {
	name, value string
	null        bool
}

func flatten(t testing.TB, input string) ([]field, FlattenStats, error) {
	t.Helper()
	var got []field
	st, err := flattenJSON([]byte(input), func(name, value []byte, null bool) {
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
		st, err := flattenJSON([]byte(input), func(name, value []byte, null bool) {
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
		// Flatten passes a string's bytes through unvalidated, where
		// encoding/json replaces invalid UTF-8.
		if err == nil && utf8.ValidString(input) {
			got, _, _ := flatten(t, input)
			if want := flattenTokens(t, input); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%q: fields %+v, encoding/json's tokens give %+v", input, got, want)
			}
		}
	})
}

// flattenTokens flattens a JSON object from encoding/json's token stream,
// as Flatten's doc says: the oracle of the fields' names and values.
func flattenTokens(t testing.TB, input string) []field {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(input))
	dec.UseNumber()
	next := func() json.Token {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", input, err)
		}
		return tok
	}
	var out []field
	var object func(prefix string)
	// skip skips the rest of an array or object whose opening token was
	// read.
	skip := func() {
		for depth := 1; depth > 0; {
			switch next() {
			case json.Delim('['), json.Delim('{'):
				depth++
			case json.Delim(']'), json.Delim('}'):
				depth--
			}
		}
	}
	object = func(prefix string) {
		for {
			tok := next()
			if tok == json.Delim('}') {
				return
			}
			name := tok.(string)
			if prefix != "" {
				name = prefix + "." + name
			}
			switch v := next().(type) {
			case json.Delim:
				if v == '{' {
					object(name)
				} else {
					skip()
				}
			case string:
				out = append(out, field{name, v, false})
			case json.Number:
				out = append(out, field{name, string(v), false})
			case bool:
				out = append(out, field{name, fmt.Sprint(v), false})
			case nil:
				out = append(out, field{name, "", true})
			}
		}
	}
	if next() != json.Delim('{') {
		t.Fatalf("%q: not an object", input)
	}
	object("")
	return out
}

func TestFlattenJSONTokens(t *testing.T) {
	for _, input := range []string{
		`{"a":1,"b":{"c":"x","d":[1,{"e":null}]},"f":true}`,
		`{"a\u002eb":{"c\n":1},"x":{"y":{"z":false},"w":-2.5e-3},"":{"":1,"k":"v"}}`,
		` { "s" : "x" , "t" : { } , "u" : [ ] , "v" : null } `,
		`{"a":{"b":1},"a":{"b":2},"c":"\ud83d\ude00"}`,
	} {
		got, _, err := flatten(t, input)
		if err != nil {
			t.Fatalf("%q: %v", input, err)
		}
		if want := flattenTokens(t, input); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: fields %+v, encoding/json's tokens give %+v", input, got, want)
		}
	}
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
