package incremental

import (
	"cmp"
	"slices"

	"github.com/odwatch/odwatch/discovery/incremental/internal/pairs"
)

// Counted classes: a large OC class whose rows hold few distinct (A, B)
// pairs is kept as a count per distinct pair instead of one sorted pair
// per row (sortedClass.cnt).
//
// Rows with equal pairs are interchangeable, so a class's removals are a
// function of its distinct pairs and their counts. Sorted by (la, lb), a
// longest non-decreasing subsequence of lb takes, of each distinct pair,
// all its rows or none (equal lb values never break one), so the class
// keeps L = the largest total count of a chain of distinct pairs whose lb
// does not decrease along the order: a weighted longest non-decreasing
// subsequence over D pairs, O(D log D) with a prefix-maximum tree over the
// ranks of lb (desc: over the ranks reversed, each run of equal la read
// backwards, as lnds reads it). Keeping the counts costs a lookup per row
// that enters or leaves, and a recount costs about D, not the class's
// rows: a class of 100k rows over 2,000 pairs (a score and its grade, a
// zip and its city) is recounted at every check for less than a sorted
// class's merge.
//
// A counted class records no floor (see floor.go): its rows
// that leave count as lost. Its fit bound is coarser than a sorted
// class's: a recount records the distinct pairs of one heaviest chain,
// and a row that enters is accepted when its pair is one of them (a twin
// of a chain row, consistent with the chain as that row is); the others
// count as misfits. Where the bounds do not decide, the class is
// recounted, which is cheap.
//
// Which form a class takes is decided at each of its recounts from what it
// holds then (countedForm): counted when its rows are at least
// countedRatio times its distinct pairs. The decision depends on the rows
// alone, never on the class's history, so an OC that starts over (see
// startOver) takes the forms a new one would.

// countedForm reports whether a class of rows rows and distinct distinct
// pairs is kept counted, with ratio countedRatio (0: never).
func countedForm(rows, distinct, ratio int) bool {
	return ratio > 0 && distinct*ratio <= rows
}

// pairCounts is a counted class's distinct pairs. Each has an id (its
// index in pairs, n and chain) while it has rows; an id whose count fell
// to zero is dropped from the orders, and freed, at the next recount
// (settle), so that an id in the orders always stands for one pair.
type pairCounts struct {
	ids   pairs.Map // pair → id, of the pairs with rows
	pairs []ocPair  // by id
	n     []uint32  // rows by id
	// chain is, by id, whether the pair is in the chain the last recount
	// recorded: bit p for polarity p.
	chain []uint8
	// byPair and byLB are the ids in (la, lb) order and in lb order, as
	// of the last recount; added are the ids made since; gone the ids
	// whose count fell to zero since (freed at the next recount), free the
	// ids to reuse.
	byPair, byLB []uint32
	added, gone  []uint32
	free         []uint32
}

// add counts a row of pair p and returns its id.
func (pc *pairCounts) add(p ocPair) uint32 {
	id, ok := pc.ids.Get(p, pc.pairs)
	if !ok {
		if k := len(pc.free); k > 0 {
			id, pc.free = pc.free[k-1], pc.free[:k-1]
			pc.pairs[id], pc.chain[id] = p, 0
		} else {
			id = uint32(len(pc.pairs))
			pc.pairs, pc.n, pc.chain = append(pc.pairs, p), append(pc.n, 0), append(pc.chain, 0)
		}
		pc.ids.Put(id, pc.pairs)
		pc.added = append(pc.added, id)
	}
	pc.n[id]++
	return id
}

// remove takes a row of pair p out.
func (pc *pairCounts) remove(p ocPair) {
	id, ok := pc.ids.Get(p, pc.pairs)
	if !ok {
		panic("discovery: internal error: a row that left an OC class is not in its counts")
	}
	if pc.n[id]--; pc.n[id] == 0 {
		pc.ids.Del(id, pc.pairs)
		pc.gone = append(pc.gone, id)
	}
}

