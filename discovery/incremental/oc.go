package incremental

import (
	"slices"
	"time"

	"github.com/odwatch/odwatch/discovery/incremental/internal/pairs"
)

// ocCheck keeps the removals of X: A ~ B, both polarities, over the classes
// of X (node x). A class a row entered or left is dirty; a check
// recomputes the LNDS of the dirty classes only (see Engine.Check for
// when it may skip even that). A class of at least sortedMin rows keeps
// its rows sorted by (label A, label B) between checks (sortedClass), so
// that recomputing it costs a merge of the rows that arrived and one LNDS
// pass instead of a sort; smaller classes are gathered from x's member
// lists and sorted each time. A sorted class's backlog is sorted in
// runs at the checks that do not recount it (presort), so that a recount
// after many skipped checks merges instead of sorting.
type ocCheck struct {
	x           *node
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
	rowNs       float64        // the last recount's time per row read, its changed rows aside (see runRecounts)
	staleLimit  int            // changed rows after which it is recounted whatever the cuts
	stale       bool
	ripe        []uint32 // sorted classes whose backlog reached presortMin since the last presort
	fitBound
	floorBound
}

// fitBound is an OC's state of the fit bound (see fit.go). fitCuts and
// fitLeft are the cuts and the rows left at the check that scheduled the
// recount running (see wantsFit). Per polarity (asc, desc), acc counts
// the rows accepted into the sorted classes' A since the last recount
// (the count is at most tot + ins - acc), and accShare is about the share
// of the rows tested that recent fit tests accepted (for scheduling only).
type fitBound struct {
	fitCuts  []int
	fitLeft  int
	acc      [2]int
	accShare [2]float64
}

// floorBound is an OC's state of the pile bound (see floor.go), per
// polarity: spared counts the rows that left since the last recount
// without lowering the bound (counted as they leave), and lostShare is
// about the share of the rows that left that recent recount periods did
// not spare (for scheduling only; 1 without floors, and the share of the
// rows the floors would not spare until a recount period measured it).
type floorBound struct {
	spared    [2]int
	lostShare [2]float64
	floored   [2]bool // a class recorded a floor at the last recount
}

// sortedClass is a large class's rows as (label A, label B) pairs in
// order. Rows that arrived since the last recount (pending, by row) and
// the pairs of merged rows that left (dead, taken as they leave, while
// their codes are still the window's) are merged in and out at the next
// recount: the rows with seq before merged were merged, the later ones
// are pending. Equal pairs are interchangeable, so the pairs are all a
// recount needs: 16 bytes a row, and nothing looked up per merged row.
//
// A check that does not recount the class may presort its backlog once
// it reaches presortMin rows: the pending rows' pairs go to adds, the rows
// with seq from merged to presorted, and both adds and dead are kept as
// sorted runs (pairLog). A presorted row that leaves before the recount
// (once every merged row has left) has its pair in gone, which the
// recount takes out of adds. A fit test (ocCheck.fit) moves the pending
// rows to adds as presort does, and tests them against fit (see
// classFit), which its recount records.
//
// A class whose rows hold few distinct pairs is kept counted instead
// (cnt non-nil; see counted.go): its pending rows are
// folded into cnt when ripe and at its recount, its merged rows that
// leave are taken out of cnt as they leave, and la, lb, adds, dead,
// gone, fit and floor are unused. fresh marks a class kept by startOver
// and not recounted since (dirtyRows counts its rows, as a new OC's).
type sortedClass struct {
	la, lb     []uint64
	cnt        *pairCounts
	fresh      bool
	merged     uint32
	presorted  uint32
	pending    []uint32
	adds, dead pairLog
	gone       []ocPair
	fit        [2]classFit   // asc, desc
	floor      [2]classFloor // asc, desc
}

// pairLog is a list of pairs as sorted runs (ends: where each ends)
// followed by pairs not sorted yet. Each run is more than twice as long
// as the next, so a pair is merged about log2 times in all.
type pairLog struct {
	ps   []ocPair
	ends []int
}

// sortedLen is the number of pairs in the sorted runs.
func (l *pairLog) sortedLen() int {
	if len(l.ends) == 0 {
		return 0
	}
	return l.ends[len(l.ends)-1]
}

