// Package dict holds the incremental engine's dictionaries: a window
// column's values to their codes, equality ids and order labels (Column:
// reference counted as rows come and go, typed as table.EncodeTyped types
// them, labels kept in order as values arrive), and the map from a class
// key to its class (KeyMap). Both are open-addressing tables that leave no
// tombstones, as a sliding window deletes every key it ever held.
package dict

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/codeindex"
)

// Mode is how an incremental column currently types its values, as
// EncodeTyped would type the window's values.
type Mode uint8

const (
	Numeric  Mode = iota // every value parses as a number
	Temporal             // every value is an ISO 8601 date or timestamp
	Text                 // byte order
)

// Column is one column of an Engine window: a reference-counted
// dictionary of the values in the window, the typing rule of EncodeTyped
// kept up to date as values come and go, and two views of a value:
//
//   - its equality id (eq), the identity partitions and FD counts use: the
//     dictionary code in a text column; in a numeric (temporal) column the
//     id of its number (instant), so that "1" and "1.0" are one value, as
//     EncodeTyped makes them;
//   - its order label (orderOf), the key OCs sort by: the order bits of its
//     number in a numeric column; in a temporal or text column a label kept
//     in order by an order-maintenance list (orderList), with gaps between
//     labels so that a new value usually takes a free label between its
//     neighbours and no other label moves.
//
// Code, eq and label 0 are NULL, lower than every value. Between two
// settles the column's mode, its codes, eq ids and labels do not change,
// so a value's eq is the same when its row leaves as when it entered;
// Settle, run by Engine.Check, frees the codes no row holds any more,
// switches the mode when the window's values call for it, and labels the
// values that arrived.
type Column struct {
	Name  string
	Codes []uint32 // by ring slot; 0 = NULL

	index codeindex.Index // value → code (codes with no row stay until settle)
	Vals  []string        // code-1 → value
	hash  []uint32        // code-1 → its value's index hash (settle removes by it)
	refs  []uint32        // code-1 → rows holding it; freedRefs once freed
	bits  []uint64        // code-1 → order bits of its number, 0 if not a number
	ngrp  []uint32        // code-1 → id of its number, 0 if not a number
	tgrp  []uint32        // code-1 → id of its instant, 0 if not temporal
	free  []uint32        // codes free for reuse
	zero  []uint32        // codes whose last row left since the last settle

	// hint[k-1] is the code the caller's code k (AppendCoded) last stood
	// for: taken again only while that code holds the very string given
	// (see InternCoded). Caller codes above tune.HintMax are not hinted.
	hint []uint32
	tune Tuning

	typing
	NonNull int  // rows with a non-NULL value
	Mode    Mode // as of the last settle

	// ordered: some OC sorts by this column, so temporal and text values
	// get labels (text by code, temporal by instant id).
	Ordered bool
	text    orderList
	time    orderList
}

// typing is what a column knows of its values' types: the ids of their
// numbers and instants, and how many live codes are not numbers or not
// temporal (Settle switches the mode by them).
type typing struct {
	nums  idSpace[uint64]  // numbers (order bits) → ids
	times idSpace[timeKey] // instants → ids

	nonNumLive  int // codes held by rows that are not numbers
	nonTimeLive int // codes held by rows that are not temporal
	temporalOK  bool
	layout      int // table.ParseTemporalFrom's layout of the last date read (parseTime)
}

// timeKey is an instant: Unix seconds and nanoseconds.
type timeKey struct {
	sec  int64
	nsec int32
}

func compareTimeKeys(x, y timeKey) int {
	return cmp.Or(cmp.Compare(x.sec, y.sec), cmp.Compare(x.nsec, y.nsec))
}

