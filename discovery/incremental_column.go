package discovery

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
)

// incColumn is one column of an Incremental window: a reference-counted
// dictionary of the values in the window, the typing rule of Encode kept
// up to date as values come and go, and two views of a value:
//
//   - its equality id (eq), the identity partitions and FD counts use: the
//     dictionary code in a text column; in a numeric column the id of its
//     number, so that "1" and "1.0" are one value, as Encode makes them;
//   - its order label (label), the key OCs sort by: the order bits of its
//     number in a numeric column; in a text column a label kept in byte
//     order by an order-maintenance list (sorted, with gaps between labels
//     so that a new value usually takes a free label between its
//     neighbours and no other label moves).
//
// Code, eq and label 0 are NULL, lower than every value. Between two
// settles the column's mode (numeric or text), its codes and its labels do
// not change, so a value's eq and label are the same when its row leaves as
// when it entered; settle, run by Incremental.Check, frees the codes no row
// holds any more, switches the mode when the window's values call for it,
// and labels the text values that arrived.
type incColumn struct {
	name  string
	codes []uint32 // by ring slot; 0 = NULL

	index map[string]uint32 // value → code (codes with no row stay until settle)
	vals  []string          // code-1 → value
	refs  []uint32          // code-1 → rows holding it; freedRefs once freed
	bits  []uint64          // code-1 → order bits of its number, 0 if not a number
	grp   []uint32          // code-1 → id of its number (or an id of its own)
	free  []uint32          // codes free for reuse
	zero  []uint32          // codes whose last row left since the last settle

	groups  map[uint64]uint32 // order bits of a number → its id
	grpRefs []uint32          // id-1 → codes with that id
	grpFree []uint32

	nonNumLive int  // codes held by rows that are not numbers
	nonNull    int  // rows with a non-NULL value
	numeric    bool // the mode as of the last settle

	// ordered: some OC sorts by this column, so text values get labels.
	ordered bool
	sorted  []uint32 // text mode: the labelled codes, in byte order of their values
	spare   []uint32
	label   []uint64 // code-1 → label in text mode (0 = not labelled yet)
	fresh   []uint32 // codes created since the last settle
	// epoch changes whenever existing labels or eq ids change (relabel,
	// mode switch), so that state holding them is refreshed.
	epoch uint64
	// stride is the gap between labels given by a relabel (labelStride,
	// lowered by tests to force relabels).
	stride uint64
}

// freedRefs marks a code that is on the free list.
const freedRefs = math.MaxUint32

// labelStride is the gap a relabel leaves between consecutive text labels:
// 2^40 leaves room for about 2^22 values arriving in one gap (or past
// either end, e.g. an increasing timestamp column) before labels must be
// spread again, and for 2^22 values in the label space.
const labelStride = uint64(1) << 40

// labelBase is the first label of a relabel: a quarter of the space stays
// below it for new smallest values.
const labelBase = uint64(1) << 62

func newIncColumn(name string, slots int) *incColumn {
	return &incColumn{
		name:    name,
		codes:   make([]uint32, slots),
		index:   map[string]uint32{},
		groups:  map[uint64]uint32{},
		numeric: true,
		stride:  labelStride,
	}
}

