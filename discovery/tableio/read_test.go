package tableio

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"

	"github.com/odwatch/odwatch/internal/testkit"
)

func gz(t testing.TB, s string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// tableText renders a table as column name -> cell texts.
func tableText(tab *table.Table) map[string][]string {
	out := make(map[string][]string, len(tab.Columns))
	for _, c := range tab.Columns {
		text := make([]string, len(c.Ranks))
		for i, r := range c.Ranks {
			text[i] = c.Values[r]
		}
		out[c.Name] = text
	}
	return out
}

func columnNames(tab *table.Table) []string {
	var out []string
	for _, c := range tab.Columns {
		out = append(out, c.Name)
	}
	return out
}

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name  string
		input string
		opts  CSVOptions
		cols  []string
		want  map[string][]string
	}{
		{
			name:  "plain, empty cell is NULL",
			input: "a,b\n1,x\n,y\n3,\n",
			cols:  []string{"a", "b"},
			want:  map[string][]string{"a": {"1", "", "3"}, "b": {"x", "y", ""}},
		},
		{
			name:  "quotes and embedded newline and comma",
			input: "a,b\n\"he said \"\"hi\"\"\",\"x,\ny\"\n2,z\n",
			cols:  []string{"a", "b"},
			want:  map[string][]string{"a": {`he said "hi"`, "2"}, "b": {"x,\ny", "z"}},
		},
		{
			name:  "delimiter",
			input: "a;b\n1,5;x\n",
			opts:  CSVOptions{Delimiter: ';'},
			cols:  []string{"a", "b"},
			want:  map[string][]string{"a": {"1,5"}, "b": {"x"}},
		},
		{
			name:  "tab delimiter and CRLF",
			input: "a\tb\r\n1\t2\r\n",
			opts:  CSVOptions{Delimiter: '\t'},
			cols:  []string{"a", "b"},
			want:  map[string][]string{"a": {"1"}, "b": {"2"}},
		},
		{
			name:  "gzip by content",
			input: gz(t, "a,b\n1,2\n3,4\n"),
			cols:  []string{"a", "b"},
			want:  map[string][]string{"a": {"1", "3"}, "b": {"2", "4"}},
		},
		{
			name:  "header only",
			input: "a,b\n",
			cols:  []string{"a", "b"},
			want:  map[string][]string{"a": {}, "b": {}},
		},
		{
			name:  "no trailing newline, BOM stripped",
			input: "\uFEFFa\n1",
			cols:  []string{"a"},
			want:  map[string][]string{"a": {"1"}},
		},
		{
			name:  "max rows",
			input: "a\n1\n2\n3\n",
			opts:  CSVOptions{MaxRows: 2},
			cols:  []string{"a"},
			want:  map[string][]string{"a": {"1", "2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := ReadCSV(strings.NewReader(tt.input), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := columnNames(tab); !slices.Equal(got, tt.cols) {
				t.Errorf("columns = %q, want %q", got, tt.cols)
			}
			got := tableText(tab)
			for name, w := range tt.want {
				if !slices.Equal(got[name], w) {
					t.Errorf("column %s = %q, want %q", name, got[name], w)
				}
			}
		})
	}
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		wantLine int    // 0: not an *inputError
		wantText string // substring of the message
	}{
		{"empty file", "", 0, "header line is required"},
		{"ragged row", "a,b,c\n1,2,3\n4,5\n", 3, "line 3: 2 fields, header has 3"},
		{"ragged row after a multi-line cell", "a,b\n\"x\ny\",1\n1,2,3\n", 4, "line 4: 3 fields, header has 2"},
		{"bad quote", "a,b\n1,2\n3,x\"y\n", 3, "line 3"},
		{"unterminated quote", "a,b\n1,\"2\n", 2, "line 2"},
		{"duplicate header", "a,b,a\n1,2,3\n", 1, `duplicate column name "a"`},
		{"empty header name", "a,,c\n1,2,3\n", 1, "empty name"},
		{"corrupt gzip", "\x1f\x8bxxxxxxxxxxxxxxxxxxxx", 0, "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tt.input), CSVOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			var ie *inputError
			if errors.As(err, &ie) != (tt.wantLine != 0) {
				t.Fatalf("errors.As(*inputError) = %v for %v", !(tt.wantLine != 0), err)
			}
			if ie != nil && ie.Line != tt.wantLine {
				t.Errorf("line = %d, want %d", ie.Line, tt.wantLine)
			}
		})
	}
}

