package discovery

import "slices"

// The pile bound: a tighter lower bound on an OC's removals between
// recounts than one per row that left.
//
// Per class and polarity, the rows are partially ordered: x ≤ y when x.la
// ≤ y.la and x.lb ≤ y.lb (desc: on (la, ^lb)); a consistent subset is a
// chain, and r = n - L, L the longest chain. The patience sorting of lnds
// puts each row on a pile (its place among the tails, pos): a pile's rows
// come in strictly growing la and strictly falling key, so each pile is an
// antichain, and there are L piles. A chain meets an antichain in at most
// one row, so for any set of rows T and any partition of the class's rows
// into antichains P_1..P_L,
//
//	r(T) ≥ Σ_i max(|P_i ∩ T| - 1, 0)     (every pile beyond its first row)
//
// with equality for T the class at its recount (Σ (|P_i| - 1) = n - L).
// Rows that enter later are in no pile and only add to r(T); a row that
// leaves lowers the sum by one if its pile had two rows or more, and by
// nothing if its pile had one. Rows with equal pairs are interchangeable
// (they compare alike with every row), so the rows that left with pair q
// may be taken to be the ones of q's rows in piles of one row first: m
// rows of q that left lower the bound by at most max(m - spare(q), 0),
// spare(q) the rows of q in piles of one row. Pairs with no row in a pile
// of two or more cost nothing. Summed over the class,
//
//	r' ≥ r - Σ_q max(m_q - spare(q), 0).
//
// At most 2r rows are in piles of two rows or more (each such pile of s
// rows adds s - 1 ≥ s/2 to r), so a holding OC, whose r is a small share
// of the class, keeps few pairs, and most rows that leave cost nothing: the
// lower bound falls by about the share of noisy rows among those leaving
// instead of by every one of them.
//
// A sorted class records, at its recount, the pairs with a row in a pile
// of two rows or more and the spare of each (classFloor.build); a check
// that may be spared a recount by it computes, from the pairs of the
// merged rows that left (sortedClass.dead), how many of the rows that left
// may have lowered the count (incOC.floor). Rows that entered after the
// recount and left again cost nothing; rows that left classes that keep
// no floor cost one each. Summed over the classes, the OC's count is at
// least tot - lost(p) = tot - (del - spared[p]).

// classFloor is a sorted class's pile bound for one polarity, over its
// pairs as of its last recount: when ok, ps are the distinct pairs with a
// row in a pile of two rows or more, in order, each with its spare.
type classFloor struct {
	ok bool
	ps []floorPair
}

type floorPair struct {
	p     ocPair
	spare uint32 // the pair's rows in piles of one row
}

// defaultFloorMax is Incremental.floorMax's value: the pairs a sorted
// class keeps in its floor per polarity at most (24 bytes each); a class
// with more keeps none, and every row that leaves it costs one.
const defaultFloorMax = 1 << 16

// floorHorizon is how many checks' worth of rows leaving (as many as at
// the check that scheduled the recount) a count may be above a cut for
// its recount to record floors: a count farther above every cut is not
// forced by its lower bound before the next recount is likely anyway (a
// heuristic: any choice is sound).
const floorHorizon = 16

// build records the floor of a class of rows sorted by (la, lb), which
// lnds put on piles places (pos[i]: row i's pile), with count (reused) as
// scratch. It reports false, keeping nothing, when more than max pairs
// would be kept.
func (f *classFloor) build(la, lb []uint64, pos []uint32, piles, max int, count *[]uint32) bool {
	f.ps = f.ps[:0]
	cnt := slices.Grow((*count)[:0], piles)[:piles]
	clear(cnt)
	for _, q := range pos {
		cnt[q]++
	}
	*count = cnt
	for i := 0; i < len(la); {
		j, shared := i, 0
		for ; j < len(la) && la[j] == la[i] && lb[j] == lb[i]; j++ {
			shared += boolIndex(cnt[pos[j]] > 1)
		}
		if shared > 0 {
			if len(f.ps) == max {
				f.ps = f.ps[:0]
				return false
			}
			f.ps = append(f.ps, floorPair{p: ocPair{la: la[i], lb: lb[i]}, spare: uint32(j - i - shared)})
		}
		i = j
	}
	return true
}

// cost returns how much the rows that left with pairs dead (sorted; rows
// of the class at its recount) may have lowered its count, by the pile
// bound.
func (f *classFloor) cost(dead []ocPair) int {
	cost := 0
	if len(dead) < len(f.ps) {
		// Few rows left: look each distinct pair up in the floor.
		from := 0
		for i := 0; i < len(dead); {
			j := i + 1
			for j < len(dead) && dead[j] == dead[i] {
				j++
			}
			k, found := slices.BinarySearchFunc(f.ps[from:], dead[i], func(fp floorPair, p ocPair) int { return comparePairs(fp.p, p) })
			from += k
			if found {
				cost += max(j-i-int(f.ps[from].spare), 0)
			}
			i = j
		}
		return cost
	}
	// Many rows left: look each of the floor's pairs up among them.
	from := 0
	for _, fp := range f.ps {
		k, _ := slices.BinarySearchFunc(dead[from:], fp.p, comparePairs)
		from += k
		m := 0
		for from < len(dead) && dead[from] == fp.p {
			m++
			from++
		}
		cost += max(m-int(fp.spare), 0)
	}
	return cost
}

// lost is the bound on how much o's count of polarity p may have fallen
// since its last recount: the rows that left, but for those the last
// floor test found spared.
func (o *incOC) lost(p int) int { return o.del - o.spared[p] }

// floor finds, per polarity, the rows that left o's sorted classes with a
// floor since its last recount without lowering their pile bound, into
// o.spared (scratch w). Labels must be settled; it writes o's state and w
// only (part of a unit of phaseFit).
func (o *incOC) floor(w *recountScratch) {
	var spared [2]int
	for _, c := range o.dirty {
		if int(c) >= len(o.big) || o.big[c] == nil {
			continue
		}
		sc := o.big[c]
		if sc.left == 0 || !sc.floor[0].ok && !sc.floor[1].ok {
			continue
		}
		dead := sc.dead.sorted(&w.runs)
		for p := range 2 {
			if sc.floor[p].ok {
				spared[p] += int(sc.left) - sc.floor[p].cost(dead)
			}
		}
	}
	o.spared = spared
	if o.del > 0 {
		for p := range 2 {
			o.lostShare[p] = (o.lostShare[p] + float64(o.lost(p))/float64(o.del)) / 2
		}
	}
}

// wantsFloor says whether o's recount records the floor of polarity p in
// sorted class c, whose count is now r: when the OC's count (estimated
// with the classes recounted so far, as wantsFit does) is above some cut
// by at most floorHorizon checks' rows leaving, so that its lower bound
// may decide a verdict before long.
func (o *incOC) wantsFloor(p int, c uint32, r int) bool {
	est := o.estimate(p, c, r)
	for _, t := range o.fitCuts {
		if t < est && est-t <= floorHorizon*o.fitLeft {
			return true
		}
	}
	return false
}