// numberBits returns the order bits of v's number (a uint64 whose unsigned
// order is the numbers' order, -0 and +0 alike, never 0), or 0 when v is
// not a number in Encode's sense (NaN counts as text).
func numberBits(v string) uint64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && errors.Is(err, strconv.ErrRange) {
		err = nil
	}
	if err != nil || math.IsNaN(f) {
		return 0
	}
	if f == 0 {
		f = 0 // -0 is 0
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// intern returns the code of v, taking a reference.
func (c *incColumn) intern(v string) uint32 {
	if code, ok := c.index[v]; ok {
		c.ref(code)
		return code
	}
	var code uint32
	if k := len(c.free); k > 0 {
		code = c.free[k-1]
		c.free = c.free[:k-1]
		c.vals[code-1], c.refs[code-1] = v, 0
	} else {
		c.vals = append(c.vals, v)
		c.refs = append(c.refs, 0)
		c.bits = append(c.bits, 0)
		c.grp = append(c.grp, 0)
		c.label = append(c.label, 0)
		code = uint32(len(c.vals))
	}
	b := numberBits(v)
	c.bits[code-1], c.label[code-1] = b, 0
	var g uint32
	if b != 0 {
		g = c.groups[b]
	}
	if g == 0 {
		if k := len(c.grpFree); k > 0 {
			g = c.grpFree[k-1]
			c.grpFree = c.grpFree[:k-1]
		} else {
			c.grpRefs = append(c.grpRefs, 0)
			g = uint32(len(c.grpRefs))
		}
		if b != 0 {
			c.groups[b] = g
		}
	}
	c.grpRefs[g-1]++
	c.grp[code-1] = g
	c.index[v] = code
	c.fresh = append(c.fresh, code)
	c.ref(code)
	return code
}

func (c *incColumn) ref(code uint32) {
	c.nonNull++
	c.refs[code-1]++
	if c.refs[code-1] == 1 && c.bits[code-1] == 0 {
		c.nonNumLive++
	}
}

func (c *incColumn) release(code uint32) {
	c.nonNull--
	c.refs[code-1]--
	if c.refs[code-1] == 0 {
		if c.bits[code-1] == 0 {
			c.nonNumLive--
		}
		c.zero = append(c.zero, code)
	}
}

// eq is the equality id of code (see incColumn).
func (c *incColumn) eq(code uint32) uint32 {
	if code == 0 || !c.numeric {
		return code
	}
	return c.grp[code-1]
}

// orderOf is the order label of code (see incColumn); valid after settle.
func (c *incColumn) orderOf(code uint32) uint64 {
	if code == 0 {
		return 0
	}
	if c.numeric {
		return c.bits[code-1]
	}
	return c.label[code-1]
}

// settle frees the codes no row holds, switches the mode when the live
// values call for it and labels new text values. It reports whether the
// mode switched (every eq id and label of the column changed) and whether
// labels moved (the order of labels is unchanged, their values are not).
func (c *incColumn) settle() (switched, relabelled bool) {
	var gone []uint32 // labelled codes freed now
	for _, code := range c.zero {
		if c.refs[code-1] != 0 {
			continue // held again, or already freed
		}
		if c.label[code-1] != 0 {
			gone = append(gone, code)
		}
		delete(c.index, c.vals[code-1])
		g := c.grp[code-1]
		c.grpRefs[g-1]--
		if c.grpRefs[g-1] == 0 {
			if b := c.bits[code-1]; b != 0 {
				delete(c.groups, b)
			}
			c.grpFree = append(c.grpFree, g)
		}
		c.refs[code-1] = freedRefs
		c.free = append(c.free, code)
	}
	c.zero = c.zero[:0]

	numeric := c.nonNumLive == 0
	if numeric != c.numeric {
		c.numeric = numeric
		c.epoch++
		switched = true
	}
	switch {
	case c.numeric || !c.ordered:
		if c.sorted != nil {
			for _, code := range c.sorted {
				if c.refs[code-1] != freedRefs {
					c.label[code-1] = 0
				}
			}
			c.sorted = nil
		}
	case switched || c.sorted == nil:
		c.relabelAll()
		relabelled = true
	default:
		relabelled = c.mergeFresh(gone)
	}
	for _, code := range gone {
		c.label[code-1] = 0
	}
	c.fresh = c.fresh[:0]
	return switched, relabelled
}

// liveCodes appends the codes held by some row.
func (c *incColumn) liveCodes(out []uint32) []uint32 {
	for i, r := range c.refs {
		if r != 0 && r != freedRefs {
			out = append(out, uint32(i+1))
		}
	}
	return out
}

func (c *incColumn) byValue(x, y uint32) int { return cmp.Compare(c.vals[x-1], c.vals[y-1]) }

// relabelAll sorts every live text value and spreads the labels stride
// apart.
func (c *incColumn) relabelAll() {
	c.sorted = c.liveCodes(c.sorted[:0])
	if c.sorted == nil {
		c.sorted = make([]uint32, 0, 8) // labelled, with no value
	}
	slices.SortFunc(c.sorted, c.byValue)
	c.spreadLabels()
}

func (c *incColumn) spreadLabels() {
	d := uint64(len(c.sorted))
	stride := min(c.stride, (math.MaxUint64-labelBase)/(d+1))
	for i, code := range c.sorted {
		c.label[code-1] = labelBase + uint64(i+1)*stride
	}
	c.epoch++
}

// mergeFresh removes the labelled codes gone and inserts the fresh live
// ones into sorted, labelling each between its neighbours; when a gap is
// too narrow every label is spread again and it returns true.
func (c *incColumn) mergeFresh(gone []uint32) bool {
	ins := c.fresh[:0:0]
	for _, code := range c.fresh {
		if r := c.refs[code-1]; r != 0 && r != freedRefs && c.label[code-1] == 0 {
			ins = append(ins, code)
		}
	}
	if len(ins) == 0 && len(gone) == 0 {
		return false
	}
	slices.SortFunc(ins, c.byValue)
	old := c.sorted
	// Positions in old: each gone code's, each new code's insertion point.
	// Values are distinct strings, so a binary search finds the gone ones.
	pos := func(v string) int {
		i, _ := slices.BinarySearchFunc(old, v, func(code uint32, v string) int { return cmp.Compare(c.vals[code-1], v) })
		return i
	}
	goneAt := make([]int, len(gone))
	for i, code := range gone {
		goneAt[i] = pos(c.vals[code-1])
	}
	slices.Sort(goneAt)
	out := slices.Grow(c.spare[:0], len(old)+len(ins))
	narrow := false
	g, from := 0, 0
	for i := 0; i < len(ins); {
		at := pos(c.vals[ins[i]-1])
		j := i + 1
		for j < len(ins) && pos(c.vals[ins[j]-1]) == at {
			j++
		}
		out, g = copySkipping(out, old, from, at, goneAt, g)
		from = at
		// Labels strictly between lo and hi for ins[i:j].
		k := uint64(j - i)
		var lo, step uint64
		switch {
		case len(old) == 0:
			narrow = true
		case at == 0:
			first := c.label[old[0]-1]
			step = min(c.stride, first/(k+1))
			lo = first - (k+1)*step
		case at == len(old):
			last := c.label[old[at-1]-1]
			step = min(c.stride, (math.MaxUint64-last)/(k+1))
			lo = last
		default:
			l, h := c.label[old[at-1]-1], c.label[old[at]-1]
			step = (h - l) / (k + 1)
			lo = l
		}
		if step == 0 {
			narrow = true
		}
		for t := i; t < j; t++ {
			if !narrow {
				c.label[ins[t]-1] = lo + uint64(t-i+1)*step
			}
			out = append(out, ins[t])
		}
		i = j
	}
	out, _ = copySkipping(out, old, from, len(old), goneAt, g)
	c.spare, c.sorted = old[:0], out
	if narrow {
		c.spreadLabels()
		return true
	}
	return false
}

// copySkipping appends old[from:to] to out except the positions listed in
// skip[g:] (ascending), and returns out and the first skip position not
// passed.
func copySkipping(out, old []uint32, from, to int, skip []int, g int) ([]uint32, int) {
	for g < len(skip) && skip[g] < to {
		out = append(out, old[from:skip[g]]...)
		from = skip[g] + 1
		g++
	}
	return append(out, old[from:to]...), g
}