func TestReadCSVProgress(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("a\n")
	for i := 0; i < progressEvery+5; i++ {
		sb.WriteString("1\n")
	}
	var calls []int
	tab, err := ReadCSV(strings.NewReader(sb.String()), CSVOptions{Progress: func(n int) { calls = append(calls, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{progressEvery, progressEvery + 5}; !slices.Equal(calls, want) {
		t.Errorf("progress calls %v, want %v", calls, want)
	}
	if tab.Rows != progressEvery+5 {
		t.Errorf("rows = %d", tab.Rows)
	}
}

func TestReadJSONLines(t *testing.T) {
	input := `{"a": 1, "b": {"c": "x", "d": {"e": true}}, "arr": [1, {"z": 2}]}

{"a": null, "b": {"c": "y\u00e9"}, "late": 2.50, "list": []}
{"b": {"c": ""}, "a": 3, "a": 4}
`
	tab, info, err := ReadJSONLines(strings.NewReader(input), JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b.c", "b.d.e", "late"}; !slices.Equal(columnNames(tab), want) {
		t.Errorf("columns = %q, want %q", columnNames(tab), want)
	}
	want := map[string][]string{
		"a":     {"1", "", "4"},
		"b.c":   {"x", "yé", ""},
		"b.d.e": {"true", "", ""},
		"late":  {"", "2.50", ""},
	}
	got := tableText(tab)
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("column %s = %q, want %q", name, got[name], w)
		}
	}
	if info.Skipped != 2 || info.BlankLines != 1 {
		t.Errorf("info = %+v, want 2 skipped, 1 blank line", info)
	}
	if tab.Columns[0].Type != table.Numeric || tab.Columns[1].Type == table.Numeric {
		t.Errorf("typing: a %v, b.c %v", tab.Columns[0].Type, tab.Columns[1].Type)
	}

	// a byte order mark, CRLF line ends
	tab, _, err = ReadJSONLines(strings.NewReader("\uFEFF{\"a\":1}\r\n{\"a\":2}\r\n"), JSONOptions{})
	if err != nil || tab.Rows != 2 {
		t.Fatalf("BOM and CRLF: %v", err)
	}

	// gzip, and a line longer than the read buffer
	long := `{"k": "` + strings.Repeat("x", 200000) + `"}` + "\n" + `{"k": "y"}`
	tab, _, err = ReadJSONLines(strings.NewReader(gz(t, long)), JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Rows != 2 || len(tab.Columns[0].Values[0]) != 200000 {
		t.Errorf("long line: rows=%d", tab.Rows)
	}
}

func TestReadJSONLinesErrors(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		wantLine int
	}{
		{"bad syntax", "{\"a\":1}\n{\"a\":}\n", 2},
		{"not an object", "{\"a\":1}\n\n[1,2]\n", 3},
		{"trailing garbage", "{\"a\":1} x\n", 1},
		{"too deep", strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100) + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadJSONLines(strings.NewReader(tt.input), JSONOptions{})
			var ie *inputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *inputError", err)
			}
			if ie.Line != tt.wantLine {
				t.Errorf("line = %d, want %d (%v)", ie.Line, tt.wantLine, err)
			}
		})
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("a,b\n1,2\n", uint8(0))
	f.Add("a,b\n\"x\ny\",\"\"\"\"\n", uint8(0))
	f.Add("a;b\n1;2\n3\n", uint8(1))
	f.Add("a,a\n", uint8(0))
	f.Add(gz(f, "a,b\n1,x\n"), uint8(0))
	f.Add("a,b\n\"1,2\n", uint8(2))
	f.Fuzz(func(t *testing.T, input string, d uint8) {
		delims := []rune{',', ';', '\t'}
		tab, err := ReadCSV(strings.NewReader(input), CSVOptions{Delimiter: delims[int(d)%len(delims)]})
		if err != nil {
			return
		}
		checkTable(t, tab)
	})
}

func FuzzReadJSONLines(f *testing.F) {
	f.Add("{\"a\":1,\"b\":{\"c\":\"x\"}}\n{\"d\":[1,2],\"a\":null}\n")
	f.Add("{\"a\":\"\\ud83d\\ude00\"}\n\n")
	f.Add("{}\n{\"\":1}\n")
	f.Add("{\"a\":1e5,\"a\":-0.5}")
	f.Fuzz(func(t *testing.T, input string) {
		tab, _, err := ReadJSONLines(strings.NewReader(input), JSONOptions{})
		if err != nil {
			return
		}
		checkTable(t, tab)
	})
}