// sortTail sorts the unsorted pairs into a run, then merges the last two
// runs while the earlier one is not more than twice as long (buf is the
// merges' scratch).
func (l *pairLog) sortTail(buf *[]ocPair) {
	start := l.sortedLen()
	if start == len(l.ps) {
		return
	}
	sortPairs(l.ps[start:])
	l.endRun(buf)
}

// endRun makes the pairs not in a run yet, which must be sorted, a run,
// and merges the last two runs while the earlier one is not more than
// twice as long.
func (l *pairLog) endRun(buf *[]ocPair) {
	if l.sortedLen() == len(l.ps) {
		return
	}
	l.ends = append(l.ends, len(l.ps))
	for len(l.ends) >= 2 {
		a, m, b := l.lastRuns()
		if m-a > 2*(b-m) {
			break
		}
		l.mergeLast(buf)
	}
}

// lastRuns returns the bounds of the last two runs: [a, m) and [m, b).
func (l *pairLog) lastRuns() (a, m, b int) {
	k := len(l.ends)
	if k >= 3 {
		a = l.ends[k-3]
	}
	return a, l.ends[k-2], l.ends[k-1]
}

// mergeLast merges the last two runs into one.
func (l *pairLog) mergeLast(buf *[]ocPair) {
	a, m, b := l.lastRuns()
	mergeRuns(l.ps[a:b], m-a, buf)
	l.ends[len(l.ends)-2] = b
	l.ends = l.ends[:len(l.ends)-1]
}

// sorted returns the pairs in order, merging the runs into one.
func (l *pairLog) sorted(buf *[]ocPair) []ocPair {
	l.sortTail(buf)
	for len(l.ends) >= 2 {
		l.mergeLast(buf)
	}
	return l.ps
}

// reset empties l, keeping its memory.
func (l *pairLog) reset() { l.ps, l.ends = l.ps[:0], l.ends[:0] }

// mergeRuns merges ps[:m] and ps[m:], both sorted, in place, through buf
// (which takes a copy of ps[:m]).
func mergeRuns(ps []ocPair, m int, buf *[]ocPair) {
	left := append((*buf)[:0], ps[:m]...)
	*buf = left
	i, j, k := 0, m, 0
	for i < len(left) && j < len(ps) {
		if pairBelow(ps[j], left[i]) {
			ps[k] = ps[j]
			j++
		} else {
			ps[k] = left[i]
			i++
		}
		k++
	}
	copy(ps[k:], left[i:]) // what is left of ps[j:] is in place already
}

// subtractPairs removes from ps (sorted) one pair equal to each of gone
// (sorted, each one in ps), in place, and returns what is left.
func subtractPairs(ps, gone []ocPair) []ocPair {
	k, g := 0, 0
	for _, p := range ps {
		if g < len(gone) && gone[g] == p {
			g++
			continue
		}
		ps[k] = p
		k++
	}
	if g != len(gone) {
		panic("discovery: internal error: a presorted row that left an OC class is not in its presorted pairs")
	}
	return ps[:k]
}

// ocPair is a row's labels of A and B.
type ocPair = pairs.Pair

func comparePairs(x, y ocPair) int {
	switch {
	case x.LA != y.LA:
		if x.LA < y.LA {
			return -1
		}
		return 1
	case x.LB < y.LB:
		return -1
	case x.LB > y.LB:
		return 1
	}
	return 0
}

func pairBelow(x, y ocPair) bool { return x.LA < y.LA || x.LA == y.LA && x.LB < y.LB }

