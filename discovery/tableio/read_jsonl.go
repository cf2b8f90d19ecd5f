package tableio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/odwatch/odwatch/discovery/table"
)

// JSONOptions control ReadJSONLines.
type JSONOptions struct {
	// MaxRows stops reading after that many records; 0 reads all.
	MaxRows int
	// MaxDepth bounds object nesting; 0 means defaultMaxDepth.
	MaxDepth int
	// Progress, when set, is called with the number of records read so far,
	// every progressEvery records and once at the end.
	Progress func(rows int)
	// Typing says how the columns are typed and ordered (see EncodeTyped).
	Typing table.Typing
	// Lines, when set, records the line each record is on.
	Lines *Lines
}

// JSONInfo tells what ReadJSONLines left out.
type JSONInfo struct {
	// Skipped counts non-scalar values (arrays) that were ignored.
	Skipped int
	// BlankLines counts empty lines, which are not records.
	BlankLines int
}

// ReadJSONLines reads one JSON object per line (gzip detected by its magic
// bytes) into a table; see readJSONLinesColumns.
func ReadJSONLines(r io.Reader, opts JSONOptions) (*table.Table, JSONInfo, error) {
	b, info, err := readJSONLinesColumns(r, opts)
	if err != nil {
		return nil, info, err
	}
	t, err := b.Table(opts.Typing)
	return t, info, err
}

// readJSONLinesColumns reads one JSON object per line into dictionary-coded
// columns. Nested objects become dotted names ("a.b.c", see Flattener);
// arrays are ignored and counted in JSONInfo.Skipped; null, a missing field
// and the empty string are NULL; numbers keep their literal text; booleans
// are "true"/"false". Columns appear in first-seen order, and a field first
// seen late is NULL in the earlier rows. When a key repeats in a record the
// last value wins. Blank lines are skipped; a line that is not one JSON
// object fails with an *inputError naming it.
func readJSONLinesColumns(r io.Reader, opts JSONOptions) (*table.TableBuilder, JSONInfo, error) {
	var info JSONInfo
	in, closeIn, err := maybeGunzip(r)
	if err != nil {
		return nil, info, err
	}
	defer closeIn()
	lines := newLineReader(in)
	recs := newJSONRecords(opts.MaxDepth)
	b := recs.b
	for opts.MaxRows <= 0 || b.Rows() < opts.MaxRows {
		data, atEOF, err := lines.next()
		if err != nil {
			return nil, info, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if atEOF {
				break
			}
			info.BlankLines++
			continue
		}
		skipped, err := recs.add(data)
		info.Skipped += skipped
		if err != nil {
			return nil, info, &inputError{Line: lines.line, Err: err}
		}
		if opts.Lines != nil {
			opts.Lines.add(b.Rows()-1, lines.line)
		}
		if opts.Progress != nil && b.Rows()%progressEvery == 0 {
			opts.Progress(b.Rows())
		}
		if atEOF {
			break
		}
	}
	if opts.Progress != nil {
		opts.Progress(b.Rows())
	}
	return b, info, nil
}

// lineReader reads the lines of an input, however long, numbering them
// from 1 and dropping a byte order mark at the start.
type lineReader struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer
	line int    // the number of the line last returned
}

func newLineReader(in io.Reader) *lineReader {
	br, ok := in.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(in, 1<<16)
	}
	return &lineReader{br: br}
}

// next returns the next line with its newline, valid until the next call,
// and whether it is the last one (then possibly empty). A read error names
// the line.
func (lr *lineReader) next() (data []byte, atEOF bool, err error) {
	lr.line++
	data, err = lr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], data...)
		for errors.Is(err, bufio.ErrBufferFull) {
			data, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, data...)
		}
		data = lr.long
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("line %d: reading input: %w", lr.line, err)
	}
	if lr.line == 1 {
		data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a byte order mark
	}
	return data, err != nil, nil
}

// jsonRecords appends JSON objects to a TableBuilder as rows: each field
// of the flattened object sets its column's code, a new name adding a
// column, and the fields a record lacks are NULL.
type jsonRecords struct {
	b    *table.TableBuilder
	f    Flattener
	row  []uint32                            // codes of the current record, by column
	emit func(name, value []byte, null bool) // set, bound once
}

func newJSONRecords(maxDepth int) *jsonRecords {
	b, _ := table.NewTableBuilder(nil)
	r := &jsonRecords{b: b, f: Flattener{MaxDepth: maxDepth}}
	r.emit = r.set
	return r
}

// set is the Flattener's emit: one field of the current record.
func (r *jsonRecords) set(name, value []byte, null bool) {
	col, ok := r.b.Column(string(name))
	if !ok {
		// The name is new; a JSON key may be "", which AddColumn
		// refuses but a record can legitimately hold.
		col = r.b.AddColumnUnchecked(string(name))
		r.row = append(r.row, 0)
	}
	if null {
		r.row[col] = 0
		return
	}
	r.row[col] = r.b.Code(col, value)
}

// add appends the record data, one JSON object, as a row, and returns the
// number of values it ignored (arrays).
func (r *jsonRecords) add(data []byte) (ignored int, err error) {
	clear(r.row)
	st, err := r.f.Flatten(data, r.emit)
	if err != nil {
		return 0, err
	}
	return st.Ignored, r.b.AppendCodes(r.row)
}
