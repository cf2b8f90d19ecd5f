package discovery

import (
	"cmp"
	"slices"
	"sort"
)

// incOC keeps the removals of X: A ~ B, both polarities, over the classes
// of X (node x). A class a row entered or left is dirty; a check
// recomputes the LNDS of the dirty classes only (see Incremental.Check for
// when it may skip even that). A class of at least sortedMin rows keeps
// its rows sorted by (label A, label B) between checks (sortedClass), so
// that recomputing it costs a merge of the rows that arrived and one LNDS
// pass instead of a sort; smaller classes are gathered from x's member
// lists and sorted each time.
type incOC struct {
	x           *incNode
	a, b        int // columns
	asc, desc   bool
	remAsc      []uint32 // by class, as of the class's last recount
	remDesc     []uint32
	totAsc      int // sums of remAsc/remDesc
	totDesc     int
	dirty       []uint32
	isDirty     []bool
	big         []*sortedClass // by class; nil for a small class
	ins, del    int            // rows that entered/left x's classes since the totals were exact
	mustRecount bool           // labels or classes changed under the totals: recount before use
	lastRows    int            // rows the last recount read (see recountOCs)
	stale       bool
}

// sortedClass is a large class's rows ordered by (label A, label B): rows
// that left are dropped (they are older than the window's oldest row) and
// rows that arrived (pending) merged in at the next recount. Only label B
// is kept (the LNDS reads it in order); label A, needed to place a new row
// and to find runs of equal A, is looked up from the row: 12 bytes a row.
type sortedClass struct {
	lb      []uint64
	seq     []uint32
	pending []uint32
}

// ocItem is one row of a class being recounted.
type ocItem struct {
	la, lb uint64
	seq    uint32
}

func compareOCItems(x, y ocItem) int {
	return cmp.Or(cmp.Compare(x.la, y.la), cmp.Compare(x.lb, y.lb))
}

func (o *incOC) touch(c, seq uint32, entered bool) {
	o.touchClass(c)
	if entered {
		o.ins++
		if sc := o.big[c]; sc != nil {
			sc.pending = append(sc.pending, seq)
		}
	} else {
		o.del++
	}
}

// resetAll forgets the sorted classes and marks every class dirty: the
// labels of A or B, or the classes of x, changed.
func (o *incOC) resetAll() {
	clear(o.big)
	n := max(len(o.x.size), len(o.isDirty))
	for c := 0; c < n; c++ {
		o.touchClass(uint32(c))
	}
	o.mustRecount = true
}

// touchClass marks class c dirty, growing the per-class slices to hold it.
func (o *incOC) touchClass(c uint32) {
	for int(c) >= len(o.isDirty) {
		o.isDirty = append(o.isDirty, false)
		o.remAsc = append(o.remAsc, 0)
		o.remDesc = append(o.remDesc, 0)
		o.big = append(o.big, nil)
	}
	if !o.isDirty[c] {
		o.isDirty[c] = true
		o.dirty = append(o.dirty, c)
	}
}

// dirtyRows is the number of rows in the dirty classes (all of x's rows
// when every class must be recounted): about what a recount costs.
func (o *incOC) dirtyRows() int {
	rows := 0
	for _, c := range o.dirty {
		if int(c) < len(o.x.size) {
			rows += int(o.x.size[c])
		}
	}
	return rows
}

// recount recomputes the dirty classes; the totals are exact afterwards.
func (o *incOC) recount(e *Incremental) {
	for _, c := range o.dirty {
		o.isDirty[c] = false
		var ra, rd int
		size := 0
		if int(c) < len(o.x.size) {
			size = int(o.x.size[c])
		}
		switch {
		case size < 2:
			o.big[c] = nil
		case o.big[c] != nil || size >= e.sortedMin:
			ra, rd = o.recountSorted(e, c)
			if size < e.sortedMin/4 {
				o.big[c] = nil
			}
		default:
			ra, rd = o.recountSmall(e, c)
		}
		o.totAsc += ra - int(o.remAsc[c])
		o.totDesc += rd - int(o.remDesc[c])
		o.remAsc[c], o.remDesc[c] = uint32(ra), uint32(rd)
	}
	o.dirty = o.dirty[:0]
	o.ins, o.del, o.mustRecount = 0, 0, false
}

func (o *incOC) item(e *Incremental, seq uint32) ocItem {
	slot := seq & e.mask
	ca, cb := e.cols[o.a], e.cols[o.b]
	return ocItem{la: ca.orderOf(ca.codes[slot]), lb: cb.orderOf(cb.codes[slot]), seq: seq}
}

func (o *incOC) recountSmall(e *Incremental, c uint32) (asc, desc int) {
	items := e.items[:0]
	for _, s := range o.x.members[c].live() {
		items = append(items, o.item(e, s))
	}
	if len(items) <= 16 {
		for i := 1; i < len(items); i++ {
			for j := i; j > 0 && compareOCItems(items[j], items[j-1]) < 0; j-- {
				items[j], items[j-1] = items[j-1], items[j]
			}
		}
	} else {
		slices.SortFunc(items, compareOCItems)
	}
	e.items = items
	la, lb := e.la[:0], e.lb[:0]
	for _, it := range items {
		la = append(la, it.la)
		lb = append(lb, it.lb)
	}
	e.la, e.lb = la, lb
	return o.lnds(e, la, lb)
}

