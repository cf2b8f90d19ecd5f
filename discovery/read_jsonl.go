package discovery

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// JSONOptions control ReadJSONLines.
type JSONOptions struct {
	// MaxRows stops reading after that many records; 0 reads all.
	MaxRows int
	// MaxDepth bounds object nesting; 0 means DefaultMaxDepth.
	MaxDepth int
	// Progress, when set, is called with the number of records read so far,
	// every progressEvery records and once at the end.
	Progress func(rows int)
	// Typing says how the columns are typed and ordered (see EncodeTyped).
	Typing Typing
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
// bytes) into a table; see ReadJSONLinesColumns.
func ReadJSONLines(r io.Reader, opts JSONOptions) (*Table, JSONInfo, error) {
	b, info, err := ReadJSONLinesColumns(r, opts)
	if err != nil {
		return nil, info, err
	}
	t, err := b.Table(opts.Typing)
	return t, info, err
}

// ReadJSONLinesColumns reads one JSON object per line into dictionary-coded
// columns. Nested objects become dotted names ("a.b.c", see Flattener);
// arrays are ignored and counted in JSONInfo.Skipped; null, a missing field
// and the empty string are NULL; numbers keep their literal text; booleans
// are "true"/"false". Columns appear in first-seen order, and a field first
// seen late is NULL in the earlier rows. When a key repeats in a record the
// last value wins. Blank lines are skipped; a line that is not one JSON
// object fails with an *InputError naming it.
func ReadJSONLinesColumns(r io.Reader, opts JSONOptions) (*TableBuilder, JSONInfo, error) {
	var info JSONInfo
	in, closeIn, err := maybeGunzip(r)
	if err != nil {
		return nil, info, err
	}
	defer closeIn()
	br, ok := in.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(in, 1<<16)
	}

	b, _ := NewTableBuilder(nil)
	f := Flattener{MaxDepth: opts.MaxDepth}
	var row []uint32 // codes of the current record, by column
	var long []byte  // a line longer than br's buffer
	emit := func(name, value []byte, null bool) {
		col, ok := b.Column(string(name))
		if !ok {
			// The name is new; a JSON key may be "", which AddColumn
			// refuses but a record can legitimately hold.
			col = b.addColumnUnchecked(string(name))
			row = append(row, 0)
		}
		if null {
			row[col] = 0
			return
		}
		row[col] = b.Code(col, value)
	}

	for line := 1; ; line++ {
		if opts.MaxRows > 0 && b.rows >= opts.MaxRows {
			break
		}
		data, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], data...)
			for errors.Is(err, bufio.ErrBufferFull) {
				data, err = br.ReadSlice('\n')
				long = append(long, data...)
			}
			data = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, info, fmt.Errorf("line %d: reading input: %w", line, err)
		}
		atEOF := err != nil
		if line == 1 {
			data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a byte order mark
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if atEOF {
				break
			}
			info.BlankLines++
			continue
		}
		clear(row)
		st, ferr := f.Flatten(data, emit)
		if ferr != nil {
			return nil, info, &InputError{Line: line, Err: ferr}
		}
		info.Skipped += st.Ignored
		if err := b.AppendCodes(row); err != nil {
			return nil, info, &InputError{Line: line, Err: err}
		}
		if opts.Lines != nil {
			opts.Lines.add(b.rows-1, line)
		}
		if opts.Progress != nil && b.rows%progressEvery == 0 {
			opts.Progress(b.rows)
		}
		if atEOF {
			break
		}
	}
	if opts.Progress != nil {
		opts.Progress(b.rows)
	}
	return b, info, nil
}