// settle brings byPair and byLB up to date: the ids added since the last
// settle merged in, those without rows dropped and freed.
func (pc *pairCounts) settle(w *recountScratch) {
	if len(pc.added) == 0 && len(pc.gone) == 0 {
		return
	}
	byPair := func(x, y uint32) int { return comparePairs(pc.pairs[x], pc.pairs[y]) }
	byLB := func(x, y uint32) int { return cmp.Compare(pc.pairs[x].LB, pc.pairs[y].LB) }
	live := func(id uint32) bool { return pc.n[id] > 0 }
	added := slices.DeleteFunc(pc.added, func(id uint32) bool { return !live(id) })
	slices.SortFunc(added, byPair)
	pc.byPair = pairs.MergeIDs(pc.byPair, added, byPair, live, &w.ids)
	slices.SortFunc(added, byLB)
	pc.byLB = pairs.MergeIDs(pc.byLB, added, byLB, live, &w.ids)
	pc.free = append(pc.free, pc.gone...)
	pc.added, pc.gone = pc.added[:0], pc.gone[:0]
}

// fold counts the pending rows of counted class sc that are still in the
// window, and accepts, per polarity whose chain sc records (fit.ok), the
// rows whose pair is one of the chain's: it adds them to o.acc and returns
// them. Labels must be settled.
func (o *ocCheck) fold(e *Engine, sc *sortedClass) (acc [2]int) {
	pc := sc.cnt
	for _, s := range sc.pending {
		if !e.alive(s) {
			continue
		}
		id := pc.add(o.pair(e, s))
		for q := range 2 {
			if sc.fit[q].ok && pc.chain[id]>>q&1 == 1 {
				acc[q]++
			}
		}
	}
	sc.pending = sc.pending[:0]
	sc.merged, sc.presorted = e.to, e.to
	o.acc[0] += acc[0]
	o.acc[1] += acc[1]
	return acc
}

// toCounted turns sorted class sc (merged: its pairs are all its rows),
// of d distinct pairs, into a counted one.
func (sc *sortedClass) toCounted(d int) {
	pc := &pairCounts{pairs: make([]ocPair, 0, d), n: make([]uint32, 0, d), chain: make([]uint8, d)}
	for i := range sc.la {
		p := ocPair{LA: sc.la[i], LB: sc.lb[i]}
		if i == 0 || p != pc.pairs[len(pc.pairs)-1] {
			pc.pairs, pc.n = append(pc.pairs, p), append(pc.n, 0)
			pc.ids.Put(uint32(len(pc.pairs)-1), pc.pairs)
		}
		pc.n[len(pc.n)-1]++
	}
	pc.byPair = make([]uint32, d)
	for i := range pc.byPair {
		pc.byPair[i] = uint32(i)
	}
	pc.byLB = slices.Clone(pc.byPair)
	slices.SortStableFunc(pc.byLB, func(x, y uint32) int { return cmp.Compare(pc.pairs[x].LB, pc.pairs[y].LB) })
	sc.cnt = pc
	sc.la, sc.lb = nil, nil
	sc.adds, sc.dead, sc.gone = pairLog{}, pairLog{}, nil
	sc.fit, sc.floor = [2]classFit{}, [2]classFloor{}
}

// toSorted turns counted class sc (folded and settled) into a sorted one
// whose pairs are its rows.
func (sc *sortedClass) toSorted() {
	pc := sc.cnt
	rows := 0
	for _, id := range pc.byPair {
		rows += int(pc.n[id])
	}
	la, lb := make([]uint64, 0, rows), make([]uint64, 0, rows)
	for _, id := range pc.byPair {
		p := pc.pairs[id]
		for range pc.n[id] {
			la, lb = append(la, p.LA), append(lb, p.LB)
		}
	}
	sc.la, sc.lb, sc.cnt = la, lb, nil
	sc.fit = [2]classFit{}
}

// distinctPairs is the number of distinct pairs in la, lb (sorted).
func distinctPairs(la, lb []uint64) int {
	d := 0
	for i := range la {
		if i == 0 || la[i] != la[i-1] || lb[i] != lb[i-1] {
			d++
		}
	}
	return d
}

