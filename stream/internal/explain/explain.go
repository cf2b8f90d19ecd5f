// Package explain explains a violation of a rule on one window: which
// records broke it (the rule's complete minimal removal set), the
// (column, value) segments those records share far more than the window
// does, and what the rule expected of each of them (an FD: its class's
// majority; an OC: the range of the right-hand column the longest chain
// allows). docs/DESIGN.md ("Explanations") gives the definitions and the
// significance test.
//
// It is pure: Explain reads the window's columns and the rule's encoded
// columns, and returns rows and values; it knows nothing of Kafka, events
// or goroutines, so the stream calls it wherever a violated event is built
// and the tests judge it against a brute-force reading
// (explain_test.go).
package explain

import (
	"cmp"
	"errors"
	"fmt"
	"sync"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// Options are the thresholds of an explanation, in one place so that a
// test can force each of them (explain_test.go).
type Options struct {
	// MaxSegments is how many segments an explanation keeps, best first.
	MaxSegments int
	// Alpha is the family-wise chance of reporting a segment that chance
	// alone made: each candidate's hypergeometric tail must be at most
	// Alpha divided by the number of candidates tested (Bonferroni).
	Alpha float64
	// MinViolating is the fewest violating records a segment must hold.
	MinViolating int
	// denseKeys is how many keys per row a key space may have for the
	// explanation to count over an array of it rather than a map or
	// several sorts (buffers.dense): 0 is defaultDenseKeys, below 0 never.
	// Tests force it each way.
	denseKeys int
}

// defaultDenseKeys is Options.denseKeys's default: an array no longer
// than the rows, which the explanation passes over anyway.
const defaultDenseKeys = 1

// DefaultOptions are the stream's.
var DefaultOptions = Options{MaxSegments: 3, Alpha: 0.01, MinViolating: 5}

// Window is what an explanation reads of one window, rows oldest first.
type Window struct {
	// Columns are every column of the window in dictionary form (codes: 0
	// is NULL, else an index+1 into Dict), all of the same length: row r
	// (0 = oldest) at Codes[r], or at Codes[Slot(r)].
	Columns []table.DictColumn
	// Slot, when set, maps a row to its index in the Columns' codes (a
	// checker's ring, read in place), and Counts holds each column's rows
	// per code over the window (index 0: NULL); the codes at other
	// indexes are no rows of the window. Without Slot both come from the
	// codes.
	Slot   func(r int) int
	Counts [][]uint32
	// Rule holds the rule's columns encoded (dense ranks in value order),
	// over the same rows.
	Rule *table.Table
	// Epsilon is the share of violating records the rule tolerates: the
	// violations in excess of it date the break (Result.First).
	Epsilon float64
}

// Segment is a (column, value) pair that the violating records share
// more than the window does: the records whose column holds the value
// (numeric columns too, by value).
type Segment struct {
	Column string
	// Value is the segment's value; Null marks the NULL value.
	Value string
	Null  bool
	// Violating and Records count the segment's violating records and its
	// records in the window.
	Violating, Records int
	// ViolatingShare is Violating over the violating records,
	// WindowShare Records over the window's, Lift their ratio.
	ViolatingShare, WindowShare, Lift float64
	// P is the hypergeometric tail: the chance that as many of the
	// violating records fall in the segment when they are drawn at random
	// from the window.
	P float64
}

// Expected is what the rule expected of one violating record: an FD's
// value (Null: NULL), or an OC's range of its right-hand column (Low and
// High, each absent when the chain does not bound it on that side): the
// event's type.
type Expected = alerts.Expected

// Result is the explanation of a rule's violation on one window.
type Result struct {
	// Violating are the rows of the rule's minimal removal set, ascending
	// (oldest first), and Expected what the rule expected of each.
	Violating []int
	Expected  []Expected
	// Segments are at most MaxSegments segments, best first: by the
	// excess of ViolatingShare over WindowShare, then by P, then by
	// column and value.
	Segments []Segment
	// First is the index in Violating of the record the break starts at
	// (breakStart); -1 without violating records.
	First int
}

// Explain explains rule d's violation on w. It fails only when w lacks a
// column of d or the columns' lengths disagree.
func Explain(w Window, d discovery.Dependency, o Options) (Result, error) {
	if w.Rule == nil {
		return Result{}, errors.New("explain: no encoded rule columns")
	}
	n := w.Rule.Rows
	if w.Slot != nil && len(w.Counts) != len(w.Columns) {
		return Result{}, fmt.Errorf("explain: counts of %d columns for %d columns", len(w.Counts), len(w.Columns))
	}
	for i, c := range w.Columns {
		switch {
		case w.Slot == nil && len(c.Codes) != n:
			return Result{}, fmt.Errorf("explain: column %s has %d rows, the rule's %d", c.Name, len(c.Codes), n)
		case w.Slot != nil && len(w.Counts[i]) != len(c.Dict)+1:
			return Result{}, fmt.Errorf("explain: column %s has %d counts for %d values", c.Name, len(w.Counts[i]), len(c.Dict)+1)
		}
	}
	b := takeBuffers(o)
	defer pool.Put(b)
	r, err := b.violations(w.Rule, d)
	if err != nil {
		return Result{}, err
	}
	// The rule's right-hand side is left out: its values on the violating
	// records are the violation itself, which rare values of it show more
	// often than the window by construction (a fault spread over every
	// record would otherwise always have a segment).
	r.Segments = segments(&w, r.Violating, []string{cmp.Or(d.RHS, d.Right)}, o, b)
	r.First = breakStart(r.Violating, n, w.Epsilon)
	return r, nil
}

// takeBuffers takes an explanation's buffers from the pool, set for o;
// the caller puts them back.
func takeBuffers(o Options) *buffers {
	b := pool.Get().(*buffers)
	b.denseKeys = cmp.Or(o.denseKeys, defaultDenseKeys)
	return b
}

// violations is the rule's part of an explanation of d on t, its encoded
// columns: the violating rows and what d expected of each (explainFD,
// explainOC).
func (b *buffers) violations(t *table.Table, d discovery.Dependency) (Result, error) {
	switch d.Kind {
	case discovery.KindOFD:
		return explainFD(t, d, b)
	case discovery.KindOC:
		return explainOC(t, d, b)
	}
	return Result{}, fmt.Errorf("explain: %s: only FDs and OCs are explained", d)
}

// slot is the index of row r in w's codes.
func (w *Window) slot(r int) int {
	if w.Slot == nil {
		return r
	}
	return w.Slot(r)
}

// breakStart is the index in violating (rows, ascending, of a window of
// n) of the earliest record from which on the violations most exceed
// what the rule tolerates: the k maximizing (violating records from
// violating[k] on) - eps * (records from violating[k] on), the earliest
// of equal ones (to 1e-9, so that rounding breaks no tie). Before a fault the violations are within eps (an
// approximate rule's old exceptions), so they lower the sum and the
// break starts at the fault; without them it is the first violating
// record. -1 when there is none.
func breakStart(violating []int, n int, eps float64) int {
	best, bestScore := -1, 0.0
	for k, row := range violating {
		if score := float64(len(violating)-k) - eps*float64(n-row); best < 0 || score > bestScore+1e-9 {
			best, bestScore = k, score
		}
	}
	return best
}

// column finds a column of t by name.
func column(t *table.Table, name string) (*table.Column, error) {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i], nil
		}
	}
	return nil, fmt.Errorf("explain: the window has no column %s", name)
}

