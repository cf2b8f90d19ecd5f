package table

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// valuesByRow renders a column back to text through its ranks.
func valuesByRow(c Column) []string {
	out := make([]string, len(c.Ranks))
	for i, r := range c.Ranks {
		out[i] = c.Values[r]
	}
	return out
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name        string
		col         DictColumn
		wantNumeric bool
		wantRanks   []uint32
		wantValues  []string
	}{
		{
			name:        "numeric order: 9 before 10",
			col:         DictColumn{Name: "n", Dict: []string{"10", "9", "-1.5"}, Codes: []uint32{1, 2, 3, 1}},
			wantNumeric: true,
			wantRanks:   []uint32{2, 1, 0, 2},
			wantValues:  []string{"-1.5", "9", "10"},
		},
		{
			name:        "string order: 10 before 9 when one value is text",
			col:         DictColumn{Name: "s", Dict: []string{"10", "9", "x"}, Codes: []uint32{1, 2, 3}},
			wantNumeric: false,
			wantRanks:   []uint32{0, 1, 2},
			wantValues:  []string{"10", "9", "x"},
		},
		{
			name:        "NULL is rank 0, lowest",
			col:         DictColumn{Name: "n", Dict: []string{"5", "-100"}, Codes: []uint32{1, 0, 2, 0}},
			wantNumeric: true,
			wantRanks:   []uint32{2, 0, 1, 0},
			wantValues:  []string{"", "-100", "5"},
		},
		{
			name:        "numerically equal texts share a rank",
			col:         DictColumn{Name: "n", Dict: []string{"1.0", "2", "1", "1e0"}, Codes: []uint32{1, 2, 3, 4}},
			wantNumeric: true,
			wantRanks:   []uint32{0, 1, 0, 0},
			wantValues:  []string{"1.0", "2"},
		},
		{
			name:        "NaN makes the column text",
			col:         DictColumn{Name: "n", Dict: []string{"2", "NaN", "10"}, Codes: []uint32{1, 2, 3}},
			wantNumeric: false,
			wantRanks:   []uint32{1, 2, 0},
			wantValues:  []string{"10", "2", "NaN"},
		},
		{
			name:        "infinities and out-of-range literals are numbers",
			col:         DictColumn{Name: "n", Dict: []string{"Inf", "-1e400", "3"}, Codes: []uint32{1, 2, 3}},
			wantNumeric: true,
			wantRanks:   []uint32{2, 0, 1},
			wantValues:  []string{"-1e400", "3", "Inf"},
		},
		{
			name:        "unused dictionary entries leave no holes",
			col:         DictColumn{Name: "s", Dict: []string{"b", "a", "c"}, Codes: []uint32{3, 1, 3}},
			wantNumeric: false,
			wantRanks:   []uint32{1, 0, 1},
			wantValues:  []string{"b", "c"},
		},
		{
			name:        "byte order, not locale order",
			col:         DictColumn{Name: "s", Dict: []string{"b", "B", "é", "a"}, Codes: []uint32{1, 2, 3, 4}},
			wantNumeric: false,
			wantRanks:   []uint32{2, 0, 3, 1},
			wantValues:  []string{"B", "a", "b", "é"},
		},
		{
			name:       "all NULL",
			col:        DictColumn{Name: "s", Codes: []uint32{0, 0}},
			wantRanks:  []uint32{0, 0},
			wantValues: []string{""},
		},
		{
			name:       "empty",
			col:        DictColumn{Name: "s"},
			wantRanks:  []uint32{},
			wantValues: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := Encode([]DictColumn{tt.col})
			if err != nil {
				t.Fatal(err)
			}
			c := tab.Columns[0]
			if (c.Type == Numeric) != tt.wantNumeric {
				t.Errorf("Type = %v, want numeric %v", c.Type, tt.wantNumeric)
			}
			if !slices.Equal(c.Ranks, tt.wantRanks) {
				t.Errorf("Ranks = %v, want %v", c.Ranks, tt.wantRanks)
			}
			if !slices.Equal(c.Values, tt.wantValues) {
				t.Errorf("Values = %q, want %q", c.Values, tt.wantValues)
			}
			if c.Cardinality != len(c.Values) {
				t.Errorf("Cardinality = %d, len(Values) = %d", c.Cardinality, len(c.Values))
			}
			if tab.Rows != len(tt.col.Codes) {
				t.Errorf("Rows = %d, want %d", tab.Rows, len(tt.col.Codes))
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := Encode([]DictColumn{{Name: "a", Codes: []uint32{0}}, {Name: "b", Codes: []uint32{0, 0}}}); err == nil {
		t.Error("columns of different lengths: no error")
	}
	if _, err := Encode([]DictColumn{{Name: "a", Dict: []string{"x"}, Codes: []uint32{2}}}); err == nil {
		t.Error("code outside the dictionary: no error")
	}
}

func TestTableBuilder(t *testing.T) {
	if _, err := NewTableBuilder([]string{"a", "a"}); err == nil {
		t.Error("duplicate names: no error")
	}
	if _, err := NewTableBuilder([]string{"a", ""}); err == nil {
		t.Error("empty name: no error")
	}
	b, err := NewTableBuilder([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	rows := [][][]byte{{[]byte("x"), []byte("2")}, {[]byte(""), []byte("10")}, {[]byte("x"), []byte("x")}}
	for _, r := range rows {
		if err := b.AppendRow(r, []bool{false, false}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AppendRow([][]byte{[]byte("y")}, nil); err == nil {
		t.Error("short row: no error")
	}
	if _, err := b.AddColumn("c"); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendCodes([]uint32{b.Code(0, []byte("y")), 0, b.Code(2, []byte("z"))}); err != nil {
		t.Fatal(err)
	}
	tab, err := b.Table(Typing{})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Rows != 4 {
		t.Fatalf("Rows = %d", tab.Rows)
	}
	want := [][]string{{"x", "", "x", "y"}, {"2", "10", "x", ""}, {"", "", "", "z"}}
	for i, w := range want {
		if got := valuesByRow(tab.Columns[i]); !slices.Equal(got, w) {
			t.Errorf("column %d = %q, want %q", i, got, w)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	const n, d = 1 << 20, 5000
	dict := make([]string, d)
	for i := range dict {
		dict[i] = string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	codes := make([]uint32, n)
	for i := range codes {
		codes[i] = uint32(i * 7919 % (d + 1)) // includes NULLs
	}
	cols := []DictColumn{{Name: "s", Dict: dict, Codes: codes}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Encode(cols); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
}

// BenchmarkEncodeNumeric encodes a numeric column of 100k distinct
// amounts in random order (a window's prices or taxes), by the radix
// sort and by comparison.
func BenchmarkEncodeNumeric(b *testing.B) {
	const n = 100_000
	c := DictColumn{Name: "amount", Codes: make([]uint32, n)}
	for i := range n {
		c.Dict = append(c.Dict, strconv.FormatFloat(float64(i*7919%n)/100, 'f', 2, 64))
		c.Codes[i] = uint32(i + 1)
	}
	defer func(m int) { radixMin = m }(radixMin)
	for _, path := range []struct {
		name string
		min  int
	}{{"radix", radixMin}, {"comparison", math.MaxInt}} {
		b.Run(path.name, func(b *testing.B) {
			radixMin = path.min
			for b.Loop() {
				if _, err := Encode([]DictColumn{c}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEncodeTyping: the type of a column and the order of its ranks under
// each typing, and the errors of a bad ordinal declaration.
func TestEncodeTyping(t *testing.T) {
	col := func(name string, vals ...string) DictColumn {
		c := DictColumn{Name: name}
		for _, v := range vals {
			if v == "" {
				c.Codes = append(c.Codes, 0)
				continue
			}
			c.Dict = append(c.Dict, v)
			c.Codes = append(c.Codes, uint32(len(c.Dict)))
		}
		return c
	}
	for _, tc := range []struct {
		name      string
		col       DictColumn
		ty        Typing
		wantType  ColumnType
		wantRanks []uint32
	}{
		{"numeric", col("n", "10", "9", ""), Typing{}, Numeric, []uint32{2, 1, 0}},
		{"dates", col("d", "2024-02-01", "2023-12-31"), Typing{}, Temporal, []uint32{1, 0}},
		{"months", col("d", "2024-02", "2023-12"), Typing{}, Temporal, []uint32{1, 0}},
		// By time, not by bytes: 10:00+02:00 is 08:00Z, before 09:00Z.
		{"zones", col("t", "2024-01-01T09:00:00Z", "2024-01-01T10:00:00+02:00", "2024-01-01 08:00:00Z"), Typing{}, Temporal, []uint32{1, 0, 0}},
		{"fraction", col("t", "2024-01-01T00:00:00.5Z", "2024-01-01T00:00:00.25Z"), Typing{}, Temporal, []uint32{1, 0}},
		{"minutes", col("t", "2001-01-01 00:01", "2001-01-01 00:00"), Typing{}, Temporal, []uint32{1, 0}},
		{"mixed is text", col("t", "2024-01-01", "soon"), Typing{}, Nominal, []uint32{0, 1}},
		{"text", col("s", "b", "a", "c"), Typing{}, Nominal, []uint32{1, 0, 2}},
		{"order-text", col("s", "b", "a"), Typing{OrderText: true}, Ordinal, []uint32{1, 0}},
		{"order-text dates by bytes", col("t", "2024-01-01T10:00:00+02:00", "2024-01-01T09:00:00Z"), Typing{OrderText: true}, Ordinal, []uint32{1, 0}},
		{"ordinal by bytes", col("s", "b", "a"), Typing{Ordinal: map[string][]string{"s": nil}}, Ordinal, []uint32{1, 0}},
		{"ordinal by list", col("s", "S", "L", "M", ""), Typing{Ordinal: map[string][]string{"s": {"S", "M", "L"}}}, Ordinal, []uint32{1, 3, 2, 0}},
		{"numeric declared", col("n", "10", "9"), Typing{Ordinal: map[string][]string{"n": nil}}, Numeric, []uint32{1, 0}},
	} {
		tab, err := EncodeTyped([]DictColumn{tc.col}, tc.ty)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := tab.Columns[0]
		if c.Type != tc.wantType || !slices.Equal(c.Ranks, tc.wantRanks) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, c.Type, c.Ranks, tc.wantType, tc.wantRanks)
		}
	}
	for _, tc := range []struct {
		ty   Typing
		want []string
	}{
		{Typing{Ordinal: map[string][]string{"colour": nil}}, []string{`"colour"`}},
		{Typing{Ordinal: map[string][]string{"s": {"S", "M"}}}, []string{`"s"`, `"L"`}},
	} {
		_, err := EncodeTyped([]DictColumn{col("s", "S", "L", "M")}, tc.ty)
		if !errors.Is(err, ErrOrdinal) {
			t.Fatalf("%v: err %v, want ErrOrdinal", tc.ty, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: error %q does not name %s on one line", tc.ty, err, w)
			}
		}
	}
}

// TestEncodeTypedPause: the pause runs before each column, and its error
// stops the encoding as it is.
func TestEncodeTypedPause(t *testing.T) {
	cols := []DictColumn{
		{Name: "a", Dict: []string{"1", "2"}, Codes: []uint32{1, 2, 0}},
		{Name: "b", Dict: []string{"x"}, Codes: []uint32{1, 1, 1}},
		{Name: "c", Dict: []string{"2026-01-01"}, Codes: []uint32{0, 1, 1}},
	}
	want, err := EncodeTyped(cols, Typing{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, err := EncodeTypedPause(context.Background(), cols, Typing{}, func(context.Context) error { calls++; return nil })
	// Before each column, and after typing and sorting it (the columns
	// are shorter than encodePauseValues).
	if err != nil || !reflect.DeepEqual(got, want) || calls != 3*len(cols) {
		t.Fatalf("err %v, %d pauses for %d columns, equal to EncodeTyped: %v", err, calls, len(cols), reflect.DeepEqual(got, want))
	}
	errStop := errors.New("stop")
	calls = 0
	_, err = EncodeTypedPause(context.Background(), cols, Typing{}, func(context.Context) error {
		if calls++; calls == 2 {
			return errStop
		}
		return nil
	})
	if err != errStop || calls != 2 {
		t.Fatalf("err %v after %d pauses, want the pause's error at the second", err, calls)
	}
}

// TestEncodePauseWithinColumn: with the pacer forced to pause at every
// value (encodePauseValues is 1), a column's encoding passes the pause
// while it types the column, the result is the one without pauses, and a
// pause's error stops it (there, or after typing text), returned as it is.
func TestEncodePauseWithinColumn(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ts, nums, text []string
	for i := range 300 {
		at := base.Add(time.Duration(i*7919) * time.Second)
		// Most values share a layout; every tenth another, so that the
		// remembered layout changes back and forth.
		switch i % 10 {
		case 3:
			ts = append(ts, at.Format("2006-01-02 15:04:05"))
		case 7:
			ts = append(ts, at.Format("2006-01-02"))
		default:
			ts = append(ts, at.Format(time.RFC3339Nano))
		}
		nums = append(nums, strconv.Itoa(i*37%101-50))
		text = append(text, "v"+strconv.Itoa(i*13%97))
	}
	for _, vals := range [][]string{ts, nums, text} {
		b, err := NewTableBuilder([]string{"c"})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			b.AppendStrings([]string{v})
		}
		dc := b.DictColumns()[0]
		want, err := encodeColumn(&dc, false, false, nil, &pacer{})
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		p := &pacer{ctx: context.Background(), every: 1, pause: func(context.Context) error { calls++; return nil }}
		got, err := encodeColumn(&dc, false, false, nil, p)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s column: err %v, equal to the unpaused encoding: %v", want.Type, err, reflect.DeepEqual(got, want))
		}
		// Text is typed by its first value (no number, no date); the
		// others parse every value.
		if want.Type != Nominal && calls < len(dc.Dict) {
			t.Fatalf("%s column: %d pauses for %d values typed, want one per value", want.Type, calls, len(dc.Dict))
		}
		errStop := errors.New("stop")
		calls = 0
		p = &pacer{ctx: context.Background(), every: 1, pause: func(context.Context) error {
			if calls++; calls == 3 {
				return errStop
			}
			return nil
		}}
		if _, err := encodeColumn(&dc, false, false, nil, p); err != errStop || calls != 3 {
			t.Fatalf("%s column: err %v after %d pauses, want the pause's error at the third", want.Type, err, calls)
		}
	}
}

// TestParseTemporalFrom: whatever layout it tries first, ParseTemporalFrom
// reads what parseTemporal reads, because a string reads in at most one
// layout; it remembers the layout that read the string.
func TestParseTemporalFrom(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 34, 56, 789000000, time.FixedZone("", 5*3600+1800))
	var inputs []string
	for _, layout := range temporalLayouts {
		inputs = append(inputs, at.Format(layout), at.UTC().Format(layout))
	}
	inputs = append(inputs, at.Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano),
		"2026-03-01T12:34:56.5", "2026-03-01 12:34:56,5", "2026-13-01", "2026-03", "2026-03-01T25:00", "20260301", "x026-03-01", "")
	for _, s := range inputs {
		readers := 0
		for _, layout := range temporalLayouts {
			if _, err := time.Parse(layout, s); err == nil {
				readers++
			}
		}
		if readers > 1 {
			t.Errorf("%q reads in %d layouts", s, readers)
		}
		want, wantOK := parseTemporal(s)
		for first := range temporalLayouts {
			layout := first
			got, ok := ParseTemporalFrom(s, &layout)
			if ok != wantOK || !got.Equal(want) || got.Location().String() != want.Location().String() {
				t.Errorf("%q from layout %d: %v %v, parseTemporal %v %v", s, first, got, ok, want, wantOK)
			}
			if ok {
				if _, err := time.Parse(temporalLayouts[layout], s); err != nil {
					t.Errorf("%q: remembered layout %q does not read it", s, temporalLayouts[layout])
				}
			}
		}
	}
}

// TestRadixSortMatchesComparison encodes random numeric columns (repeated
// values, numbers spelled differently, -0 and 0, infinities, negatives)
// with every column radix sorted and with none, and wants the same
// columns: ranks, values kept and cardinality.
func TestRadixSortMatchesComparison(t *testing.T) {
	defer func(m int) { radixMin = m }(radixMin)
	rng := rand.New(rand.NewPCG(3, 25))
	spell := []func(f float64) string{
		func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
		func(f float64) string { return strconv.FormatFloat(f, 'e', -1, 64) },
		func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
	}
	for trial := range 200 {
		n := 1 + rng.IntN(3000)
		var cols []DictColumn
		for range 1 + rng.IntN(3) {
			c := DictColumn{Name: "c" + strconv.Itoa(len(cols))}
			seen := map[string]uint32{}
			for range n {
				var v string
				switch k := rng.IntN(20); {
				case k == 0:
					v = ""
				case k == 1:
					v = []string{"-0", "0", "0.0", "-0.0", "+Inf", "-Inf", "1e400", "-1e400", "5e-324", "-5e-324"}[rng.IntN(10)]
				default:
					f := float64(rng.IntN(1+trial*10)) / []float64{1, 4, 100}[rng.IntN(3)]
					if rng.IntN(3) == 0 {
						f = -f
					}
					v = spell[rng.IntN(len(spell))](f)
				}
				code, ok := seen[v]
				if v != "" && !ok {
					c.Dict = append(c.Dict, v)
					code = uint32(len(c.Dict))
					seen[v] = code
				}
				c.Codes = append(c.Codes, code)
			}
			cols = append(cols, c)
		}
		radixMin = 0
		radix, err := Encode(cols)
		if err != nil {
			t.Fatal(err)
		}
		radixMin = math.MaxInt
		comparison, err := Encode(cols)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(radix, comparison) {
			t.Fatalf("trial %d: radix sorted %+v\ncompared %+v", trial, radix.Columns, comparison.Columns)
		}
		for _, c := range radix.Columns {
			if c.Type != Numeric {
				t.Fatalf("trial %d: column %s is %v", trial, c.Name, c.Type)
			}
		}
	}
}
