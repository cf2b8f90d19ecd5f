package eval

import (
	"github.com/odwatch/odwatch/stream/window"
)

// Delta is a window's change since the previous one a Cursor took: the
// rows that entered and the number that left, or the whole window. The
// consumer makes it (Cursor.Delta), a Checker applies it (Apply); nothing
// changes it once made.
type Delta struct {
	// reset: the checker starts over and rows are the whole window.
	reset bool
	evict int // rows that left the window since the previous delta
	names []string
	// codes[c][i] is the window's code of column names[c] in the i-th new
	// row (0 = NULL) and values[c][i] its value: the string of the
	// window's dictionary, which lets the checker's engine know a value
	// without hashing it (incremental.Engine.AppendCoded).
	codes  [][]uint32
	values [][]string
	metas  []window.RowMeta
	// oldest is the arrival sequence number of the window's oldest row
	// (when it has rows): the checker's oldest row must be the same one.
	oldest uint64
}

// Whole reports whether d carries the whole window (the checker starts
// over).
func (d *Delta) Whole() bool { return d.reset }

// Cursor is where the last delta left the window: the consumer's part of
// two cadences, on the consume goroutine only (or a replay's).
type Cursor struct {
	fed     bool   // a delta was taken since the last reset
	lastSeq uint64 // arrival sequence number of the newest row handed over
	lastLen int    // window rows after the last delta
}

// Fed reports whether a delta was taken since the cursor was made.
func (f *Cursor) Fed() bool { return f.fed }

// Delta takes window w's change since the previous delta: the rows whose
// arrival sequence number is above the last one handed over, and the
// number of rows that left. The whole window goes when reset is set or
// the counts do not add up (the window was reset).
func (f *Cursor) Delta(w *window.Window, reset bool) *Delta {
	n := w.Len()
	k, evict := 0, 0
	if !reset {
		k = w.NewerThan(f.lastSeq)
		evict = f.lastLen + k - n
		reset = evict < 0 || evict > f.lastLen
	}
	if reset {
		k, evict = n, 0
	}
	cols := w.NumColumns()
	d := &Delta{reset: reset, evict: evict,
		names: make([]string, 0, cols), codes: make([][]uint32, 0, cols), values: make([][]string, 0, cols)}
	// One array of codes and one of values for all the columns: two
	// allocations per check rather than two per column.
	allVals, allCodes := make([]string, k*cols), make([]uint32, k*cols)
	for ci := range cols {
		vals, codes := allVals[ci*k:(ci+1)*k:(ci+1)*k], allCodes[ci*k:(ci+1)*k:(ci+1)*k]
		d.names = append(d.names, w.NewestValues(ci, codes, vals))
		d.codes = append(d.codes, codes)
		d.values = append(d.values, vals)
	}
	d.metas = make([]window.RowMeta, k)
	for i := range k {
		d.metas[i] = w.Row(n - k + i)
	}
	f.fed, f.lastLen = true, n
	if n > 0 {
		f.lastSeq = w.Row(n - 1).Seq
		d.oldest = w.Row(0).Seq
	}
	return d
}