// countedRemovals returns the removals of counted class c, sc (folded
// and settled), per polarity o counts, with w's scratch. With rec it
// records, per polarity that wantsFit, the pairs of one heaviest chain
// (pairCounts.chain, sc.fit[p].ok), against which fold accepts the rows
// that enter until the next recount.
func (o *ocCheck) countedRemovals(w *recountScratch, sc *sortedClass, c uint32, rows int, rec bool) (asc, desc int) {
	pc := sc.cnt
	// Ranks of lb, by id, from byLB.
	w.ranks = slices.Grow(w.ranks[:0], len(pc.pairs))[:len(pc.pairs)]
	ranks := 0
	for i, id := range pc.byLB {
		if i > 0 && pc.pairs[id].LB != pc.pairs[pc.byLB[i-1]].LB {
			ranks++
		}
		w.ranks[id] = uint32(ranks)
	}
	ranks++
	clear(pc.chain)
	var r [2]int
	for p := range 2 {
		sc.fit[p].ok = false
		if !o.tracks(p) {
			continue
		}
		order := w.chainOrder(pc, p == 1)
		r[p] = rows - w.heaviest(pc, order, ranks, p == 1)
		if rec && o.wantsFit(p, c, r[p], false) {
			sc.fit[p].ok = true
			w.markChain(pc, order, ranks, p)
		}
	}
	return r[0], r[1]
}

// chainOrder returns, in w's scratch, pc's ids in the order a chain takes
// them: in (la, lb) order (asc), or each run of equal la backwards (desc).
func (w *recountScratch) chainOrder(pc *pairCounts, desc bool) []uint32 {
	if !desc {
		return pc.byPair
	}
	keys := pc.byPair
	order := w.order[:0]
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && pc.pairs[keys[j]].LA == pc.pairs[keys[i]].LA {
			j++
		}
		for k := j - 1; k >= i; k-- {
			order = append(order, keys[k])
		}
		i = j
	}
	w.order = order
	return order
}

// rankOf is the rank of id's lb as a chain of polarity desc compares
// them (reversed for desc), among ranks distinct ones.
func (w *recountScratch) rankOf(id uint32, ranks int, desc bool) int {
	if desc {
		return ranks - 1 - int(w.ranks[id])
	}
	return int(w.ranks[id])
}

// heaviest returns the total count of a heaviest chain of pc's pairs
// taken in order, and leaves in w.dp the heaviest chain ending at each.
func (w *recountScratch) heaviest(pc *pairCounts, order []uint32, ranks int, desc bool) int {
	tree := w.prefixMax(ranks)
	w.dp = slices.Grow(w.dp[:0], len(order))[:len(order)]
	for k, id := range order {
		w.dp[k] = tree.raise(w.rankOf(id, ranks, desc), int(pc.n[id]))
	}
	return tree.best
}

// markChain marks in pc.chain, bit p, the pairs of one heaviest chain (w.dp
// as heaviest left it): from a heaviest end, each step back takes the
// nearest earlier pair whose chain weighs the rest and whose rank is at
// most the last one taken.
func (w *recountScratch) markChain(pc *pairCounts, order []uint32, ranks, p int) {
	end := -1
	for k, v := range w.dp {
		if end < 0 || v > w.dp[end] {
			end = k
		}
	}
	if end < 0 {
		return
	}
	need, top := w.dp[end], ranks
	for k := end; k >= 0 && need > 0; k-- {
		id := order[k]
		if r := w.rankOf(id, ranks, p == 1); w.dp[k] == need && r <= top {
			pc.chain[id] |= 1 << p
			need -= int(pc.n[id])
			top = r
		}
	}
}

// prefixMaxTree is a Fenwick tree of prefix maxima over ranks 0..n-1: the
// heaviest chain ending at a rank at most r, and the heaviest of all.
type prefixMaxTree struct {
	t    []int // 1-based
	best int
}

// prefixMax returns w's tree, emptied, for n ranks.
func (w *recountScratch) prefixMax(n int) *prefixMaxTree {
	w.tree.t = slices.Grow(w.tree.t[:0], n+1)[:n+1]
	clear(w.tree.t)
	w.tree.best = 0
	return &w.tree
}

// raise adds a pair of rank r and weight c after the pairs raised before
// it and returns the heaviest chain ending at it: c plus the heaviest
// ending at a rank at most r.
func (t *prefixMaxTree) raise(r, c int) int {
	v := 0
	for i := r + 1; i > 0; i -= i & -i {
		v = max(v, t.t[i])
	}
	v += c
	t.best = max(t.best, v)
	for i := r + 1; i < len(t.t); i += i & -i {
		t.t[i] = max(t.t[i], v)
	}
	return v
}
