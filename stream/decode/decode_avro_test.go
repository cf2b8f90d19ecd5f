package decode

import (
	"context"
	"math/big"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/odwatch/odwatch/internal/testkit"
)

const testAvroSchema = `{
  "type": "record", "name": "Employee", "namespace": "com.example",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "salary", "type": "double"},
    {"name": "perc", "type": "float"},
    {"name": "active", "type": "boolean"},
    {"name": "grade", "type": {"type": "enum", "name": "Grade", "symbols": ["A", "B", "C"]}},
    {"name": "manager", "type": ["null", "string"]},
    {"name": "bonus", "type": ["null", "long", "string"]},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
      {"name": "zip", "type": "string"},
      {"name": "geo", "type": ["null", {"type": "record", "name": "Geo", "fields": [
        {"name": "lat", "type": "double"}]}]}
    ]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "string"}},
    {"name": "raw", "type": "bytes"},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 2}},
    {"name": "home", "type": ["null", "Address"]},
    {"name": "hired", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "born", "type": {"type": "int", "logicalType": "date"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}}
  ]
}`

func testAvroDatum() map[string]any {
	return map[string]any{
		"id":      int64(42),
		"name":    "Ada",
		"salary":  52000.25,
		"perc":    float32(0.1),
		"active":  true,
		"grade":   "B",
		"manager": goavro.Union("string", "Grace"),
		"bonus":   goavro.Union("long", int64(7)),
		"address": map[string]any{"zip": "10115", "geo": goavro.Union("com.example.Geo", map[string]any{"lat": 52.5})},
		"tags":    []any{"x", "y"},
		"attrs":   map[string]any{"k": "v"},
		"raw":     []byte("bin"),
		"hash":    []byte("hh"),
		"home":    nil,
		"hired":   time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC),
		"born":    time.Date(1990, 5, 17, 0, 0, 0, 0, time.UTC),
		"price":   big.NewRat(12345, 100),
	}
}

func TestDecodeAvro(t *testing.T) {
	good := testkit.EncodeAvro(t, testAvroSchema, testAvroDatum())
	wantAll := []testField{
		{"id", "42", false},
		{"name", "Ada", false},
		{"salary", "52000.25", false},
		{"perc", "0.1", false},
		{"active", "true", false},
		{"grade", "B", false},
		{"manager", "Grace", false},
		{"bonus", "7", false},
		{"address.zip", "10115", false},
		{"address.geo.lat", "52.5", false},
		{"raw", "bin", false},
		{"hash", "hh", false},
		{"home", "", true},
		{"hired", "2024-03-01T12:00:00.000000000Z", false},
		{"born", "1990-05-17", false},
		{"price", "123.45", false},
	}
	tests := []struct {
		name    string
		cfg     DecoderConfig
		in      []byte
		want    []testField
		ignored int
		reason  string
	}{
		{name: "all types", in: good, want: wantAll, ignored: 2},
		{name: "include", cfg: DecoderConfig{Include: []string{"address.*", "id"}}, in: good, ignored: 2,
			want: []testField{{"id", "42", false}, {"address.zip", "10115", false}, {"address.geo.lat", "52.5", false}}},
		{name: "trailing bytes", in: append(append([]byte{}, good...), 0), reason: reasonBadAvro},
		{name: "truncated", in: good[:len(good)-3], reason: reasonBadAvro},
		{name: "empty", in: nil, reason: reasonBadAvro},
		{name: "garbage", in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, reason: reasonBadAvro},
		{name: "too large", cfg: DecoderConfig{MaxRecordBytes: 10}, in: good, reason: reasonTooLarge},
		{name: "too many fields", cfg: DecoderConfig{MaxFields: 5}, in: good, reason: reasonTooManyFields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Format, cfg.Schema = formatAvro, testAvroSchema
			d := mustDecoder(t, cfg)
			var rec FlatRecord
			err := d.Decode(context.Background(), tt.in, &rec)
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.reason)
			}
			if tt.reason != "" {
				return
			}
			if got := recordFields(&rec); !slices.Equal(got, tt.want) {
				t.Fatalf("got  %v\nwant %v", got, tt.want)
			}
			if rec.ignored != tt.ignored {
				t.Fatalf("ignored %d, want %d", rec.ignored, tt.ignored)
			}
		})
	}
}