// idSpace gives equal keys one dense id, reference counted by the codes
// holding it. Its index is an open-addressing table with linear probing
// and backward-shift deletion, as codeindex's: over a sliding window every
// key is eventually deleted, and a Go map's tombstones would lengthen
// every lookup and delete of a check.
type idSpace[K comparable] struct {
	hash  func(K) uint64
	slots []idSlot // power-of-two length, or nil
	n     int
	keys  []K      // id-1 → key
	refs  []uint32 // id-1 → codes
	free  []uint32
	fresh []uint32 // ids created since the last settle
	gone  []uint32 // ids freed by the last settle
}

type idSlot struct {
	id, hash uint32 // id 0 = empty
}

func hashBits(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 }

func hashTime(k timeKey) uint64 {
	return hashBits(uint64(k.sec)*0xBF58476D1CE4E5B9 ^ uint64(k.nsec))
}

// find returns k's id (0 if absent) and its hash.
func (s *idSpace[K]) find(k K) (id, h uint32) {
	h = uint32(s.hash(k) >> 32)
	if s.n == 0 {
		return 0, h
	}
	mask := uint32(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := s.slots[i]
		if sl.id == 0 {
			return 0, h
		}
		if sl.hash == h && s.keys[sl.id-1] == k {
			return sl.id, h
		}
	}
}

func (s *idSpace[K]) insert(id, h uint32) {
	if 2*(s.n+1) > len(s.slots) {
		old := s.slots
		s.slots = make([]idSlot, max(2*len(old), 16))
		mask := uint32(len(s.slots) - 1)
		for _, sl := range old {
			if sl.id != 0 {
				i := sl.hash & mask
				for s.slots[i].id != 0 {
					i = (i + 1) & mask
				}
				s.slots[i] = sl
			}
		}
	}
	mask := uint32(len(s.slots) - 1)
	i := h & mask
	for s.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = idSlot{id: id, hash: h}
	s.n++
}

// remove deletes id (present, with key k) from the index.
func (s *idSpace[K]) remove(id uint32, k K) {
	mask := uint32(len(s.slots) - 1)
	i := uint32(s.hash(k)>>32) & mask
	for s.slots[i].id != id {
		i = (i + 1) & mask
	}
	s.n--
	for j := i; ; {
		j = (j + 1) & mask
		sl := s.slots[j]
		if sl.id == 0 {
			break
		}
		if codeindex.Stays(i, sl.hash&mask, j) {
			continue
		}
		s.slots[i] = sl
		i = j
	}
	s.slots[i] = idSlot{}
}

func (s *idSpace[K]) ref(k K) uint32 {
	id, h := s.find(k)
	if id == 0 {
		if n := len(s.free); n > 0 {
			id = s.free[n-1]
			s.free = s.free[:n-1]
			s.keys[id-1] = k
		} else {
			s.keys = append(s.keys, k)
			s.refs = append(s.refs, 0)
			id = uint32(len(s.keys))
		}
		s.insert(id, h)
		s.fresh = append(s.fresh, id)
	}
	s.refs[id-1]++
	return id
}

func (s *idSpace[K]) unref(id uint32) {
	s.refs[id-1]--
	if s.refs[id-1] == 0 {
		s.remove(id, s.keys[id-1])
		s.free = append(s.free, id)
		s.gone = append(s.gone, id)
	}
}

func (s *idSpace[K]) live(id uint32) bool { return s.refs[id-1] > 0 }

// freedRefs marks a code that is on the free list.
const freedRefs = math.MaxUint32

// labelBase is the first label of a relabel: a quarter of the space stays
// below it for new smallest values.
const labelBase = uint64(1) << 62

// Tuning holds a column's knobs. Production takes DefaultTuning; tests
// lower them to reach paths a small window would not (relabels, codes
// left unhinted).
type Tuning struct {
	// HintMax is the largest caller code hinted. A caller's codes index
	// its dictionary, so the hints (4 bytes a code) cost at most a quarter
	// of what the caller's dictionary headers do; the bound only keeps a
	// stray code from allocating gigabytes.
	HintMax uint32
	// LabelStride is the gap a relabel leaves between consecutive labels:
	// 2^40 leaves room for about 2^22 values arriving in one gap (or past
	// either end, e.g. an increasing timestamp column) before labels must
	// be spread again, and for 2^22 values in the label space.
	LabelStride uint64
}

