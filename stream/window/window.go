package window

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/codeindex"
	"github.com/odwatch/odwatch/stream/decode"
)

// RowMeta says where a window row came from. The window keeps Time to the
// nanosecond and hands it back in UTC.
type RowMeta struct {
	Partition int32
	Offset    int64
	Seq       uint64
	Time      time.Time
}

// Window is the in-memory columnar mirror of a stream's window (docs/DESIGN.md
// "Performance model"): per column a dictionary of distinct values and one
// uint32 code per row, in a ring buffer of rows. A row costs 4 bytes per
// column plus its RowMeta; a distinct value costs its string once, its
// codeRef (16 bytes) and its index slots (8 bytes each, at most half of
// them full).
//
// Dictionaries do not grow without bound over a sliding window: each code is
// reference counted and a code whose last row is evicted goes to a free list
// and is reused for the next new value. A column with no non-NULL value left
// in the window is dropped.
//
// A Window is not safe for concurrent use: the pipeline owns it on one
// goroutine and hands Snapshots to others.
type Window struct {
	size     int
	interval time.Duration

	meta []rowMeta // ring; len(meta) is the capacity
	head int       // ring index of the oldest row
	n    int       // rows in the window

	cols     []*winColumn
	colIndex map[string]int // name → index in cols
	// fieldHint[i] is the column the i-th field of the last record went
	// to (a guess, checked by name).
	fieldHint []int
	// fields is Append's scratch: the record's fields to intern.
	fields  []pendingField
	maxCols int
	dropped uint64 // fields not stored because the window had maxCols columns
	newest  int64  // newest row time seen (time windows), noTime if none
	parts   map[int32]*partState
	// times keeps, per block of timeBlock ring positions, the smallest and
	// largest row time written to it since its first position was last
	// written, so that TimeRange reads whole blocks instead of rows.
	times     []timeSpan
	timeBlock int
	// tune says when a column is near-unique; sinceDecide counts the rows
	// appended since the last decision (see Tuning).
	tune        Tuning
	sinceDecide int
}

// pendingField is a non-NULL field of the record Append is adding: its
// index in the record, its column, and its value's hash and shortWord.
type pendingField struct {
	field, col int
	hash       uint32
	word       uint64
}

// timeSpan is a range of row times, empty when lo > hi.
type timeSpan struct{ lo, hi int64 }

// emptySpan is the span holding no time.
func emptySpan() timeSpan { return timeSpan{lo: math.MaxInt64, hi: noTime} }

func (s *timeSpan) add(t int64) {
	if t != noTime {
		s.lo, s.hi = min(s.lo, t), max(s.hi, t)
	}
}

func (s *timeSpan) merge(o timeSpan) {
	s.lo, s.hi = min(s.lo, o.lo), max(s.hi, o.hi)
}

type partState struct {
	rows int   // rows of this partition in the window
	last int64 // last offset appended
}

type winColumn struct {
	name  string
	codes []uint32 // ring aligned with Window.meta; 0 = NULL
	dict  []string // code-1 → value; "" for free codes
	// refs[code-1] counts the rows holding code and keeps its value's
	// hash, so that releasing the last one does not hash the value again.
	refs    []codeRef
	index   codeindex.Index
	seed    uint64 // hashValue's seed for short values
	free    []uint32
	nonNull int
	// unique: the column is near-unique (see Tuning). Its rows keep their
	// values in vals (a ring aligned with codes) and arena, and codes holds
	// uniqueCode for a value, 0 for NULL; dict, refs, free and index are
	// empty.
	unique bool
	vals   []valRef
	arena  arena
	// counted is the non-NULL rows of a near-unique column at its last
	// count of distinct values, appended the values put since (see
	// Tuning.DictRatio).
	counted, appended int
}

// codeRef is what the window keeps per code beside its dictionary string:
// the rows holding it, its value's index hash (releasing the last row does
// not hash the value again) and, for a value of at most maxInlineValue
// bytes, the value itself (shortWord), so that interning a short value
// already known compares words here instead of reading the string. The
// increment of the count reads the same line.
type codeRef struct {
	n    uint32
	hash uint32
	word uint64 // shortWord of the value; 0 for a longer value
}