func TestDecodeAvroUnionBranches(t *testing.T) {
	schema := `{"type":"record","name":"R","fields":[
		{"name":"u","type":["null","int","string",{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]},{"type":"map","values":"int"}]}]}`
	tests := []struct {
		val     any
		want    []testField
		ignored int
	}{
		{nil, []testField{{"u", "", true}}, 0},
		{goavro.Union("int", int32(3)), []testField{{"u", "3", false}}, 0},
		{goavro.Union("string", "s"), []testField{{"u", "s", false}}, 0},
		{goavro.Union("In", map[string]any{"x": int32(9)}), []testField{{"u.x", "9", false}}, 0},
		{goavro.Union("map", map[string]any{"a": int32(1)}), nil, 1},
	}
	d := mustDecoder(t, DecoderConfig{Format: formatAvro, Schema: schema})
	for _, tt := range tests {
		in := testkit.EncodeAvro(t, schema, map[string]any{"u": tt.val})
		var rec FlatRecord
		if err := d.Decode(context.Background(), in, &rec); err != nil {
			t.Fatal(err)
		}
		if got := recordFields(&rec); !slices.Equal(got, tt.want) || rec.ignored != tt.ignored {
			t.Errorf("%v: got %v (ignored %d), want %v (ignored %d)", tt.val, got, rec.ignored, tt.want, tt.ignored)
		}
	}
}

func TestDecodeAvroFloatsRoundTrip(t *testing.T) {
	schema := `{"type":"record","name":"F","fields":[{"name":"d","type":"double"},{"name":"f","type":"float"}]}`
	d := mustDecoder(t, DecoderConfig{Format: formatAvro, Schema: schema})
	for _, v := range []float64{0.1, 1e300, -2.5e-300, 123456789.123456789, 3} {
		in := testkit.EncodeAvro(t, schema, map[string]any{"d": v, "f": float32(v)})
		var rec FlatRecord
		if err := d.Decode(context.Background(), in, &rec); err != nil {
			t.Fatal(err)
		}
		_, got, _ := rec.Field(0)
		if want := formatFloatForTest(v); string(got) != want {
			t.Errorf("double %v: got %s want %s", v, got, want)
		}
	}
}

func BenchmarkDecodeAvro(b *testing.B) {
	schema := `{"type":"record","name":"P","fields":[{"name":"position","type":"string"},{"name":"experience","type":"int"},
		{"name":"salary","type":"long"},{"name":"taxGroup","type":"string"},{"name":"perc","type":"double"},{"name":"tax","type":"double"}]}`
	in := testkit.EncodeAvro(b, schema, map[string]any{"position": "clerk", "experience": int32(3), "salary": int64(52000), "taxGroup": "B", "perc": 0.21, "tax": 10920.0})
	d := mustDecoder(b, DecoderConfig{Format: formatAvro, Schema: schema})
	var rec FlatRecord
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(ctx, in, &rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func FuzzDecodeAvro(f *testing.F) {
	f.Add(testkit.EncodeAvro(f, testAvroSchema, testAvroDatum()))
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	d := mustDecoder(f, DecoderConfig{Format: formatAvro, Schema: testAvroSchema})
	f.Fuzz(func(t *testing.T, in []byte) {
		var rec FlatRecord
		err := d.Decode(context.Background(), in, &rec)
		if err != nil && reasonOf(err) == "other" {
			t.Fatalf("error without a reason: %v", err)
		}
	})
}

func TestDecodeAvroHostileAndEdgeCases(t *testing.T) {
	arr := `{"type":"record","name":"A","fields":[{"name":"xs","type":{"type":"array","items":"null"}},{"name":"n","type":"int"}]}`
	list := `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`
	misc := `{"type":"record","name":"M","fields":[
		{"name":"b","type":"boolean"},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}},
		{"name":"u","type":["null","int"]},
		{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}},
		{"name":"fd","type":{"type":"fixed","name":"F","size":2,"logicalType":"decimal","precision":4,"scale":1}},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
		{"name":"tm","type":{"type":"int","logicalType":"time-millis"}}]}`
	// b=true, e=Y, u=int 5, d=-1.23 (0xff85 = -123), fd=25.6 (0x0100 = 256),
	// ts=1 µs after the epoch, tm=1000 ms.
	miscGood := []byte{1, 2, 2, 10, 4, 0xff, 0x85, 0x01, 0x00, 2, 0xd0, 0x0f}
	tests := []struct {
		name   string
		schema string
		in     []byte
		want   []testField
		reason string
	}{
		{name: "negative block count with size", schema: arr, in: []byte{3, 2, 0xaa, 0, 4},
			want: []testField{{"n", "2", false}}},
		{name: "huge block count of zero-byte items", schema: arr, in: []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 4}, reason: reasonBadAvro},
		{name: "huge negative block size", schema: arr, in: []byte{1, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 4}, reason: reasonBadAvro},
		{name: "recursive list", schema: list, in: []byte{2, 2, 4, 2, 6, 0},
			want: []testField{{"v", "1", false}, {"next.v", "2", false}, {"next.next.v", "3", false}, {"next.next.next", "", true}}},
		{name: "recursion too deep", schema: list, in: deepList(1000), reason: reasonBadAvro},
		{name: "misc logical types", schema: misc, in: miscGood, want: []testField{
			{"b", "true", false}, {"e", "Y", false}, {"u", "5", false}, {"d", "-1.23", false}, {"fd", "25.6", false},
			{"ts", "1970-01-01T00:00:00.000001000Z", false}, {"tm", "1000", false}}},
		{name: "bad boolean", schema: misc, in: append([]byte{2}, miscGood[1:]...), reason: reasonBadAvro},
		{name: "enum out of range", schema: misc, in: append([]byte{1, 4}, miscGood[2:]...), reason: reasonBadAvro},
		{name: "union index out of range", schema: misc, in: append([]byte{1, 2, 4}, miscGood[3:]...), reason: reasonBadAvro},
		{name: "int out of range", schema: arr, in: []byte{0, 0xfe, 0xff, 0xff, 0xff, 0x7f}, reason: reasonBadAvro},
		{name: "unterminated varint", schema: arr, in: []byte{0, 0xff}, reason: reasonBadAvro},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustDecoder(t, DecoderConfig{Format: formatAvro, Schema: tt.schema})
			var rec FlatRecord
			err := d.Decode(context.Background(), tt.in, &rec)
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.reason)
			}
			if tt.reason == "" && !slices.Equal(recordFields(&rec), tt.want) {
				t.Fatalf("got  %v\nwant %v", recordFields(&rec), tt.want)
			}
		})
	}
}