// recountSorted brings the sorted rows of class c up to date (building
// them from the member list the first time) and counts on them.
func (o *incOC) recountSorted(e *Incremental, c uint32) (asc, desc int) {
	sc := o.big[c]
	if sc == nil {
		sc = &sortedClass{}
		o.big[c] = sc
		sc.pending = append(sc.pending, o.x.members[c].live()...)
	}
	// Drop the rows that left: they are older than the window.
	k := 0
	for i, s := range sc.seq {
		if e.alive(s) {
			sc.lb[k], sc.seq[k] = sc.lb[i], s
			k++
		}
	}
	sc.lb, sc.seq = sc.lb[:k], sc.seq[:k]
	if len(sc.pending) > 0 {
		items := e.items[:0]
		for _, s := range sc.pending {
			if e.alive(s) {
				items = append(items, o.item(e, s))
			}
		}
		sc.pending = sc.pending[:0]
		slices.SortFunc(items, compareOCItems)
		e.items = items
		o.mergeInto(e, sc, items)
	}
	var la []uint64
	if o.desc {
		la = e.la[:0]
		for _, s := range sc.seq {
			la = append(la, o.labelA(e, s))
		}
		e.la = la
	}
	return o.lnds(e, la, sc.lb)
}

func (o *incOC) labelA(e *Incremental, seq uint32) uint64 {
	ca := e.cols[o.a]
	return ca.orderOf(ca.codes[seq&e.mask])
}

// mergeInto merges the sorted items into sc: each item's place is found by
// a binary search from the previous one's, and the rows in between are
// copied as a run.
func (o *incOC) mergeInto(e *Incremental, sc *sortedClass, items []ocItem) {
	n := len(sc.seq) + len(items)
	// The merged rows go to the scratch arrays, which then belong to the
	// class (its old ones become the scratch): scratch much larger than
	// the class would leave a small class holding a large class's memory.
	lb, seq := e.lb[:0], e.seq[:0]
	if cap(lb) > 2*n+64 {
		lb = nil
	}
	if cap(seq) > 2*n+64 {
		seq = nil
	}
	lb, seq = slices.Grow(lb, n), slices.Grow(seq, n)
	// after reports whether row m of the class comes after it.
	after := func(m int, it ocItem) bool {
		la := o.labelA(e, sc.seq[m])
		return la > it.la || (la == it.la && sc.lb[m] > it.lb)
	}
	from := 0 // rows before from are copied
	for k, it := range items {
		if from == len(sc.seq) || !after(len(sc.seq)-1, it) {
			// It and the items after it come after every row left (new
			// rows of an increasing column do).
			lb, seq = append(lb, sc.lb[from:]...), append(seq, sc.seq[from:]...)
			from = len(sc.seq)
			for _, rest := range items[k:] {
				lb, seq = append(lb, rest.lb), append(seq, rest.seq)
			}
			break
		}
		// The first row after it (one exists): gallop from the previous
		// item's place, then search the last step.
		lo, hi := from, from
		for step := 1; !after(hi, it); step *= 2 {
			lo = hi + 1
			hi = min(hi+step, len(sc.seq)-1)
		}
		j := lo + sort.Search(hi-lo, func(m int) bool { return after(lo+m, it) })
		lb, seq = append(lb, sc.lb[from:j]...), append(seq, sc.seq[from:j]...)
		from = j
		lb, seq = append(lb, it.lb), append(seq, it.seq)
	}
	lb, seq = append(lb, sc.lb[from:]...), append(seq, sc.seq[from:]...)
	// The merged rows become the class's; its old arrays the scratch.
	e.lb, e.seq = sc.lb[:0], sc.seq[:0]
	sc.lb, sc.seq = lb, seq
}

// lnds returns the removals of one class ordered by (la, lb): the rows
// outside a longest non-decreasing subsequence of lb (asc), and, reading
// each run of equal la backwards, of a longest non-increasing one (desc).
func (o *incOC) lnds(e *Incremental, la, lb []uint64) (asc, desc int) {
	if o.asc {
		asc = len(lb) - lndsLen64(&e.tails, lb)
	}
	if o.desc {
		t := e.tails[:0]
		for i := 0; i < len(la); {
			j := i + 1
			for j < len(la) && la[j] == la[i] {
				j++
			}
			for k := j - 1; k >= i; k-- {
				t = pushTail64(t, ^lb[k])
			}
			i = j
		}
		e.tails = t
		desc = len(lb) - len(t)
	}
	return asc, desc
}

// lndsLen64 is the length of a longest non-decreasing subsequence of xs.
func lndsLen64(buf *[]uint64, xs []uint64) int {
	t := (*buf)[:0]
	for _, x := range xs {
		t = pushTail64(t, x)
	}
	*buf = t
	return len(t)
}

// pushTail64 is one patience-sorting step: x replaces the first tail above
// it, or extends the tails.
func pushTail64(t []uint64, x uint64) []uint64 {
	n := len(t)
	if n == 0 || t[n-1] <= x {
		return append(t, x)
	}
	lo, hi := 0, n-1 // t[hi] > x
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	t[lo] = x
	return t
}
