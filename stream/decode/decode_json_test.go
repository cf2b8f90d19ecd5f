package decode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/internal/testkit"
)

func mustDecoder(t testing.TB, cfg DecoderConfig) Decoder {
	t.Helper()
	d, err := NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// reasonOf is the DecodeError reason of err, "" for nil, "other" otherwise.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return "other"
}

func TestDecodeJSON(t *testing.T) {
	wide := func(n int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"f%d":%d`, i, i)
		}
		b.WriteByte('}')
		return b.String()
	}
	tests := []struct {
		name    string
		cfg     DecoderConfig
		in      string
		want    []testField
		ignored int
		reason  string
	}{
		{name: "flat", in: `{"a":1,"b":"x","c":true,"d":false,"e":-1.5e3}`,
			want: []testField{{"a", "1", false}, {"b", "x", false}, {"c", "true", false}, {"d", "false", false}, {"e", "-1.5e3", false}}},
		{name: "nested", in: `{"user":{"id":7,"address":{"zip":"10115"}},"n":1}`,
			want: []testField{{"user.id", "7", false}, {"user.address.zip", "10115", false}, {"n", "1", false}}},
		{name: "arrays ignored", in: `{"a":[1,2,{"x":1}],"b":2,"c":{"d":[]}}`,
			want: []testField{{"b", "2", false}}, ignored: 2},
		{name: "null", in: `{"a":null,"b":{"c":null}}`,
			want: []testField{{"a", "", true}, {"b.c", "", true}}},
		{name: "unicode escapes", in: `{"n\u00e4me":"caf\u00e9 \ud83d\ude00 \"q\" \\ \n","k":"日本"}`,
			want: []testField{{"näme", "café 😀 \"q\" \\ \n", false}, {"k", "日本", false}}},
		{name: "empty object", in: ` {} `, want: nil},
		{name: "whitespace", in: "\n{ \"a\" : 1 }\r\n", want: []testField{{"a", "1", false}}},
		{name: "not object: array", in: `[1,2]`, reason: reasonNotObject},
		{name: "not object: string", in: `"x"`, reason: reasonNotObject},
		{name: "not object: number", in: `42`, reason: reasonNotObject},
		{name: "not object: null", in: `null`, reason: reasonNotObject},
		{name: "malformed: truncated", in: `{"a":1`, reason: reasonMalformed},
		{name: "malformed: garbage", in: `{"a":tru}`, reason: reasonMalformed},
		{name: "malformed: trailing", in: `{"a":1} x`, reason: reasonMalformed},
		{name: "malformed: empty", in: ``, reason: reasonMalformed},
		{name: "malformed: not json", in: `hello`, reason: reasonMalformed},
		{name: "malformed: two objects", in: `{}{}`, reason: reasonMalformed},
		{name: "malformed: nests too deep", in: strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100), reason: reasonMalformed},
		{name: "too large 5MB", in: `{"a":"` + strings.Repeat("x", 5<<20) + `"}`, reason: reasonTooLarge},
		{name: "larger limit accepts", cfg: DecoderConfig{MaxRecordBytes: 16}, in: `{"a":"0123456789"}`, reason: reasonTooLarge},
		{name: "10000 fields", in: wide(10000), reason: reasonTooManyFields},
		{name: "1000 fields ok", in: wide(1000), want: nil},
		{name: "include exact and prefix",
			cfg:  DecoderConfig{Include: []string{"a", "user.*"}},
			in:   `{"a":1,"ab":2,"user":{"id":3,"addr":{"zip":4}},"userx":5}`,
			want: []testField{{"a", "1", false}, {"user.id", "3", false}, {"user.addr.zip", "4", false}}},
		{name: "exclude wins",
			cfg:  DecoderConfig{Include: []string{"user.*"}, Exclude: []string{"user.addr.*", "user.name"}},
			in:   `{"user":{"id":3,"name":"x","addr":{"zip":4}}}`,
			want: []testField{{"user.id", "3", false}}},
		{name: "bare star prefix",
			cfg:  DecoderConfig{Exclude: []string{"tax*"}},
			in:   `{"tax":1,"taxGroup":2,"salary":3}`,
			want: []testField{{"salary", "3", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Format = FormatJSON
			d := mustDecoder(t, cfg)
			var rec FlatRecord
			rec.AddString("stale", "x")
			err := d.Decode(context.Background(), []byte(tt.in), &rec)
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.reason)
			}
			if tt.reason != "" {
				if rec.Len() != 0 {
					t.Fatalf("rejected record left %d fields", rec.Len())
				}
				return
			}
			if tt.name == "1000 fields ok" {
				if rec.Len() != 1000 {
					t.Fatalf("got %d fields", rec.Len())
				}
				return
			}
			if got := recordFields(&rec); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
			if rec.ignored != tt.ignored {
				t.Fatalf("ignored %d, want %d", rec.ignored, tt.ignored)
			}
		})
	}
}

func TestNewDecoderConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  DecoderConfig
		want string // field named in the error
	}{
		{DecoderConfig{}, "Format"},
		{DecoderConfig{Format: "xml"}, "Format"},
		{DecoderConfig{Format: "avro"}, "Schema"},
		{DecoderConfig{Format: "avro", Schema: `{"type":`}, "Schema"},
		{DecoderConfig{Format: "avro", Schema: `"string"`}, "Schema"},
		{DecoderConfig{Format: "avro-confluent"}, "RegistryURL"},
		{DecoderConfig{Format: "json", MaxRecordBytes: -1}, "MaxRecordBytes"},
		{DecoderConfig{Format: "json", MaxFields: -1}, "MaxFields"},
		{DecoderConfig{Format: "json", Include: []string{"a*b"}}, "Include"},
		{DecoderConfig{Format: "json", Exclude: []string{""}}, "Exclude"},
	}
	for _, tt := range tests {
		_, err := NewDecoder(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one naming %s", tt.cfg, err, tt.want)
		}
	}
}

func TestDecodeJSONSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool items at random: the decoder's pooled scratch allocates")
	}
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON, Include: []string{"position", "salary", "tax*"}})
	in := []byte(`{"position":"clerk","experience":3,"salary":52000,"taxGroup":"B","perc":0.21,"tax":10920}`)
	var rec FlatRecord
	ctx := context.Background()
	if err := d.Decode(ctx, in, &rec); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		_ = d.Decode(ctx, in, &rec)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per record", allocs)
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	d := mustDecoder(b, DecoderConfig{Format: FormatJSON})
	inputs := make([][]byte, 1024)
	size := 0
	for i := range inputs {
		inputs[i] = testkit.PayrollJSON(i)
		size += len(inputs[i])
	}
	ctx := context.Background()
	var rec FlatRecord
	b.SetBytes(int64(size / len(inputs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := d.Decode(ctx, inputs[i&1023], &rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":{"b":[1,{"c":2}]},"d":null}`, `[1]`, `"\u00e9"`, `{"a":"\ud83d\ude00"}`, `{`, ``} {
		f.Add([]byte(s))
	}
	d := mustDecoder(f, DecoderConfig{Format: FormatJSON, MaxFields: 50, Exclude: []string{"x*"}})
	f.Fuzz(func(t *testing.T, in []byte) {
		var rec FlatRecord
		err := d.Decode(context.Background(), in, &rec)
		if err != nil {
			if reasonOf(err) == "other" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		if rec.Len() > 50 {
			t.Fatalf("%d fields over the limit", rec.Len())
		}
		// A decoded record survives the window's storage encoding.
		var back FlatRecord
		if err := back.UnmarshalBinary(rec.AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
	})
}