func (o *ocCheck) touch(e *Engine, c, seq uint32, entered bool) {
	o.touchClass(c)
	sc := o.big[c]
	if entered {
		o.ins++
		if sc != nil {
			sc.pending = append(sc.pending, seq)
			if len(sc.pending) == e.tune.presortMin {
				o.ripe = append(o.ripe, c)
			}
		}
		return
	}
	o.del++
	if sc == nil {
		return
	}
	if sc.cnt != nil {
		if int32(seq-sc.merged) < 0 {
			sc.cnt.remove(o.pair(e, seq))
		}
		return
	}
	// A row merged at the class's last recount costs what its floor
	// says; one that entered since costs nothing (see floor.go).
	merged, presorted := int32(seq-sc.merged) < 0, int32(seq-sc.presorted) < 0
	var pair ocPair
	if merged || presorted {
		pair = o.pair(e, seq)
	}
	for p := range 2 {
		if sc.floor[p].ok && (!merged || sc.floor[p].take(pair)) {
			o.spared[p]++
		}
	}
	switch {
	case merged:
		sc.dead.ps = append(sc.dead.ps, pair)
		if len(sc.dead.ps)-sc.dead.sortedLen() == e.tune.presortMin {
			o.ripe = append(o.ripe, c)
		}
	case presorted:
		sc.gone = append(sc.gone, pair)
	}
}

// presort sorts the backlog of the classes that became ripe (see
// sortedClass) with scratch w. Labels must be settled; it writes o's
// state and w only (a unit of phaseRecount).
func (o *ocCheck) presort(e *Engine, w *recountScratch) {
	for _, c := range o.ripe {
		if int(c) >= len(o.big) || o.big[c] == nil {
			continue
		}
		sc := o.big[c]
		if sc.cnt != nil {
			o.fold(e, sc)
			continue
		}
		for _, s := range sc.pending {
			if e.alive(s) {
				sc.adds.ps = append(sc.adds.ps, o.pair(e, s))
			}
		}
		sc.pending = sc.pending[:0]
		sc.presorted = e.to
		sc.adds.sortTail(&w.runs)
		sc.dead.sortTail(&w.runs)
	}
	o.ripe = o.ripe[:0]
}

// resetAll forgets the sorted classes and marks every class dirty: the
// labels of A or B, or the classes of x, changed.
func (o *ocCheck) resetAll() {
	clear(o.big)
	o.acc = [2]int{}
	o.ripe = o.ripe[:0]
	n := max(len(o.x.size), len(o.isDirty))
	for c := 0; c < n; c++ {
		o.touchClass(uint32(c))
	}
	o.mustRecount = true
}

// touchClass marks class c dirty, growing the per-class slices to hold it.
func (o *ocCheck) touchClass(c uint32) {
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
// when every class must be recounted), a counted class's distinct pairs
// and pending rows standing for its rows: about what a recount costs.
func (o *ocCheck) dirtyRows() int {
	rows := 0
	for _, c := range o.dirty {
		if int(c) >= len(o.x.size) {
			continue
		}
		if sc := o.big[c]; sc != nil && sc.cnt != nil && !sc.fresh {
			rows += sc.cnt.ids.Len() + len(sc.pending)
			continue
		}
		rows += int(o.x.size[c])
	}
	return rows
}

// recountScratch is the scratch memory of one recount at a time.
type recountScratch struct {
	items    []ocPair
	la, lb   []uint64
	mla, mlb []uint64 // merged pairs (see merge)
	tails    []uint64
	pos      [2][]uint32 // per polarity, each row's place among the tails (see backtrack)
	piles    []uint32    // rows per pile (see classFloor.build)
	runs     []ocPair    // pairLog's merges
	aFrom    []int       // fitRun's places in the runs of A
	// countedRemovals': each distinct pair's rank of lb (by id), the order
	// a chain takes them in, the merges of their orders, the heaviest
	// chain ending at each, and the prefix-maximum tree.
	ranks, order, ids []uint32
	dp                []int
	tree              prefixMaxTree
}

// recount recomputes the dirty classes with scratch w; the totals are
// exact afterwards. It writes o's state and w only, so that OCs can be
// recounted at once, each with its own scratch.
func (o *ocCheck) recount(e *Engine, w *recountScratch) {
	start := time.Now()
	for p := range 2 {
		if o.floored[p] && o.del > 0 {
			o.lostShare[p] = (o.lostShare[p] + float64(o.lost(p))/float64(o.del)) / 2
		}
	}
	wasFloored := o.floored
	o.floored = [2]bool{}
	// Per polarity, the rows of the classes recounted that would cost one
	// each were they to leave (of a class with a floor, those of its kept
	// pairs beyond their spares), and the rows of those classes.
	var costly, read [2]int
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
			ra, rd = o.recountSorted(e, w, c)
			if size < e.sortedMin/4 {
				o.big[c] = nil
			}
		default:
			ra, rd = o.recountSmall(e, w, c)
		}
		for p := range 2 {
			read[p] += size
			if sc := o.big[c]; sc != nil && sc.cnt == nil && sc.floor[p].ok {
				costly[p] += sc.floor[p].costly
			} else {
				costly[p] += size
			}
		}
		o.totAsc += ra - int(o.remAsc[c])
		o.totDesc += rd - int(o.remDesc[c])
		o.remAsc[c], o.remDesc[c] = uint32(ra), uint32(rd)
	}
	o.dirty = o.dirty[:0]
	ns := float64(time.Since(start).Nanoseconds()) - recountChangeNs*float64(o.ins+o.del)
	o.rowNs = max(ns, 1) / float64(max(o.lastRows, 1))
	o.ins, o.del, o.mustRecount = 0, 0, false
	o.acc, o.fitCuts = [2]int{}, nil
	o.spared = [2]int{}
	for p := range 2 {
		switch {
		case !o.floored[p]:
			o.lostShare[p] = 1
		case !wasFloored[p] && read[p] > 0:
			// No floor test measured the share yet: until one does, it is
			// the share of the rows the floors would not spare. Left at 1,
			// an OC between the cuts looked due at every check after its
			// first floored recount (and the early recounts it drew filled
			// those checks) until a few recounts had averaged the measured
			// share in.
			o.lostShare[p] = float64(costly[p]) / float64(read[p])
		}
	}
}