// maxInlineValue is the longest value a codeRef holds inline.
const maxInlineValue = 7

// shortWord packs a value of at most maxInlineValue bytes and its length
// into a word no other value packs to (the length+1 in the top byte, so
// never 0); a longer value gives 0. The value's bytes are read in at most
// two loads, which overlap for lengths that are not a power of two (the
// bytes both loads hold land at the same place in the word).
func shortWord(v []byte) uint64 {
	n := len(v)
	var w uint64
	switch {
	case n > maxInlineValue:
		return 0
	case n >= 4:
		w = uint64(binary.LittleEndian.Uint32(v)) | uint64(binary.LittleEndian.Uint32(v[n-4:]))<<(8*(n-4))
	case n >= 2:
		w = uint64(binary.LittleEndian.Uint16(v)) | uint64(binary.LittleEndian.Uint16(v[n-2:]))<<(8*(n-2))
	case n == 1:
		w = uint64(v[0])
	}
	return w | uint64(n+1)<<56
}

// hashValue is the index hash of a value whose shortWord is word: a short
// value's word mixed with the column's seed (one multiplication, where
// hashing the bytes costs a call), a longer value's bytes hashed by the
// index.
func (c *winColumn) hashValue(v []byte, word uint64) uint32 {
	if word == 0 {
		return c.index.HashBytes(v)
	}
	hi, lo := bits.Mul64(word^c.seed, wordMix)
	return uint32(hi ^ lo)
}

// wordMix is hashValue's multiplier (2^64 / the golden ratio, odd).
const wordMix = 0x9e3779b97f4a7c15

// initialCapacity is the first ring size; the ring doubles up to size.
const initialCapacity = 1024

// maxFieldHints bounds Window.fieldHint.
const maxFieldHints = 256

// defaultTimeBlock is Window.timeBlock: TimeRange reads at most two partial
// blocks row by row, and one span per block otherwise.
const defaultTimeBlock = 1024

// NewWindow returns an empty window of the last size rows. If interval > 0,
// rows older than (newest row time - interval) are evicted too; size 0 with
// interval > 0 is a pure time window. Size 0 and interval 0 never evict.
func NewWindow(size int, interval time.Duration) *Window {
	return &Window{
		size:      max(size, 0),
		interval:  interval,
		maxCols:   DefaultMaxColumns,
		colIndex:  map[string]int{},
		parts:     map[int32]*partState{},
		newest:    noTime,
		timeBlock: defaultTimeBlock,
		tune:      DefaultTuning(),
	}
}

// rowMeta is RowMeta as the ring stores it: without time.Time's location
// pointer, so that the GC does not scan a million-row ring.
type rowMeta struct {
	partition int32
	offset    int64
	seq       uint64
	time      int64 // Unix nanoseconds, noTime for the zero Time
}

const noTime = math.MinInt64

func packMeta(m RowMeta) rowMeta {
	r := rowMeta{partition: m.Partition, offset: m.Offset, seq: m.Seq, time: noTime}
	if !m.Time.IsZero() {
		r.time = m.Time.UnixNano()
	}
	return r
}

// unpack returns the RowMeta; times come back in UTC.
func (r rowMeta) unpack() RowMeta {
	m := RowMeta{Partition: r.partition, Offset: r.offset, Seq: r.seq}
	if r.time != noTime {
		m.Time = time.Unix(0, r.time).UTC()
	}
	return m
}

// DefaultMaxColumns is the default bound on a window's columns.
const DefaultMaxColumns = 256

// SetMaxColumns bounds the number of columns (n <= 0 means
// DefaultMaxColumns). Every column costs 4 bytes per row of window capacity,
// so a stream whose field names never repeat (ids used as JSON keys) would
// otherwise cost gigabytes; fields of columns beyond the bound are not
// stored and are counted by DroppedFields. Columns already held stay.
func (w *Window) SetMaxColumns(n int) {
	if n <= 0 {
		n = DefaultMaxColumns
	}
	w.maxCols = n
}

// DroppedFields counts non-NULL fields not stored because the window
// already had its maximum number of columns.
func (w *Window) DroppedFields() uint64 { return w.dropped }

// NumColumns is the number of columns the window holds.
func (w *Window) NumColumns() int { return len(w.cols) }