// deepList encodes a Node list n long.
func deepList(n int) []byte {
	var b []byte
	for range n {
		b = append(b, 2, 2) // v=1, next = branch 1 (Node)
	}
	return append(b, 2, 0) // v=1, next = null
}

// TestDecodeAvroAgreesWithGoavro decodes the same bytes with goavro and
// checks that the flattened values agree with goavro's natives.
func TestDecodeAvroAgreesWithGoavro(t *testing.T) {
	codec, err := goavro.NewCodec(testAvroSchema)
	if err != nil {
		t.Fatal(err)
	}
	in := testkit.EncodeAvro(t, testAvroSchema, testAvroDatum())
	native, rest, err := codec.NativeFromBinary(in)
	if err != nil || len(rest) != 0 {
		t.Fatal(err, len(rest))
	}
	m := native.(map[string]any)
	d := mustDecoder(t, DecoderConfig{Format: formatAvro, Schema: testAvroSchema})
	var rec FlatRecord
	if err := d.Decode(context.Background(), in, &rec); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range recordFields(&rec) {
		got[f.name] = f.value
	}
	checks := map[string]string{
		"id":     strconv.FormatInt(m["id"].(int64), 10),
		"salary": strconv.FormatFloat(m["salary"].(float64), 'g', -1, 64),
		"perc":   strconv.FormatFloat(float64(m["perc"].(float32)), 'g', -1, 32),
		"grade":  m["grade"].(string),
		"raw":    string(m["raw"].([]byte)),
		"hired":  m["hired"].(time.Time).UTC().Format("2006-01-02T15:04:05.000000000Z"),
		"born":   m["born"].(time.Time).UTC().Format(time.DateOnly),
		"price":  m["price"].(*big.Rat).FloatString(2),
	}
	for k, want := range checks {
		if got[k] != want {
			t.Errorf("%s: got %q, goavro %q", k, got[k], want)
		}
	}
}

func TestDecodeAvroSteadyStateAllocs(t *testing.T) {
	schema := `{"type":"record","name":"P","fields":[{"name":"position","type":"string"},{"name":"salary","type":"long"},{"name":"perc","type":["null","double"]}]}`
	in := testkit.EncodeAvro(t, schema, map[string]any{"position": "clerk", "salary": int64(52000), "perc": goavro.Union("double", 0.21)})
	d := mustDecoder(t, DecoderConfig{Format: formatAvro, Schema: schema})
	var rec FlatRecord
	ctx := context.Background()
	if err := d.Decode(ctx, in, &rec); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = d.Decode(ctx, in, &rec) }); allocs > 0 {
		t.Fatalf("%v allocations per record", allocs)
	}
}
