package incremental

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
// of two rows or more and the spare of each (classFloor.build); a merged
// row that leaves is looked up there as it leaves (ocCheck.touch,
// classFloor.take), which counts the rows of its pair that left so far,
// and costs one once they pass the spare. Rows that entered after the
// recount and left again cost nothing; rows that left classes that keep
// no floor cost one each. Summed over the classes, the OC's count is at
// least tot - lost(p) = tot - (del - spared[p]), spared[p] the rows that
// left and cost nothing.

// classFloor is a sorted class's pile bound for one polarity, over its
// pairs as of its last recount: when ok, ps are the distinct pairs with a
// row in a pile of two rows or more, in order, each with its spare.
type classFloor struct {
	ok bool
	ps []floorPair
	// costly is the rows of ps beyond their spares: those that cost one
	// each when they leave.
	costly int
}

type floorPair struct {
	p     ocPair
	spare uint32 // the pair's rows in piles of one row
	left  uint32 // the pair's rows that left since the recount
}

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
	f.ps, f.costly = f.ps[:0], 0
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
			f.ps = append(f.ps, floorPair{p: ocPair{LA: la[i], LB: lb[i]}, spare: uint32(j - i - shared)})
			f.costly += shared
		}
		i = j
	}
	return true
}

// take counts a row of pair p, one of the class's rows at its recount,
// leaving it, and reports whether the row leaves the pile bound where it
// was: its pair has no row in a pile of two or more, or no more of its
// rows left than it has in piles of one.
func (f *classFloor) take(p ocPair) bool {
	i, found := slices.BinarySearchFunc(f.ps, p, func(fp floorPair, p ocPair) int { return comparePairs(fp.p, p) })
	if !found {
		return true
	}
	f.ps[i].left++
	return f.ps[i].left <= f.ps[i].spare
}

// lost is the bound on how much o's count of polarity p may have fallen
// since its last recount: the rows that left, but for those spared.
func (o *ocCheck) lost(p int) int { return o.del - o.spared[p] }

// wantsFloor says whether o's recount records the floor of polarity p in
// sorted class c, whose count is now r: when the OC's count (estimated
// with the classes recounted so far, as wantsFit does) is above some cut
// by at most floorHorizon checks' rows leaving, so that its lower bound
// may decide a verdict before long.
func (o *ocCheck) wantsFloor(p int, c uint32, r int) bool {
	est := o.estimate(p, c, r)
	for _, t := range o.fitCuts {
		if t < est && est-t <= floorHorizon*o.fitLeft {
			return true
		}
	}
	return false
}