// Reset empties the window (e.g. when partitions are reassigned), keeping
// its configuration.
func (w *Window) Reset() {
	maxCols, block, tune := w.maxCols, w.timeBlock, w.tune
	*w = *NewWindow(w.size, w.interval)
	w.maxCols, w.timeBlock, w.tune = maxCols, block, tune
}

// Len is the number of rows.
func (w *Window) Len() int { return w.n }

// Oldest is the metadata of the oldest row.
func (w *Window) Oldest() (RowMeta, bool) {
	if w.n == 0 {
		return RowMeta{}, false
	}
	return w.meta[w.head].unpack(), true
}

// LastOffset is the last offset appended for partition p, whether or not
// that row is still in the window.
func (w *Window) LastOffset(p int32) (int64, bool) {
	ps, ok := w.parts[p]
	if !ok {
		return 0, false
	}
	return ps.last, true
}

// Append adds a row and evicts the oldest row(s) the window no longer holds.
// A field seen for the first time becomes a new column, NULL in the rows
// before. Offsets of a partition must increase: a row whose offset is not
// above the last one appended for its partition is a redelivery of a record
// already in (or already evicted from) the window, and Append ignores it and
// returns false. In steady state Append allocates only for values not in
// the column's dictionary, and a near-unique column once per arena chunk
// (see Tuning).
func (w *Window) Append(meta RowMeta, rec *decode.FlatRecord) bool {
	ps := w.parts[meta.Partition]
	if ps == nil {
		ps = &partState{}
		w.parts[meta.Partition] = ps
	} else if meta.Offset <= ps.last {
		return false
	}
	ps.last = meta.Offset

	if w.size > 0 && w.n >= w.size {
		w.evictOldest()
	}
	if w.n == len(w.meta) {
		w.grow()
	}
	pos := w.ring(w.n)
	w.meta[pos] = packMeta(meta)
	w.n++
	ps.rows++
	span := &w.times[pos/w.timeBlock]
	if pos%w.timeBlock == 0 {
		*span = emptySpan()
	}
	span.add(w.meta[pos].time)

	w.fields = w.columnsOf(rec, w.fields[:0])
	// The values' index slots of the big columns miss the cache: start
	// loading them all first (prefetches, which do not wait), so that the
	// misses overlap, then intern.
	for _, f := range w.fields {
		w.cols[f.col].index.Touch(f.hash)
	}
	for _, f := range w.fields {
		c := w.cols[f.col]
		_, value, _ := rec.Field(f.field)
		if c.unique {
			c.putUnique(pos, value, f.hash)
			continue
		}
		code := c.intern(value, f.hash, f.word)
		if old := c.codes[pos]; old != 0 {
			// The record named the field twice: the last non-NULL
			// value wins.
			c.release(old)
		} else {
			c.nonNull++
		}
		c.codes[pos] = code
	}

	if t := w.meta[pos].time; w.interval > 0 && t != noTime {
		w.newest = max(w.newest, t)
		cutoff := w.newest - int64(w.interval)
		for w.n > 0 && w.meta[w.head].time < cutoff {
			w.evictOldest()
		}
	}
	w.dropDeadColumns()
	if w.sinceDecide++; w.sinceDecide >= w.tune.DecideEvery {
		w.sinceDecide = 0
		w.decideUnique()
	}
	return true
}

// columnsOf appends to fields the non-NULL fields of rec with their
// columns (added as needed) and their values' hashes, in record order.
func (w *Window) columnsOf(rec *decode.FlatRecord, fields []pendingField) []pendingField {
	for i := range rec.Len() {
		name, value, null := rec.Field(i)
		if null {
			continue
		}
		// Records of a stream mostly list their fields in the same order:
		// try the column field i had last time before hashing the name.
		ci := -1
		if i < len(w.fieldHint) {
			if h := w.fieldHint[i]; h < len(w.cols) && w.cols[h].name == string(name) {
				ci = h
			}
		}
		if ci < 0 {
			var ok bool
			if ci, ok = w.colIndex[string(name)]; !ok {
				if len(w.cols) >= w.maxCols {
					w.dropped++
					continue
				}
				ci = w.addColumn(string(name))
			}
			if i < len(w.fieldHint) {
				w.fieldHint[i] = ci
			} else if i == len(w.fieldHint) && i < maxFieldHints {
				w.fieldHint = append(w.fieldHint, ci)
			}
		}
		word := shortWord(value)
		fields = append(fields, pendingField{field: i, col: ci, hash: w.cols[ci].hashValue(value, word), word: word})
	}
	return fields
}