func (o *ocCheck) pair(e *Engine, seq uint32) ocPair {
	slot := seq & e.mask
	ca, cb := e.cols[o.a], e.cols[o.b]
	return ocPair{LA: ca.OrderOf(ca.Codes[slot]), LB: cb.OrderOf(cb.Codes[slot])}
}

func (o *ocCheck) recountSmall(e *Engine, w *recountScratch, c uint32) (asc, desc int) {
	items := w.items[:0]
	for _, s := range o.x.members[c].live() {
		items = append(items, o.pair(e, s))
	}
	sortPairs(items)
	w.items = items
	la, lb := w.la[:0], w.lb[:0]
	for _, it := range items {
		la = append(la, it.LA)
		lb = append(lb, it.LB)
	}
	w.la, w.lb = la, lb
	return o.lnds(w, la, lb, false)
}

// sortPairs sorts pairs: a quicksort with a median-of-three pivot, and
// insertion sort for short ranges (a specialised sort: slices.SortFunc
// calling a comparison was half of a recount's time).
func sortPairs(ps []ocPair) {
	for len(ps) > 16 {
		m := len(ps) / 2
		last := len(ps) - 1
		if pairBelow(ps[m], ps[0]) {
			ps[m], ps[0] = ps[0], ps[m]
		}
		if pairBelow(ps[last], ps[0]) {
			ps[last], ps[0] = ps[0], ps[last]
		}
		if pairBelow(ps[last], ps[m]) {
			ps[last], ps[m] = ps[m], ps[last]
		}
		pivot := ps[m]
		i, j := 0, last
		for i <= j {
			for pairBelow(ps[i], pivot) {
				i++
			}
			for pairBelow(pivot, ps[j]) {
				j--
			}
			if i <= j {
				ps[i], ps[j] = ps[j], ps[i]
				i++
				j--
			}
		}
		// Recurse into the smaller side, loop on the larger.
		if j+1 < len(ps)-i {
			sortPairs(ps[:j+1])
			ps = ps[i:]
		} else {
			sortPairs(ps[i:])
			ps = ps[:j+1]
		}
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && pairBelow(ps[j], ps[j-1]); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// recountSorted brings the sorted pairs of class c up to date (building
// them from the member list the first time) and counts on them.
func (o *ocCheck) recountSorted(e *Engine, w *recountScratch, c uint32) (asc, desc int) {
	sc := o.big[c]
	if sc == nil {
		sc = &sortedClass{}
		o.big[c] = sc
		sc.pending = append(sc.pending, o.x.members[c].live()...)
	}
	sc.fresh = false
	size := int(o.x.size[c])
	rec := len(o.fitCuts) > 0
	if sc.cnt != nil {
		o.fold(e, sc)
		sc.cnt.settle(w)
		if countedForm(size, sc.cnt.ids.Len(), e.tune.countedRatio) {
			return o.countedRemovals(w, sc, c, size, rec)
		}
		sc.toSorted()
	}
	o.mergeBacklog(e, w, sc)
	if e.tune.countedRatio > 0 {
		if d := distinctPairs(sc.la, sc.lb); countedForm(size, d, e.tune.countedRatio) {
			sc.toCounted(d)
			return o.countedRemovals(w, sc, c, size, rec)
		}
	}
	asc, desc = o.lnds(w, sc.la, sc.lb, rec)
	for p, r := range [2]int{asc, desc} {
		fl := &sc.floor[p]
		fl.ok = rec && o.tracks(p) && o.wantsFloor(p, c, r) &&
			fl.build(sc.la, sc.lb, w.pos[p], len(sc.la)-r, e.tune.floorMax, &w.piles)
		if !fl.ok {
			fl.ps = nil
		}
		o.floored[p] = o.floored[p] || fl.ok
		f := &sc.fit[p]
		f.a.reset()
		f.ok = rec && o.tracks(p) && o.wantsFit(p, c, r, fl.ok)
		if f.ok {
			f.set = backtrack(f.set, sc.la, sc.lb, w.pos[p], len(sc.la)-r, p == 1)
		}
	}
	return asc, desc
}

// mergeBacklog brings sorted class sc's pairs up to date: its pending
// rows and presorted pairs merged in, the pairs of its rows that left
// out.
func (o *ocCheck) mergeBacklog(e *Engine, w *recountScratch, sc *sortedClass) {
	if len(sc.pending) > 0 || len(sc.adds.ps) > 0 || len(sc.dead.ps) > 0 {
		var items []ocPair
		if len(sc.adds.ps) == 0 {
			items = w.items[:0]
			for _, s := range sc.pending {
				if e.alive(s) {
					items = append(items, o.pair(e, s))
				}
			}
			sortPairs(items)
			w.items = items
		} else {
			for _, s := range sc.pending {
				if e.alive(s) {
					sc.adds.ps = append(sc.adds.ps, o.pair(e, s))
				}
			}
			items = sc.adds.sorted(&w.runs)
		}
		if len(sc.gone) > 0 {
			sortPairs(sc.gone)
			items = subtractPairs(items, sc.gone)
		}
		w.merge(sc, items, sc.dead.sorted(&w.runs), e.tune.scratchSlack)
		sc.pending, sc.gone = sc.pending[:0], sc.gone[:0]
		sc.adds.reset()
		sc.dead.reset()
	}
	sc.merged, sc.presorted = e.to, e.to
}

// merge rebuilds sc's pairs without the pairs of dead and with
// those of items (both sorted): each is placed by galloping from the
// previous one's place, and the pairs in between are copied as a run.
func (w *recountScratch) merge(sc *sortedClass, items, dead []ocPair, slack int) {
	n := len(sc.la) - len(dead) + len(items)
	la, lb := slices.Grow(w.mla[:0], n), slices.Grow(w.mlb[:0], n)
	from, i, d := 0, 0, 0
	for i < len(items) || d < len(dead) {
		gone := d < len(dead) && (i == len(items) || comparePairs(dead[d], items[i]) <= 0)
		p := ocPair{}
		if gone {
			p = dead[d]
		} else {
			p = items[i]
		}
		j := gallopPairs(sc.la, sc.lb, from, p)
		la, lb = append(la, sc.la[from:j]...), append(lb, sc.lb[from:j]...)
		from = j
		if gone {
			if j == len(sc.la) || sc.la[j] != p.LA || sc.lb[j] != p.LB {
				panic("discovery: internal error: a row that left an OC class is not in its sorted pairs")
			}
			from++
			d++
		} else {
			la, lb = append(la, p.LA), append(lb, p.LB)
			i++
		}
	}
	la, lb = append(la, sc.la[from:]...), append(lb, sc.lb[from:]...)
	if cap(la) <= 2*len(la)+slack {
		// The merged pairs become the class's, its old arrays the scratch.
		w.mla, w.mlb = sc.la[:0], sc.lb[:0]
		sc.la, sc.lb = la, lb
		return
	}
	// Scratch much larger than the class: the class keeps its own arrays
	// rather than a larger class's memory.
	sc.la, sc.lb = append(sc.la[:0], la...), append(sc.lb[:0], lb...)
	w.mla, w.mlb = la[:0], lb[:0]
}

// gallopPairs returns the first index from from on whose pair is not
// below p, galloping from from and then searching the last step.
func gallopPairs(la, lb []uint64, from int, p ocPair) int {
	below := func(j int) bool { return la[j] < p.LA || la[j] == p.LA && lb[j] < p.LB }
	if from == len(la) || !below(from) {
		return from
	}
	lo, hi := from, from+1 // below(lo); the answer is in (lo, hi]
	for step := 1; hi < len(la) && below(hi); step *= 2 {
		lo, hi = hi, hi+step
	}
	hi = min(hi, len(la))
	for lo+1 < hi {
		mid := int(uint(lo+hi) >> 1)
		if below(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// lnds returns the removals of one class ordered by (la, lb): the rows
// outside a longest non-decreasing subsequence of lb (asc), and, reading
// each run of equal la backwards, of a longest non-increasing one (desc).
// With rec it records in w.pos[p], for each polarity p counted, each
// row's place among the tails when pushed (its pile), from which
// backtrack finds one largest consistent subset and classFloor.build the
// piles.
//
// Within a run of equal la the values pushed only grow (lb ascending, or
// its complement read backwards), so each one's place among the tails is
// after the previous one's: it is searched galloping from there, and a
// long run (a column with few values) costs a step or two a row instead of
// a binary search of all the tails.
func (o *ocCheck) lnds(w *recountScratch, la, lb []uint64, rec bool) (asc, desc int) {
	if o.asc {
		pos := w.places(0, rec, len(la))
		t := w.tails[:0]
		for i := 0; i < len(la); {
			at := -1 // place of the run's previous value; -1: none yet
			for ; i < len(la); i++ {
				if at >= 0 && la[i] != la[i-1] {
					break
				}
				t, at = pushTailFrom(t, lb[i], at+1)
				if pos != nil {
					pos[i] = uint32(at)
				}
			}
		}
		w.tails = t
		asc = len(lb) - len(t)
	}
	if o.desc {
		pos := w.places(1, rec, len(la))
		t := w.tails[:0]
		for i := 0; i < len(la); {
			j := i + 1
			for j < len(la) && la[j] == la[i] {
				j++
			}
			at := -1
			for k := j - 1; k >= i; k-- {
				t, at = pushTailFrom(t, ^lb[k], at+1)
				if pos != nil {
					pos[k] = uint32(at)
				}
			}
			i = j
		}
		w.tails = t
		desc = len(lb) - len(t)
	}
	return asc, desc
}

// pushTailFrom is one patience-sorting step: x replaces the first tail
// above it, or extends the tails, knowing no tail before from is above x.
// It returns the tails and x's place.
func pushTailFrom(t []uint64, x uint64, from int) ([]uint64, int) {
	n := len(t)
	if n == 0 || t[n-1] <= x {
		return append(t, x), n
	}
	// t[n-1] > x: the first tail above x is in [from, n-1]. After a
	// run's first value, gallop to bracket it; the first searches all.
	lo, hi := from, n-1
	if from > 0 {
		hi = from
		for step := 1; t[hi] <= x; step *= 2 {
			lo = hi + 1
			hi = min(hi+step, n-1)
		}
	}
	// Branch-free (the steps of a search of many tails are not
	// predictable): the first tail above x is in [lo, lo+k-1], and each
	// step halves k.
	for k := hi - lo + 1; k > 1; {
		half := k >> 1
		lo += half & -boolIndex(t[lo+half-1] <= x)
		k -= half
	}
	t[lo] = x
	return t, lo
}
