package tableio

import (
	"errors"
	"strings"
	"testing"
)

// TestReadLines: Lines maps data rows to the lines an editor shows, across
// quoted line breaks (CSV) and blank lines (JSON Lines).
func TestReadLines(t *testing.T) {
	csvIn := "a,b\n1,x\n2,\"two\nlines\"\n3,y\n4,\"z\n\n\"\n5,w\n"
	var lines Lines
	tab, err := ReadCSV(strings.NewReader(csvIn), CSVOptions{Lines: &lines})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{2, 3, 5, 6, 9}
	for row := range tab.Rows {
		if got := lines.Line(row); got != want[row] {
			t.Errorf("csv row %d: line %d, want %d", row, got, want[row])
		}
	}
	if len(lines.rows) != 3 {
		t.Errorf("csv: %d runs stored, want 3 (one per change of offset)", len(lines.rows))
	}

	jsonIn := "{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}\n\n\n{\"a\":4}\n"
	lines = Lines{}
	tab, _, err = ReadJSONLines(strings.NewReader(jsonIn), JSONOptions{Lines: &lines})
	if err != nil {
		t.Fatal(err)
	}
	want = []int{1, 3, 4, 7}
	for row := range tab.Rows {
		if got := lines.Line(row); got != want[row] {
			t.Errorf("jsonl row %d: line %d, want %d", row, got, want[row])
		}
	}
}

// TestReadBinaryInput: binary data is not a CSV or JSON Lines file, gzipped
// or not, instead of a quoting error somewhere in it.
func TestReadBinaryInput(t *testing.T) {
	bin := "\x7fELF\x02\x01\x01\x00\x00\x00\"\x00\n\x01\x02"
	for name, in := range map[string]string{"plain": bin, "gzip": gz(t, bin)} {
		if _, err := ReadCSV(strings.NewReader(in), CSVOptions{}); !errors.Is(err, ErrNotText) {
			t.Errorf("csv %s: err %v, want ErrNotText", name, err)
		}
		if _, _, err := ReadJSONLines(strings.NewReader(in), JSONOptions{}); !errors.Is(err, ErrNotText) {
			t.Errorf("jsonl %s: err %v, want ErrNotText", name, err)
		}
	}
	// A NUL past the sniffed head is an ordinary cell.
	late := "a,b\n" + strings.Repeat("x,y\n", binarySniff/4+1) + "\x00,z\n"
	if _, err := ReadCSV(strings.NewReader(late), CSVOptions{}); err != nil {
		t.Errorf("NUL after %d bytes: %v", binarySniff, err)
	}
}

// TestReadTruncatedGzipSaysGzip: a file cut short names gzip.
func TestReadTruncatedGzipSaysGzip(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("a,b\n")
	for i := range 100000 {
		sb.WriteString(strings.Repeat("x", i%7) + ",1\n")
	}
	z := gz(t, sb.String())
	_, err := ReadCSV(strings.NewReader(z[:len(z)/2]), CSVOptions{})
	if !errors.Is(err, ErrTruncatedGzip) || !strings.Contains(err.Error(), "gzip: the file is truncated") {
		t.Errorf("csv: %v", err)
	}
	_, _, err = ReadJSONLines(strings.NewReader(gz(t, strings.Repeat("{\"a\":1}\n", 100000))[:200]), JSONOptions{})
	if !errors.Is(err, ErrTruncatedGzip) {
		t.Errorf("jsonl: %v", err)
	}
}