func (w *Window) addColumn(name string) int {
	w.cols = append(w.cols, &winColumn{
		name:  name,
		codes: make([]uint32, len(w.meta)),
		index: codeindex.New(),
		seed:  rand.Uint64(),
	})
	w.colIndex[name] = len(w.cols) - 1
	return len(w.cols) - 1
}

// grow doubles the ring (up to size for count windows), straightening it so
// that the oldest row is at index 0.
func (w *Window) grow() {
	c := max(2*len(w.meta), initialCapacity)
	if w.size > 0 && c > w.size {
		c = w.size
	}
	meta := make([]rowMeta, c)
	k := copy(meta, w.meta[w.head:])
	copy(meta[k:], w.meta[:w.head])
	for _, col := range w.cols {
		codes := make([]uint32, c)
		k := copy(codes, col.codes[w.head:])
		copy(codes[k:], col.codes[:w.head])
		col.codes = codes
		if col.unique {
			vals := make([]valRef, c)
			k := copy(vals, col.vals[w.head:])
			copy(vals[k:], col.vals[:w.head])
			col.vals = vals
		}
	}
	w.meta = meta
	w.head = 0
	w.times = make([]timeSpan, (c+w.timeBlock-1)/w.timeBlock)
	for i := range w.times {
		w.times[i] = emptySpan()
	}
	for i := range w.n {
		w.times[i/w.timeBlock].add(meta[i].time)
	}
}

// TimeRange returns the smallest and the largest row time in the window
// (Unix nanoseconds); ok is false when no row has a time.
func (w *Window) TimeRange() (lo, hi int64, ok bool) {
	span := emptySpan()
	for i := 0; i < w.n; {
		p := w.ring(i)
		// A block whose first position is in the window and whose last
		// one is too holds rows written after its first: its span is
		// theirs. The blocks at the window's ends are read row by row.
		if p%w.timeBlock == 0 {
			if k := min(w.timeBlock, len(w.meta)-p); k <= w.n-i {
				span.merge(w.times[p/w.timeBlock])
				i += k
				continue
			}
		}
		span.add(w.meta[p].time)
		i++
	}
	return span.lo, span.hi, span.hi != noTime
}

// ring is the ring position of the i-th row, oldest first (i < len(w.meta);
// i = w.n is where the next row goes).
func (w *Window) ring(i int) int {
	p := w.head + i
	if p >= len(w.meta) {
		p -= len(w.meta)
	}
	return p
}

// Row is the metadata of the i-th row, oldest first.
func (w *Window) Row(i int) RowMeta { return w.meta[w.ring(i)].unpack() }

// NewerThan is the number of the newest rows whose arrival sequence number
// is above seq (rows are appended in arrival order).
func (w *Window) NewerThan(seq uint64) int {
	k := 0
	for k < w.n && w.meta[w.ring(w.n-1-k)].seq > seq {
		k++
	}
	return k
}

// NewestValues fills codes and vals with column ci's codes and values in
// the newest len(codes) rows, oldest first (NULL stays 0 and ""), and
// returns the column's name. The values are the dictionary's strings, so
// the caller gets them without hashing. A near-unique column has no
// dictionary: its codes are its rows' ring positions + 1 (codes that
// stand for one value only until the row leaves) and its strings are over
// its arena's bytes.
func (w *Window) NewestValues(ci int, codes []uint32, vals []string) string {
	c, k := w.cols[ci], len(codes)
	for i := range k {
		pos := w.ring(w.n - k + i)
		if code := c.codes[pos]; code != 0 {
			if c.unique {
				vals[i], codes[i] = c.arena.str(c.vals[pos]), uint32(pos)+1
				continue
			}
			vals[i], codes[i] = c.dict[code-1], code
		}
	}
	return c.name
}

