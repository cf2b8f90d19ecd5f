package window

import (
	"unsafe"

	"github.com/odwatch/odwatch/internal/codeindex"
)

// Tuning holds the knobs that decide when a column is near-unique: ids,
// timestamps and amounts whose values barely repeat in the window. Such a
// column keeps its values' bytes per row instead of a dictionary: interning
// a value that is new at every row costs a string, a dictionary entry and an
// index slot to make and, once its row leaves, to take down, for nothing.
// The choice changes what Append and Evict cost, never what a Snapshot or a
// check job holds (every column's Dict still holds each value in the window
// once). Production takes DefaultTuning; tests force the switches.
type Tuning struct {
	// UniqueRatio: a dictionary column with at least UniqueMinRows
	// non-NULL rows whose distinct values reach UniqueRatio of them
	// becomes near-unique at the next decision.
	UniqueRatio   float64
	UniqueMinRows int
	// DictRatio: a near-unique column whose distinct values fall below
	// DictRatio of its non-NULL rows goes back to a dictionary (below
	// UniqueRatio, so that a column near the bound does not switch at every
	// decision). A Snapshot counts them, and so does a decision once the
	// column has had as many values put as it held at its last count (at
	// least UniqueMinRows): a column that looked unique over the window's
	// first rows is counted again as the window fills, at an amortized
	// cost of one hash-table probe per value.
	DictRatio float64
	// DecideEvery is the number of rows appended between two decisions
	// (each reads every dictionary column's two counts).
	DecideEvery int
}

// DefaultTuning is the window's knobs outside tests: a column becomes
// near-unique when half its rows hold distinct values, over at least
// 1,024 rows, and goes back when a snapshot finds fewer than a quarter.
func DefaultTuning() Tuning {
	return Tuning{UniqueRatio: 0.5, UniqueMinRows: 1024, DictRatio: 0.25, DecideEvery: 1024}
}

// SetTuning sets the window's knobs (see Tuning).
func (w *Window) SetTuning(t Tuning) {
	t.DecideEvery = max(t.DecideEvery, 1)
	w.tune = t
}

// decideUnique makes the dictionary columns that Tuning calls near-unique
// so, and the near-unique ones due for a count that repeat their values
// dictionary columns again (see Tuning); Append calls it every DecideEvery
// rows.
func (w *Window) decideUnique() {
	minRows := max(w.tune.UniqueMinRows, 1)
	for _, c := range w.cols {
		switch {
		case c.unique:
			if c.appended >= max(c.counted, minRows) {
				if d := w.countUnique(c); float64(d) < w.tune.DictRatio*float64(c.nonNull) {
					w.toDict(c)
				}
			}
		case c.nonNull >= minRows:
			if float64(len(c.dict)-len(c.free)) >= w.tune.UniqueRatio*float64(c.nonNull) {
				w.toUnique(c)
			}
		}
	}
}

// countUnique counts near-unique column c's distinct values, by the hashes
// its rows kept and their bytes, in a table of ring positions (made for
// the count: a window's worth of rows comes between two counts).
func (w *Window) countUnique(c *winColumn) int {
	size := 16
	for size < 2*c.nonNull {
		size <<= 1
	}
	slots := make([]uint32, size)
	mask := uint32(size - 1)
	d := 0
	for i := range w.n {
		pos := w.ring(i)
		if c.codes[pos] == 0 {
			continue
		}
		r := c.vals[pos]
		for j := r.hash & mask; ; j = (j + 1) & mask {
			s := slots[j]
			if s == 0 {
				slots[j] = uint32(pos) + 1
				d++
				break
			}
			if o := c.vals[s-1]; o.hash == r.hash && string(c.arena.bytes(o)) == string(c.arena.bytes(r)) {
				break
			}
		}
	}
	c.counted, c.appended = c.nonNull, 0
	return d
}

// valRef is where a near-unique column's row keeps its value: n bytes at
// off in the arena's chunk number chunk, with its value's hashValue.
type valRef struct {
	chunk, off, n, hash uint32
}

// arena holds a near-unique column's values: their bytes appended to
// chunks of arenaChunkBytes (a larger value gets a chunk of its own),
// never overwritten, so that the strings Snapshot and NewestValues hand out
// over them stay valid for as long as they are held. A chunk is let go once
// no row of the window has a value in it. Values leave in the order they
// came (rows leave oldest first), so chunks do too: a chunk costs one
// allocation per arenaChunkBytes of values, none per row.
type arena struct {
	chunks []arenaChunk // chunks[i] is chunk number base+i
	base   uint32
}

type arenaChunk struct {
	buf  []byte // the bytes written; cap(buf) is the chunk's size
	live int    // values in buf that rows of the window hold
}

// arenaChunkBytes is an arena chunk's size.
const arenaChunkBytes = 64 << 10

