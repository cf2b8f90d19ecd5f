// Package tableio reads tables from text: CSV and JSON Lines (gzipped or
// not) into a table.TableBuilder, and the flattening of nested JSON objects
// into dotted column names that the stream's JSON decoder shares. It opens
// no files: the caller hands it an io.Reader.
package tableio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/odwatch/odwatch/discovery/table"
)

// inputError is a malformed-input error at a line of the input (1-based,
// the line where the offending record starts).
type inputError struct {
	Line int
	Err  error
}

func (e *inputError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *inputError) Unwrap() error { return e.Err }

// errEmptyInput is returned for an input without a header line.
var errEmptyInput = errors.New("empty input: a header line is required")

// CSVOptions control ReadCSV.
type CSVOptions struct {
	// Delimiter separates fields; 0 means ','.
	Delimiter rune
	// MaxRows stops reading after that many data rows; 0 reads all.
	MaxRows int
	// Progress, when set, is called with the number of data rows read so
	// far, every progressEvery rows and once at the end.
	Progress func(rows int)
	// Typing says how the columns are typed and ordered (see EncodeTyped).
	Typing table.Typing
	// Lines, when set, records the line each data row starts on.
	Lines *Lines
}

// Lines maps the 0-based data rows a reader returned to the 1-based lines
// of the input they start on, as an editor counts them (a CSV file's header
// is line 1), so that messages can point into the file. It stores one entry
// per run of rows at the same distance from their line (one for a plain
// CSV file; more after quoted line breaks or blank JSON lines).
type Lines struct {
	rows    []int // first row of each run, ascending
	offsets []int // line - row within the run
}

func (l *Lines) add(row, line int) {
	off := line - row
	if n := len(l.offsets); n > 0 && l.offsets[n-1] == off {
		return
	}
	l.rows = append(l.rows, row)
	l.offsets = append(l.offsets, off)
}

// Line returns the line data row row starts on; a row the reader did not
// record (nil Lines included) is taken to follow the last run.
func (l *Lines) Line(row int) int {
	if l == nil || len(l.rows) == 0 {
		return row + 2 // CSV without line breaks in fields
	}
	i, found := slices.BinarySearch(l.rows, row)
	if !found {
		i--
	}
	return row + l.offsets[max(i, 0)]
}

// progressEvery is how often (in rows) the readers report progress.
const progressEvery = 1 << 16

// ReadCSV reads a CSV table with a header line (RFC 4180 quoting, gzip
// detected by its magic bytes) and encodes it. An empty cell is NULL. A
// ragged row or bad quoting fails with an *inputError naming the line.
func ReadCSV(r io.Reader, opts CSVOptions) (*table.Table, error) {
	b, err := readCSVColumns(r, opts)
	if err != nil {
		return nil, err
	}
	return b.Table(opts.Typing)
}

// readCSVColumns is ReadCSV without the final encoding: it returns the
// builder holding the dictionary-coded columns.
func readCSVColumns(r io.Reader, opts CSVOptions) (*table.TableBuilder, error) {
	in, closeIn, err := maybeGunzip(r)
	if err != nil {
		return nil, err
	}
	defer closeIn()

	cr := csv.NewReader(in)
	if opts.Delimiter != 0 {
		cr.Comma = opts.Delimiter
	}
	cr.FieldsPerRecord = 0 // the header fixes the field count
	cr.ReuseRecord = true

	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errEmptyInput
	}
	if err != nil {
		return nil, csvError(err, 0, 0)
	}
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = strings.Clone(h)
	}
	// A UTF-8 byte order mark is not part of the first name.
	names[0] = strings.TrimPrefix(names[0], "\uFEFF")
	b, err := table.NewTableBuilder(names)
	if err != nil {
		return nil, &inputError{Line: 1, Err: fmt.Errorf("header: %w", err)}
	}

	for opts.MaxRows <= 0 || b.Rows() < opts.MaxRows {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(err, len(names), len(rec))
		}
		b.AppendStrings(rec)
		if opts.Lines != nil {
			line, _ := cr.FieldPos(0)
			opts.Lines.add(b.Rows()-1, line)
		}
		if opts.Progress != nil && b.Rows()%progressEvery == 0 {
			opts.Progress(b.Rows())
		}
	}
	if opts.Progress != nil {
		opts.Progress(b.Rows())
	}
	return b, nil
}