// offsetRange returns, per partition with rows in the window, its
// smallest and its largest offset there: its last appended offset is its
// newest row (rows leave oldest first), its first row from the oldest end
// its smallest; the rows are read only until every partition's first is
// found.
func (w *Window) offsetRange() (first, last map[int32]int64) {
	first, last = map[int32]int64{}, map[int32]int64{}
	pending := 0
	for p, ps := range w.parts {
		if ps.rows > 0 {
			last[p] = ps.last
			pending++
		}
	}
	for i := 0; i < w.n && pending > 0; i++ {
		m := &w.meta[w.ring(i)]
		if _, ok := first[m.partition]; !ok {
			first[m.partition] = m.offset
			pending--
		}
	}
	return first, last
}

// Info describes the window for events, from its metadata: the
// partitions' offset ranges (offsetRange) and the times of TimeRange (this
// runs on the consume path at every check).
func (w *Window) Info(stream, topic string, endSeq uint64) alerts.WindowInfo {
	info := alerts.WindowInfo{Stream: stream, Topic: topic, Records: w.Len(), EndSeq: endSeq}
	info.StartOffsets, info.EndOffsets = w.offsetRange()
	if lo, hi, ok := w.TimeRange(); ok {
		info.StartTime, info.EndTime = time.Unix(0, lo).UTC(), time.Unix(0, hi).UTC()
	}
	return info
}

func (w *Window) evictOldest() {
	pos := w.head
	// The codes' counts, then the index slots of the values whose last row
	// this is, start loading first, side by side (see Append).
	for _, c := range w.cols {
		if code := c.codes[pos]; code != 0 && !c.unique {
			codeindex.TouchAt(&c.refs[code-1])
		}
	}
	for _, c := range w.cols {
		if code := c.codes[pos]; code != 0 && !c.unique && c.refs[code-1].n == 1 {
			c.index.Touch(c.refs[code-1].hash)
		}
	}
	for _, c := range w.cols {
		if code := c.codes[pos]; code != 0 {
			if c.unique {
				c.evictUnique(pos)
				continue
			}
			c.release(code)
			c.codes[pos] = 0
			c.nonNull--
		}
	}
	if ps := w.parts[w.meta[pos].partition]; ps != nil {
		ps.rows--
	}
	w.meta[pos] = rowMeta{}
	w.head++
	if w.head == len(w.meta) {
		w.head = 0
	}
	w.n--
}

// dropDeadColumns removes columns with no value left in the window, so that
// a stream whose field names keep changing does not accumulate columns.
func (w *Window) dropDeadColumns() {
	dead := false
	for _, c := range w.cols {
		if c.nonNull == 0 {
			dead = true
			break
		}
	}
	if !dead {
		return
	}
	kept := w.cols[:0]
	for _, c := range w.cols {
		if c.nonNull == 0 {
			delete(w.colIndex, c.name)
			continue
		}
		w.colIndex[c.name] = len(kept)
		kept = append(kept, c)
	}
	clear(w.cols[len(kept):])
	w.cols = kept
}

// intern returns the code of value, taking a reference.
// h and word are value's hashValue and shortWord.
func (c *winColumn) intern(value []byte, h uint32, word uint64) uint32 {
	code := c.index.LookupHashed(h, func(code uint32) bool {
		if r := &c.refs[code-1]; word != 0 || r.word != 0 {
			return r.word == word
		}
		return c.dict[code-1] == string(value)
	})
	if code != 0 {
		c.refs[code-1].n++
		return code
	}
	s := string(value)
	ref := codeRef{n: 1, hash: h, word: word}
	if k := len(c.free); k > 0 {
		code = c.free[k-1]
		c.free = c.free[:k-1]
		c.dict[code-1] = s
		c.refs[code-1] = ref
	} else {
		c.dict = append(c.dict, s)
		c.refs = append(c.refs, ref)
		code = uint32(len(c.dict))
	}
	c.index.Insert(code, h)
	return code
}

// release drops a reference to code and recycles it when it was the last.
func (c *winColumn) release(code uint32) {
	r := &c.refs[code-1]
	r.n--
	if r.n > 0 {
		return
	}
	c.index.RemoveHashed(code, r.hash)
	c.dict[code-1] = ""
	c.free = append(c.free, code)
}