// checkTable asserts the invariants of an encoded table.
func checkTable(t *testing.T, tab *table.Table) {
	t.Helper()
	for _, c := range tab.Columns {
		if len(c.Ranks) != tab.Rows {
			t.Fatalf("column %q has %d ranks for %d rows", c.Name, len(c.Ranks), tab.Rows)
		}
		if c.Cardinality != len(c.Values) {
			t.Fatalf("column %q: cardinality %d, %d values", c.Name, c.Cardinality, len(c.Values))
		}
		seen := make([]bool, c.Cardinality)
		for _, r := range c.Ranks {
			if int(r) >= c.Cardinality {
				t.Fatalf("column %q: rank %d >= cardinality %d", c.Name, r, c.Cardinality)
			}
			seen[r] = true
		}
		for r, ok := range seen {
			if !ok {
				t.Fatalf("column %q: rank %d unused (ranks not dense)", c.Name, r)
			}
		}
		if c.Type == table.Nominal {
			for r := 1; r < len(c.Values); r++ {
				if c.Values[r-1] >= c.Values[r] {
					t.Fatalf("column %q: values not in byte order: %q", c.Name, c.Values)
				}
			}
		}
	}
}

// BenchmarkReadFlights times reading the shared 3M-row flights file
// (gzip), and checks that every row and column was read.
func BenchmarkReadFlights(b *testing.B) {
	path := testkit.SharedData(b, "flights-3m.csv.gz")
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var tab *table.Table
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		tab, err = ReadCSV(f, CSVOptions{})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	if tab.Rows != 3_000_000 || len(tab.Columns) != 5 {
		b.Fatalf("read %d rows x %d columns, want 3,000,000 x 5", tab.Rows, len(tab.Columns))
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tab.Rows), "ns/row")
}

func TestReadCSVTruncatedGzip(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("a,b\n")
	for i := range 100000 {
		sb.WriteString(strings.Repeat("x", i%7) + ",1\n")
	}
	z := gz(t, sb.String())
	_, err := ReadCSV(strings.NewReader(z[:len(z)/2]), CSVOptions{})
	if err == nil {
		t.Fatal("truncated gzip read without error")
	}
	// Stopping early must release the decompressing goroutine.
	tab, err := ReadCSV(strings.NewReader(z), CSVOptions{MaxRows: 10})
	if err != nil || tab.Rows != 10 {
		t.Fatalf("rows %v, err %v", tab, err)
	}
}

// flightsLike renders n rows shaped like the flights data.
func flightsLike(n int) string {
	var sb strings.Builder
	sb.WriteString("date,delay,distance,origin,destination\n")
	airports := []string{"LAS", "PHL", "ATL", "SAV", "ORD", "SFO", "JFK", "DEN"}
	for i := range n {
		fmt.Fprintf(&sb, "2001-01-%02d %02d:%02d,%d,%d,%s,%s\n", 1+i/86400%28, i/3600%24, i/60%60,
			i*7%300-30, 100+i*13%2500, airports[i%8], airports[(i/8)%8])
	}
	return sb.String()
}

func BenchmarkReadCSV(b *testing.B) {
	const n = 200000
	plain := flightsLike(n)
	for _, bc := range []struct {
		name, data string
	}{{"plain", plain}, {"gzip", gz(b, plain)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadCSV(strings.NewReader(bc.data), CSVOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
		})
	}
}

func BenchmarkReadJSONLines(b *testing.B) {
	const n = 100000
	var sb strings.Builder
	for range n {
		sb.Write(sixFields)
		sb.WriteByte('\n')
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ReadJSONLines(strings.NewReader(data), JSONOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
}

// TestReadCSVRoundTrip writes random tables with encoding/csv's writer
// (quotes, delimiters, newlines, empty cells) and reads them back.
func TestReadCSVRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "1", "9", "10", ",", ";", "\"", "\n", " ", "é", ""}
	cell := func() string {
		var sb strings.Builder
		for range rng.IntN(4) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for iter := range 200 {
		cols, rows := 2+rng.IntN(4), rng.IntN(30)
		delim := []rune{',', ';', '\t'}[iter%3]
		want := make([][]string, rows)
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Comma = delim
		header := make([]string, cols)
		for c := range header {
			header[c] = fmt.Sprintf("c%d", c)
		}
		w.Write(header)
		for r := range want {
			want[r] = make([]string, cols)
			for c := range want[r] {
				want[r][c] = cell()
			}
			w.Write(want[r])
		}
		w.Flush()
		tab, err := ReadCSV(bytes.NewReader(buf.Bytes()), CSVOptions{Delimiter: delim})
		if err != nil {
			t.Fatalf("iteration %d: %v\n%q", iter, err, buf.String())
		}
		if tab.Rows != rows || len(tab.Columns) != cols {
			t.Fatalf("iteration %d: %d rows x %d columns, want %d x %d", iter, tab.Rows, len(tab.Columns), rows, cols)
		}
		for c, col := range tab.Columns {
			for r := range want {
				if got := col.Values[col.Ranks[r]]; got != want[r][c] {
					t.Fatalf("iteration %d: row %d column %d = %q, want %q\n%q", iter, r, c, got, want[r][c], buf.String())
				}
			}
		}
		checkTable(t, tab)
	}
}