// csvError turns encoding/csv's errors into *inputError with our wording.
// For a ragged row, encoding/csv returns the record with the error, so got
// is its field count.
func csvError(err error, want, got int) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("reading csv: %w", err)
	}
	line := pe.StartLine
	if line == 0 {
		line = pe.Line
	}
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return &inputError{Line: line, Err: fmt.Errorf("%d fields, header has %d: %w", got, want, pe.Err)}
	case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
		return &inputError{Line: pe.Line, Err: fmt.Errorf("column %d: %w", pe.Column, pe.Err)}
	}
	return &inputError{Line: line, Err: pe.Err}
}

// ErrNotText is returned for input holding binary data (a NUL byte in its
// first binarySniff bytes, after gzip), which no CSV or JSON Lines file has.
var ErrNotText = errors.New("not a CSV or JSON Lines file (it holds binary data)")

// ErrTruncatedGzip is returned for gzip input that ends before its
// compressed stream does.
var ErrTruncatedGzip = errors.New("gzip: the file is truncated")

// binarySniff is how much of the input is searched for a NUL byte.
const binarySniff = 4096

// maybeGunzip returns a reader over r that decompresses it when it starts
// with the gzip magic bytes, and a func releasing what it opened.
// Decompression runs on its own goroutine, a few chunks ahead of the
// parser, so that on two cores inflating and parsing overlap. Input that is
// binary (see ErrNotText) fails here, before a parser reports a misleading
// quoting error in it.
func maybeGunzip(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("reading input: %w", err)
	}
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		if isBinary(br) {
			return nil, nil, ErrNotText
		}
		return br, func() {}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, nil, fmt.Errorf("gzip: %w", err)
	}
	pr := newPrefetchReader(zr, 4, 256<<10)
	out := bufio.NewReaderSize(pr, 1<<16)
	release := func() { pr.Close(); zr.Close() }
	if isBinary(out) {
		release()
		return nil, nil, fmt.Errorf("gzip: %w", ErrNotText)
	}
	return out, release, nil
}

// isBinary reports whether the first binarySniff bytes of br hold a NUL.
// A read error is left for the parser to report.
func isBinary(br *bufio.Reader) bool {
	head, _ := br.Peek(binarySniff)
	return bytes.IndexByte(head, 0) >= 0
}

// prefetchReader reads src on a goroutine into a small ring of buffers.
type prefetchReader struct {
	chunks chan []byte // filled buffers, in order
	free   chan []byte // buffers the consumer is done with
	stop   chan struct{}
	done   chan struct{}
	err    error // the producer's final error; read only after chunks closes

	cur  []byte // unread part of the current chunk
	held []byte // the current chunk's whole buffer
}

func newPrefetchReader(src io.Reader, n, size int) *prefetchReader {
	p := &prefetchReader{
		chunks: make(chan []byte, n),
		free:   make(chan []byte, n),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for range n {
		p.free <- make([]byte, size)
	}
	go p.produce(src)
	return p
}

func (p *prefetchReader) produce(src io.Reader) {
	defer close(p.done)
	defer close(p.chunks)
	for {
		var buf []byte
		select {
		case buf = <-p.free:
		case <-p.stop:
			return
		}
		// Fill the buffer by hand: io.ReadFull would turn a truncated
		// gzip stream's io.ErrUnexpectedEOF into something that looks
		// like its own short read.
		buf = buf[:cap(buf)]
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var k int
			k, err = src.Read(buf[n:])
			n += k
		}
		if n > 0 {
			select {
			case p.chunks <- buf[:n]:
			case <-p.stop:
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// compress/gzip's word for a file cut short.
				err = fmt.Errorf("%w: %w", ErrTruncatedGzip, err)
			}
			p.err = err
			return
		}
	}
}

func (p *prefetchReader) Read(b []byte) (int, error) {
	if len(p.cur) == 0 {
		if p.held != nil {
			p.free <- p.held // cannot block: at most n buffers exist
			p.held = nil
		}
		chunk, ok := <-p.chunks
		if !ok {
			return 0, p.err
		}
		p.cur, p.held = chunk, chunk
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// Close stops the producer and waits for it.
func (p *prefetchReader) Close() {
	close(p.stop)
	<-p.done
}