// EvictionBounds returns, per partition seen, the smallest offset still in
// the window: the store may delete everything below it. A partition with no
// row left in the window maps to its last offset + 1.
func (w *Window) EvictionBounds() map[int32]int64 {
	b := make(map[int32]int64, len(w.parts))
	pending := 0
	for p, ps := range w.parts {
		if ps.rows == 0 {
			b[p] = ps.last + 1
		} else {
			pending++
		}
	}
	// Offsets increase per partition, so a partition's first row from the
	// oldest end is its smallest offset.
	for i := 0; i < w.n && pending > 0; i++ {
		pos := w.ring(i)
		m := &w.meta[pos]
		if _, ok := b[m.partition]; !ok {
			b[m.partition] = m.offset
			pending--
		}
	}
	return b
}

// Snapshot is an immutable copy of a window, oldest row first, safe to use
// on another goroutine while the window moves on.
type Snapshot struct {
	meta   []rowMeta
	cols   []table.DictColumn
	byName map[string]int
}

// Snapshot copies the window. Codes are copied (4 bytes per cell);
// dictionary strings are shared, the dictionary slices are not (the window
// reuses codes). Free codes are squeezed out so each Dict holds every value
// in the window exactly once. A near-unique column's Dict is found here
// (uniqueSnapshot), its strings over the column's arena; a near-unique
// column found to repeat its values goes back to a dictionary (Tuning).
func (w *Window) Snapshot() *Snapshot {
	s := &Snapshot{
		meta:   make([]rowMeta, w.n),
		byName: make(map[string]int, len(w.cols)),
	}
	copyRing(w, s.meta, w.meta)
	for _, c := range w.cols {
		if c.nonNull == 0 {
			continue
		}
		codes := make([]uint32, w.n)
		var dict []string
		if c.unique {
			dict = w.uniqueSnapshot(c, codes)
			if float64(len(dict)) < w.tune.DictRatio*float64(c.nonNull) {
				w.toDict(c)
			}
		} else {
			dict = w.dictSnapshot(c, codes)
		}
		s.byName[c.name] = len(s.cols)
		s.cols = append(s.cols, table.DictColumn{Name: c.name, Dict: dict, Codes: codes})
	}
	return s
}

// dictSnapshot fills codes (one per window row, oldest first) with
// dictionary column c's codes, free codes squeezed out, and returns the
// dictionary they index.
func (w *Window) dictSnapshot(c *winColumn, codes []uint32) []string {
	copyRing(w, codes, c.codes)
	if len(c.free) == 0 {
		return append([]string(nil), c.dict...)
	}
	remap := make([]uint32, len(c.dict)+1)
	dict := make([]string, 0, len(c.dict)-len(c.free))
	for i, v := range c.dict {
		if c.refs[i].n > 0 {
			dict = append(dict, v)
			remap[i+1] = uint32(len(dict))
		}
	}
	for i, code := range codes {
		codes[i] = remap[code]
	}
	return dict
}

// copyRing copies the window's rows of ring src, oldest first, into dst.
func copyRing[T any](w *Window, dst, src []T) {
	if w.n == 0 {
		return
	}
	end := w.head + w.n
	if end <= len(src) {
		copy(dst, src[w.head:end])
		return
	}
	k := copy(dst, src[w.head:])
	copy(dst[k:], src[:end-len(src)])
}

// Len is the number of rows.
func (s *Snapshot) Len() int { return len(s.meta) }

// Columns are the columns with at least one non-NULL value, in first-seen
// order. Codes: 0 = NULL, else index+1 into Dict. The slices are shared
// with the snapshot: read them, do not modify them.
func (s *Snapshot) Columns() []table.DictColumn { return s.cols }

// Meta is the metadata of row (0 = oldest).
func (s *Snapshot) Meta(row int) RowMeta { return s.meta[row].unpack() }

// Values returns the values of the named columns in row, for event samples.
// NULL values and unknown columns are absent from the map.
func (s *Snapshot) Values(row int, names []string) map[string]string {
	m := make(map[string]string, len(names))
	for _, name := range names {
		ci, ok := s.byName[name]
		if !ok {
			continue
		}
		c := &s.cols[ci]
		if code := c.Codes[row]; code != 0 {
			m[name] = c.Dict[code-1]
		}
	}
	return m
}