// classes numbers the context classes of t's rows over the named columns
// (0, 1, ... in the order of each class's first row) and returns each
// row's class (in b.class) and the number of classes.
func classes(t *table.Table, context []string, b *buffers) ([]uint32, int, error) {
	b.class = resized(b.class, t.Rows)
	class := b.class
	clear(class)
	k := 1
	for _, name := range context {
		c, err := column(t, name)
		if err != nil {
			return nil, 0, err
		}
		// Refine: (previous class, rank) pairs renumbered in first-row
		// order.
		k = numberPairs(class, k, c, class, b)
	}
	if t.Rows == 0 {
		k = 0
	}
	return class, k, nil
}

// dense reports whether the key space of the pairs of k classes and a
// column of card values, over rows rows, is small enough to count in an
// array (Options.denseKeys per row), and its size.
func (b *buffers) dense(rows, k, card int) (keys int, ok bool) {
	limit := b.denseKeys * rows
	if b.denseKeys < 0 || k <= 0 || card <= 0 || k > limit/card {
		return 0, false
	}
	return k * card, true
}

// buffers are an explanation's working arrays, kept across explanations
// in pool: one of a 100k-record window takes about 6 MB of them, which
// fresh allocations would zero and fault in every time. Nothing a Result
// holds points into them.
type buffers struct {
	class, ids  []uint32 // classes
	of          []uint32 // explainFD: each row's (class, value) pair; explainOC: each violating row's place
	rows, spare []ocRow  // explainOC: the rows sorted, and a second buffer for the sorts
	chain       []ocRow
	in          []bool
	piles       []int32
	start       []int // the counting sorts' counts, then the segments' (counts)
	denseKeys   int   // the explanation's Options.denseKeys
}

var pool = sync.Pool{New: func() any { return new(buffers) }}

// resized is s with length n, its backing array reused when it is large
// enough; the elements are not cleared.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