// DefaultTuning is the knobs of a column outside tests.
func DefaultTuning() Tuning {
	return Tuning{HintMax: 1 << 24, LabelStride: 1 << 40}
}

// NewColumn returns an empty column of a window of the given ring slots;
// temporalOK says whether its values may be typed temporal.
func NewColumn(name string, slots int, temporalOK bool, t Tuning) *Column {
	c := &Column{
		Name:  name,
		Codes: make([]uint32, slots),
		index: codeindex.New(),
		typing: typing{
			temporalOK: temporalOK,
			nums:       idSpace[uint64]{hash: hashBits},
			times:      idSpace[timeKey]{hash: hashTime},
		},
	}
	c.Retune(t)
	return c
}

// Retune sets the column's knobs (tests).
func (c *Column) Retune(t Tuning) {
	c.tune = t
	c.text.stride, c.time.stride = t.LabelStride, t.LabelStride
}

// numberBits returns the order bits of v's number (a uint64 whose unsigned
// order is the numbers' order, -0 and +0 alike, never 0), or 0 when v is
// not a number in EncodeTyped's sense (NaN counts as text).
func numberBits(v string) uint64 {
	if !mayBeNumber(v) {
		return 0 // spares ParseFloat's error, which allocates
	}
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

// floatLetters are the bytes other than digits that can appear in a
// number ParseFloat accepts: signs, point, underscore, hexadecimal digits
// and exponents, the 0x prefix, and the letters of inf, infinity and nan.
const floatLetters = "+-._abcdefABCDEFpPxXiInNtTyY"

// mayBeNumber is false when v has a byte no number has (a timestamp's
// colon, a word's letters) or a sign where no number has one (only first
// or after an exponent's e or p: not in a date, a UUID or a phone number),
// so that ParseFloat cannot accept it.
func mayBeNumber(v string) bool {
	for i := 0; i < len(v); i++ {
		b := v[i]
		if b >= '0' && b <= '9' {
			continue
		}
		if strings.IndexByte(floatLetters, b) < 0 {
			return false
		}
		if (b == '-' || b == '+') && i > 0 && strings.IndexByte("eEpP", v[i-1]) < 0 {
			return false
		}
	}
	return len(v) > 0
}

// Intern returns the code of v, taking a reference.
func (c *Column) Intern(v string) uint32 { return c.intern(v, prepared{}) }

// prepared is what InternCodedRun works out ahead for a value its hint
// misses: its index hash and its number's order bits (numberBits).
type prepared struct {
	h  uint32
	b  uint64
	ok bool
}

// intern is Intern with v's hash and bits when p has them.
func (c *Column) intern(v string, p prepared) uint32 {
	h := p.h
	if !p.ok {
		h = c.index.HashString(v)
	}
	if code := c.index.LookupHash(c.Vals, v, h); code != 0 {
		c.Ref(code)
		return code
	}
	b := p.b
	if !p.ok {
		b = numberBits(v)
	}
	return c.add(v, h, b)
}

// add makes v, not in the dictionary, a code (with index hash h and
// number bits b), taking a reference.
func (c *Column) add(v string, h uint32, b uint64) uint32 {
	var code uint32
	if k := len(c.free); k > 0 {
		code = c.free[k-1]
		c.free = c.free[:k-1]
		c.Vals[code-1], c.refs[code-1], c.hash[code-1] = v, 0, h
	} else {
		c.Vals = append(c.Vals, v)
		c.refs = append(c.refs, 0)
		c.hash = append(c.hash, h)
		c.bits = append(c.bits, 0)
		c.ngrp = append(c.ngrp, 0)
		c.tgrp = append(c.tgrp, 0)
		code = uint32(len(c.Vals))
	}
	c.bits[code-1], c.ngrp[code-1], c.tgrp[code-1] = b, 0, 0
	if b != 0 {
		c.ngrp[code-1] = c.nums.ref(b)
	}
	if b == 0 && c.temporalOK { // a number is never a date
		if tm, ok := c.parseTime(v); ok {
			c.tgrp[code-1] = c.times.ref(timeKey{tm.Unix(), int32(tm.Nanosecond())})
		}
	}
	c.index.Insert(code, h)
	c.text.fresh = append(c.text.fresh, code)
	c.Ref(code)
	return code
}

// NoHint is the caller code of a value given without one (Append).
const NoHint = ^uint32(0)

// InternCoded is Intern for a value the caller gave with its own code k
// (AppendCoded; NoHint = none): the code k last stood for is taken again when
// it still holds v itself (Holds), without hashing v; otherwise v is
// interned by hash and k hinted to its code.
func (c *Column) InternCoded(k uint32, v string) uint32 { return c.internCoded(k, v, prepared{}) }

// internCoded is InternCoded with what p prepared of v.
func (c *Column) internCoded(k uint32, v string, p prepared) uint32 {
	if k == NoHint || k > c.tune.HintMax {
		return c.intern(v, p)
	}
	if int(k) <= len(c.hint) {
		if code := c.hint[k-1]; code != 0 && c.Holds(code, v) {
			c.Ref(code)
			return code
		}
	} else {
		// hint never shrinks, so what lies past its length is zero.
		c.hint = slices.Grow(c.hint, int(k)-len(c.hint))[:k]
	}
	code := c.intern(v, p)
	c.hint[k-1] = code
	// v may be a value the column holds in another string (it left the
	// caller's dictionary, whose new string for it is v, while the engine
	// still held it): keep the caller's string, which is equal, so that
	// its next rows hit.
	c.Vals[code-1] = v
	return code
}

// Holds reports whether code is in the dictionary with the string v
// itself as its value: the same bytes in memory and the same length. That
// is never wrong: the column's string for code is reachable (vals holds
// it) and so is v, and two reachable strings that start at the same
// address and have the same length are equal, as Go strings are never
// modified. A freed code does not hold its value any more (vals keeps the
// string until the code is reused, but the index and the number and
// instant ids let it go). Equal values in different memory are not
// recognised: InternCoded then interns by hash.
func (c *Column) Holds(code uint32, v string) bool {
	if c.refs[code-1] == freedRefs {
		return false
	}
	w := c.Vals[code-1]
	return len(w) == len(v) && (len(v) == 0 || unsafe.StringData(w) == unsafe.StringData(v))
}

// parseTime reads a temporal value, trying first the layout that read the
// column's last date (see ParseTemporalFrom).
func (c *Column) parseTime(v string) (time.Time, bool) {
	return table.ParseTemporalFrom(v, &c.layout)
}

// Ref takes one more reference to code (a row that holds it).
func (c *Column) Ref(code uint32) {
	c.NonNull++
	c.refs[code-1]++
	if c.refs[code-1] == 1 {
		if c.bits[code-1] == 0 {
			c.nonNumLive++
		}
		if c.tgrp[code-1] == 0 {
			c.nonTimeLive++
		}
	}
}

// Release drops a reference to code; the last one leaves it for Settle
// to free.
func (c *Column) Release(code uint32) {
	c.NonNull--
	c.refs[code-1]--
	if c.refs[code-1] == 0 {
		if c.bits[code-1] == 0 {
			c.nonNumLive--
		}
		if c.tgrp[code-1] == 0 {
			c.nonTimeLive--
		}
		c.zero = append(c.zero, code)
	}
}

// Counts returns how many of the window's rows rows hold each code, by
// code (0: NULL), as counting the codes of those rows would (a freed code
// holds none), in buf's memory when it is large enough: every entry is
// written.
func (c *Column) Counts(buf []uint32, rows int) []uint32 {
	out := slices.Grow(buf[:0], len(c.refs)+1)[:len(c.refs)+1]
	out[0] = uint32(rows - c.NonNull)
	for i, r := range c.refs {
		out[i+1] = r
		if r == freedRefs {
			out[i+1] = 0
		}
	}
	return out
}

// Eq is the equality id of code (see Column).
func (c *Column) Eq(code uint32) uint32 {
	if code == 0 {
		return 0
	}
	switch c.Mode {
	case Numeric:
		return c.ngrp[code-1]
	case Temporal:
		return c.tgrp[code-1]
	}
	return code
}

// OrderOf is the order label of code (see Column); valid after Settle.
func (c *Column) OrderOf(code uint32) uint64 {
	if code == 0 {
		return 0
	}
	switch c.Mode {
	case Numeric:
		return c.bits[code-1]
	case Temporal:
		return c.time.label[c.tgrp[code-1]-1]
	}
	return c.text.label[code-1]
}

// Settle frees the codes no row holds, switches the mode when the live
// values call for it and labels new values. It reports whether the mode
// switched (every eq id and label of the column changed) and whether labels
// moved (their order is unchanged, their values are not).
func (c *Column) Settle() (switched, relabelled bool) {
	for _, code := range c.zero {
		if c.refs[code-1] != 0 {
			continue // held again, or already freed
		}
		c.index.RemoveHashed(code, c.hash[code-1])
		if g := c.ngrp[code-1]; g != 0 {
			c.nums.unref(g)
		}
		if g := c.tgrp[code-1]; g != 0 {
			c.times.unref(g)
		}
		c.refs[code-1] = freedRefs
		c.free = append(c.free, code)
		c.text.gone = append(c.text.gone, code)
	}
	c.zero = c.zero[:0]
	c.time.gone = append(c.time.gone, c.times.gone...)
	c.time.fresh = append(c.time.fresh, c.times.fresh...)
	c.times.gone, c.times.fresh = c.times.gone[:0], c.times.fresh[:0]
	c.nums.gone, c.nums.fresh = c.nums.gone[:0], c.nums.fresh[:0]

	mode := Text
	switch {
	case c.nonNumLive == 0:
		mode = Numeric
	case c.temporalOK && c.nonTimeLive == 0:
		mode = Temporal
	}
	if mode != c.Mode {
		c.Mode = mode
		switched = true
	}
	textLive := func(code uint32) bool { r := c.refs[code-1]; return r != 0 && r != freedRefs }
	byText := func(x, y uint32) int { return cmp.Compare(c.Vals[x-1], c.Vals[y-1]) }
	byTime := func(x, y uint32) int { return compareTimeKeys(c.times.keys[x-1], c.times.keys[y-1]) }
	r1 := c.text.settle(c.Ordered && c.Mode == Text, len(c.Vals), textLive, byText)
	r2 := c.time.settle(c.Ordered && c.Mode == Temporal, len(c.times.keys), c.times.live, byTime)
	return switched, r1 || r2
}

// orderList keeps ids (of values, or instants) in order with labels:
// sorted lists the labelled ids; label[id-1] is 0 for an id not in it.
type orderList struct {
	sorted, spare []uint32
	label         []uint64
	fresh         []uint32 // ids created since the last settle
	gone          []uint32 // ids freed since the last settle
	stride        uint64   // gap between labels after a relabel (Tuning.LabelStride)
	active        bool
}

// settle brings the list up to date when on (the column's mode uses it;
// ids range over 1..ids), and empties it otherwise. It reports whether
// labels moved.
func (l *orderList) settle(on bool, ids int, live func(uint32) bool, compare func(x, y uint32) int) bool {
	for len(l.label) < ids {
		l.label = append(l.label, 0)
	}
	defer func() { l.fresh, l.gone = l.fresh[:0], l.gone[:0] }()
	if !on {
		if l.active {
			for _, id := range l.sorted {
				l.label[id-1] = 0
			}
			l.sorted, l.active = l.sorted[:0], false
		}
		return false
	}
	if !l.active {
		l.sorted = l.sorted[:0]
		for id := uint32(1); int(id) <= ids; id++ {
			if live(id) {
				l.sorted = append(l.sorted, id)
			}
		}
		slices.SortFunc(l.sorted, compare)
		l.spread()
		l.active = true
		return true
	}
	return l.merge(live, compare)
}

func (l *orderList) spread() {
	d := uint64(len(l.sorted))
	stride := min(l.stride, (math.MaxUint64-labelBase)/(d+1))
	for i, id := range l.sorted {
		l.label[id-1] = labelBase + uint64(i+1)*stride
	}
}

// merge removes the labelled ids gone and inserts the fresh live ones,
// labelling each between its neighbours; when a gap is too narrow every
// label is spread again and it returns true. Ids are distinct values, and
// a gone id still compares as its value did.
func (l *orderList) merge(live func(uint32) bool, compare func(x, y uint32) int) bool {
	var gone, ins []uint32
	for _, id := range l.gone {
		if l.label[id-1] != 0 {
			gone = append(gone, id)
		}
	}
	for _, id := range l.fresh {
		if live(id) && l.label[id-1] == 0 {
			ins = append(ins, id)
		}
	}
	if len(ins) == 0 && len(gone) == 0 {
		return false
	}
	old := l.sorted
	// Both lists sorted, each id is placed by galloping from the previous
	// one's place (new instants of a time column all go at the end).
	slices.SortFunc(gone, compare)
	goneAt := make([]int, len(gone))
	at := 0
	for i, id := range gone {
		at = gallopIDs(old, at, id, compare)
		goneAt[i] = at
	}
	slices.SortFunc(ins, compare)
	out := slices.Grow(l.spare[:0], len(old)+len(ins))
	narrow := false
	g, from := 0, 0
	at = 0
	for i := 0; i < len(ins); {
		at = gallopIDs(old, at, ins[i], compare)
		j := i + 1
		for j < len(ins) && (at == len(old) || compare(ins[j], old[at]) < 0) {
			j++
		}
		out, g = copySkipping(out, old, from, at, goneAt, g)
		from = at
		// Labels strictly between the neighbours' for ins[i:j].
		k := uint64(j - i)
		var lo, step uint64
		switch {
		case len(old) == 0:
		case at == 0:
			first := l.label[old[0]-1]
			step = min(l.stride, first/(k+1))
			lo = first - (k+1)*step
		case at == len(old):
			last := l.label[old[at-1]-1]
			step = min(l.stride, (math.MaxUint64-last)/(k+1))
			lo = last
		default:
			lw, hi := l.label[old[at-1]-1], l.label[old[at]-1]
			step = (hi - lw) / (k + 1)
			lo = lw
		}
		if step == 0 {
			narrow = true
		}
		for t := i; t < j; t++ {
			l.label[ins[t]-1] = lo + uint64(t-i+1)*step
			out = append(out, ins[t])
		}
		i = j
	}
	out, _ = copySkipping(out, old, from, len(old), goneAt, g)
	for _, id := range gone {
		l.label[id-1] = 0
	}
	l.spare, l.sorted = old[:0], out
	if narrow {
		l.spread()
		return true
	}
	return false
}

// gallopIDs returns the first index from from on whose id is not below
// id (as slices.BinarySearchFunc would on ids[from:]), galloping from from.
func gallopIDs(ids []uint32, from int, id uint32, compare func(x, y uint32) int) int {
	if from == len(ids) || compare(ids[from], id) >= 0 {
		return from
	}
	lo, hi := from, from+1 // ids[lo] below id; the answer is in (lo, hi]
	for step := 1; hi < len(ids) && compare(ids[hi], id) < 0; step *= 2 {
		lo, hi = hi, hi+step
	}
	hi = min(hi, len(ids))
	i, _ := slices.BinarySearchFunc(ids[lo+1:hi], id, compare)
	return lo + 1 + i
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