// putValue appends v (hash h) to the arena.
func putValue[T string | []byte](a *arena, v T, h uint32) valRef {
	k := len(a.chunks) - 1
	if k < 0 || cap(a.chunks[k].buf)-len(a.chunks[k].buf) < len(v) {
		a.chunks = append(a.chunks, arenaChunk{buf: make([]byte, 0, max(arenaChunkBytes, len(v)))})
		k++
	}
	c := &a.chunks[k]
	off := len(c.buf)
	c.buf = append(c.buf, v...)
	c.live++
	return valRef{chunk: a.base + uint32(k), off: uint32(off), n: uint32(len(v)), hash: h}
}

// bytes is the value r refers to; its bytes never change.
func (a *arena) bytes(r valRef) []byte {
	c := &a.chunks[r.chunk-a.base]
	return c.buf[r.off : r.off+r.n : r.off+r.n]
}

// str is the value r refers to as a string over the arena's bytes, which
// are never written again (see arena).
func (a *arena) str(r valRef) string {
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&a.chunks[r.chunk-a.base].buf[r.off], r.n)
}

// release lets r's value go, and the oldest chunks once none of their
// values is held (the newest stays, to be filled).
func (a *arena) release(r valRef) {
	a.chunks[r.chunk-a.base].live--
	for len(a.chunks) > 1 && a.chunks[0].live == 0 {
		a.chunks[0] = arenaChunk{}
		a.chunks = a.chunks[1:]
		a.base++
	}
}

// putUnique stores value (hash h) as the near-unique column's value of
// ring position pos; a value the row already had (a field named twice)
// is let go, the last one winning.
func (c *winColumn) putUnique(pos int, value []byte, h uint32) {
	if c.codes[pos] != 0 {
		c.arena.release(c.vals[pos])
	} else {
		c.nonNull++
	}
	c.vals[pos] = putValue(&c.arena, value, h)
	c.codes[pos] = uniqueCode
	c.appended++
}

// snapshotAhead is how many rows ahead uniqueSnapshot loads a slot.
const snapshotAhead = 16

// uniqueCode is a near-unique column's code of a non-NULL row.
const uniqueCode = 1

// evictUnique lets the near-unique column's value at pos go.
func (c *winColumn) evictUnique(pos int) {
	c.arena.release(c.vals[pos])
	c.vals[pos] = valRef{}
	c.codes[pos] = 0
	c.nonNull--
}

// toUnique turns dictionary column c near-unique: each row's value moves
// into the arena and the dictionary goes.
func (w *Window) toUnique(c *winColumn) {
	c.vals = make([]valRef, len(c.codes))
	for i := range w.n {
		pos := w.ring(i)
		if code := c.codes[pos]; code != 0 {
			c.vals[pos] = putValue(&c.arena, c.dict[code-1], c.refs[code-1].hash)
			c.codes[pos] = uniqueCode
		}
	}
	c.dict, c.refs, c.free = nil, nil, nil
	c.index.Reset()
	c.unique = true
	c.counted, c.appended = c.nonNull, 0
}

// toDict turns near-unique column c back into a dictionary column: each
// row's value is interned (by the hash it kept: the index kept its seed).
func (w *Window) toDict(c *winColumn) {
	c.unique = false
	for i := range w.n {
		pos := w.ring(i)
		if c.codes[pos] != 0 {
			r := c.vals[pos]
			v := c.arena.bytes(r)
			c.codes[pos] = c.intern(v, r.hash, shortWord(v))
		}
	}
	c.vals, c.arena = nil, arena{}
}

// uniqueSnapshot fills codes (one per window row, oldest first) with
// dictionary codes of near-unique column c's values and returns that
// dictionary: each value once, in the order the rows first hold it, the
// strings over the arena's bytes. It finds equal values by the hashes
// the rows kept and their bytes.
func (w *Window) uniqueSnapshot(c *winColumn, codes []uint32) []string {
	size := 16
	for size < 2*c.nonNull {
		size <<= 1
	}
	slots := make([]uint64, size) // hash<<32 | dictionary code; code 0 empty
	mask := uint32(size - 1)
	dict := make([]string, 0, c.nonNull)
	for i := range w.n {
		// The slots are read at random: start loading a later row's.
		if i+snapshotAhead < w.n {
			codeindex.TouchAt(&slots[c.vals[w.ring(i+snapshotAhead)].hash&mask])
		}
		pos := w.ring(i)
		if c.codes[pos] == 0 {
			continue
		}
		r := c.vals[pos]
		v := c.arena.str(r)
		for j := r.hash & mask; ; j = (j + 1) & mask {
			s := slots[j]
			code := uint32(s)
			if code == 0 {
				dict = append(dict, v)
				codes[i] = uint32(len(dict))
				slots[j] = uint64(r.hash)<<32 | uint64(codes[i])
				break
			}
			if uint32(s>>32) == r.hash && dict[code-1] == v {
				codes[i] = code
				break
			}
		}
	}
	return dict
}
