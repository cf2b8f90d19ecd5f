package incremental

import (
	"slices"

	"github.com/odwatch/odwatch/discovery/incremental/internal/bitset"
)

// The fit bound: a tighter upper bound on an OC's removals between
// recounts than one per row that entered.
//
// Per class, asc polarity, a set T of the class's rows is consistent iff
// no x, y in T have x.la < y.la and x.lb > y.lb (desc: x.lb < y.lb; desc
// is asc on (la, ^lb)). lnds computes L, the size of a largest consistent
// subset, and r = n - L. Let S be one largest consistent subset at the
// class's last recount, and let rows D leave and rows I enter after it.
// For any A ⊆ I with S ∪ A consistent, T = (S ∪ A) \ D is consistent (a
// subset of a consistent set is), and it has at least L - |S ∩ D| + |A \
// D| rows, so the new count is
//
//	r' ≤ n' - |T| ≤ (n - |D ∩ old rows| + |I \ D|) - (L - |S ∩ D| + |A \ D|)
//	   ≤ r + |I \ D| - |A \ D| ≤ r + |I| - |A|,
//
// as S ∩ D ⊆ D ∩ old rows. So the upper bound grows by the rows that
// entered and were not accepted into A (the misfits), not by every row
// that entered; the lower bound stays r - |D|. Summed over the classes,
// an OC's count lies in [tot - del, tot + ins - acc], acc the rows
// accepted into the classes' A since the OC's last recount.
//
// A sorted class records S at its recount (lnds, backtrack) as a bitset
// over its sorted pairs, which do not change until its next recount; A
// keeps the accepted rows' pairs (in sorted runs), and a row is accepted
// when it is consistent with S, A and the rows accepted before it
// (ocCheck.fit, fitRun). A row that entered and was not tested yet counts
// as a misfit: the bound holds whenever the tests run.
// Pairs of rows that left stay in S and A: that only constrains more.

// backtrack returns, in set (reused), the bitset over the rows 0..n-1 of a
// class sorted by (la, lb) of one largest consistent subset, of l rows:
// pos[i] is row i's place among the tails when lnds pushed it (desc: its
// complement, each run of equal la read backwards). The rows are taken in
// exactly the reverse of the order lnds pushed them: the first row met
// with place need is the tail that was at need when the row taken last
// (at need+1) was pushed, so its value is at most that row's, and the rows
// taken form a non-decreasing sequence in push order, one per place.
func backtrack(set []uint64, la, lb []uint64, pos []uint32, l int, desc bool) []uint64 {
	n := len(la)
	set = bitset.Resize(set, n, l == n)
	if l == n {
		return set // every row: nothing to remove
	}
	need, cur := l-1, ^uint64(0)
	take := func(i int, v uint64) {
		if int(pos[i]) == need && v <= cur {
			set[i>>6] |= 1 << (i & 63)
			cur = v
			need--
		}
	}
	if !desc {
		for i := n - 1; i >= 0 && need >= 0; i-- {
			take(i, lb[i])
		}
		return set
	}
	for j := n; j > 0 && need >= 0; {
		i := j - 1
		for i > 0 && la[i-1] == la[j-1] {
			i--
		}
		for k := i; k < j; k++ {
			take(k, ^lb[k])
		}
		j = i
	}
	return set
}

// classFit is a sorted class's fit state for one polarity: set is S (see
// above) when ok, over the class's sorted pairs; a is A, the pairs
// accepted since the class's last recount, in sorted runs, each
// consistent with S and with the runs before it.
type classFit struct {
	ok  bool
	set []uint64
	a   pairLog
}

// fitRateFloor is the least share of the rows entering (leaving) per
// check that the scheduling heuristics (slide.skippable) take an OC's
// misfits (lost rows) to grow by, however many its last fit (floor) tests
// accepted (spared). Near the stream's default cuts (eps 0.01, cuts about
// 1% of the window apart) a larger floor makes the OCs between the cuts
// look due at every check, and their early recounts fill the checks.
const fitRateFloor = 1.0 / 256

// wantsFit says whether o's recount records S in sorted class c for
// polarity p, whose count is now r: when the OC's count (estimated with
// the classes recounted so far) is at or below some cut, so that its
// upper bound may decide a verdict, and, unless the class records its
// floor, at least a check's rows leaving (as many as at the check that
// scheduled the recount) cannot take it across a cut below, so that its
// lower bound does not force the next check's recount anyway. A
// heuristic: any choice is sound.
func (o *ocCheck) wantsFit(p int, c uint32, r int, floored bool) bool {
	est := o.estimate(p, c, r)
	below := false
	for _, t := range o.fitCuts {
		if t >= est {
			below = true
		} else if !floored && est-o.fitLeft <= t {
			return false
		}
	}
	return below
}

// estimate is o's count of polarity p with class c's count r and the
// other classes' last counts.
func (o *ocCheck) estimate(p int, c uint32, r int) int {
	if p == 1 {
		return o.totDesc - int(o.remDesc[c]) + r
	}
	return o.totAsc - int(o.remAsc[c]) + r
}

// places returns w's scratch of n places for polarity p, or nil when not
// rec.
func (w *recountScratch) places(p int, rec bool, n int) []uint32 {
	if !rec {
		return nil
	}
	w.pos[p] = slices.Grow(w.pos[p][:0], n)[:n]
	return w.pos[p]
}

// tracks reports whether o counts polarity p (0 asc, 1 desc).
func (o *ocCheck) tracks(p int) bool { return p == 0 && o.asc || p == 1 && o.desc }

// misfits is the bound on how much o's count of polarity p may have grown
// since its last recount: the rows that entered and were not accepted.
func (o *ocCheck) misfits(p int) int { return o.ins - o.acc[p] }

// unchanged reports whether no tracked polarity of o can have crossed a
// cut since its last recount (within [tot - lost, tot + misfits]).
func (o *ocCheck) unchanged(cuts []int) bool {
	return (!o.asc || unchangedVerdict(o.totAsc, o.misfits(0), o.lost(0), cuts)) &&
		(!o.desc || unchangedVerdict(o.totDesc, o.misfits(1), o.lost(1), cuts))
}

// mayFit reports whether fit tests could spare o's recount: whether it
// would be unchanged were every row that entered accepted (its lower
// bound alone may force it).
func (o *ocCheck) mayFit(cuts []int) bool {
	return (!o.asc || unchangedVerdict(o.totAsc, 0, o.lost(0), cuts)) &&
		(!o.desc || unchangedVerdict(o.totDesc, 0, o.lost(1), cuts))
}

// fit tests the rows that entered o's sorted classes since they were last
// tested (the pending ones) against each class's S and A, per polarity
// recorded, and counts the accepted ones into o.acc. The pending rows'
// pairs go to the class's adds as one sorted run, as presort puts them,
// so the recount that may follow merges them instead of sorting. Labels
// must be settled; it writes o's state and w only (a unit of phaseFit).
func (o *ocCheck) fit(e *Engine, w *recountScratch) {
	for _, c := range o.dirty {
		if int(c) >= len(o.big) || o.big[c] == nil {
			continue
		}
		sc := o.big[c]
		test := [2]bool{o.asc && sc.fit[0].ok, o.desc && sc.fit[1].ok}
		if len(sc.pending) == 0 || !test[0] && !test[1] {
			continue
		}
		if sc.cnt != nil {
			tested := len(sc.pending)
			acc := o.fold(e, sc)
			for p := range 2 {
				if test[p] {
					o.accShare[p] = (o.accShare[p] + float64(acc[p])/float64(tested)) / 2
				}
			}
			continue
		}
		sc.adds.sortTail(&w.runs) // none unsorted, unless presort changes
		start := len(sc.adds.ps)
		for _, s := range sc.pending {
			if e.alive(s) {
				sc.adds.ps = append(sc.adds.ps, o.pair(e, s))
			}
		}
		sc.pending = sc.pending[:0]
		sc.presorted = e.to
		run := sc.adds.ps[start:]
		sortPairs(run)
		for p := range 2 {
			if !test[p] || len(run) == 0 {
				continue
			}
			a := sc.fitRun(run, p, e.tune.fitMax, w)
			o.acc[p] += a
			o.accShare[p] = (o.accShare[p] + float64(a)/float64(len(run))) / 2
		}
		sc.adds.endRun(&w.runs)
	}
}

// fitRun tests the pairs of run (sorted), rows that entered sc, for
// polarity p: a pair is accepted when it is consistent with S, with A and
// with the pairs of run accepted before it, and while A holds fewer than
// limit pairs. It adds the accepted ones to A as a run and returns how
// many. Keys are lb (asc) or ^lb (desc); in a consistent set the keys do
// not decrease as la grows, so x fits iff every key of a pair with a
// smaller la is at most x's, and every key of a pair with a larger la at
// least x's. The pairs of run come in la order, so those accepted before
// x with a smaller la are folded into running when la changes (pairs of
// equal la constrain each other in nothing).
func (sc *sortedClass) fitRun(run []ocPair, p, limit int, w *recountScratch) int {
	f := &sc.fit[p]
	desc := p == 1
	start := len(f.a.ps)
	room := limit - start
	var running, group, lo, hi uint64
	from := 0 // S's first pair with la at least the group's
	// Per run of A, its first pair with la at least the group's.
	w.aFrom = append(w.aFrom[:0], f.a.ends...)
	for r := range w.aFrom {
		w.aFrom[r] = 0
		if r > 0 {
			w.aFrom[r] = f.a.ends[r-1]
		}
	}
	for i, x := range run {
		if i == 0 || x.LA != run[i-1].LA {
			running, group = max(running, group), 0
			lo, hi = f.boundsS(sc.la, sc.lb, &from, x.LA, desc)
			alo, ahi := f.boundsA(w.aFrom, x.LA, desc)
			lo, hi = max(lo, alo, running), min(hi, ahi)
		}
		k := x.LB
		if desc {
			k = ^k
		}
		if lo <= k && k <= hi && len(f.a.ps)-start < room {
			f.a.ps = append(f.a.ps, x)
			group = max(group, k)
		}
	}
	n := len(f.a.ps) - start
	f.a.endRun(&w.runs)
	return n
}

// boundsS returns the largest key of S's pairs with la below v (0 if
// none) and the smallest of those with la above v (all ones if none).
// The pairs before *from have la below v; it is moved to the first pair
// whose la is not. Every search gallops from a place near its answer.
func (f *classFit) boundsS(la, lb []uint64, from *int, v uint64, desc bool) (lo, hi uint64) {
	n := len(la)
	cut := gallopLabels(la, *from, v, label)
	*from = cut
	above := firstAbove(la, cut, v, label)
	lo, hi = 0, ^uint64(0)
	if i := bitset.Prev(f.set, cut); i >= 0 {
		if desc {
			// The largest ^lb below v is in la[i]'s run, at its first pair in S.
			i = bitset.Next(f.set, runStart(la, i, label), n)
			lo = ^lb[i]
		} else {
			lo = lb[i]
		}
	}
	if i := bitset.Next(f.set, above, n); i < n {
		if desc {
			// The smallest ^lb above v is in la[i]'s run, at its last pair in S.
			i = bitset.Prev(f.set, firstAbove(la, i, la[i], label))
			hi = ^lb[i]
		} else {
			hi = lb[i]
		}
	}
	return lo, hi
}

// boundsA is boundsS over A's sorted runs (all of whose pairs are in A):
// from[r] is the index in f.a.ps of run r's first pair whose la is not
// below v (those before are below), galloped on from its last place.
func (f *classFit) boundsA(from []int, v uint64, desc bool) (lo, hi uint64) {
	lo, hi = 0, ^uint64(0)
	start := 0
	for r, end := range f.a.ends {
		run := f.a.ps[start:end]
		cut := gallopLabels(run, from[r]-start, v, laOf)
		from[r] = start + cut
		start = end
		if cut > 0 {
			i := cut - 1
			if desc {
				// The largest ^lb below v: the first pair of run[i]'s la.
				lo = max(lo, ^run[runStart(run, i, laOf)].LB)
			} else {
				lo = max(lo, run[i].LB)
			}
		}
		if above := firstAbove(run, cut, v, laOf); above < len(run) {
			i := above
			if desc {
				// The smallest ^lb above v: the last pair of run[i]'s la.
				hi = min(hi, ^run[firstAbove(run, i, run[i].LA, laOf)-1].LB)
			} else {
				hi = min(hi, run[i].LB)
			}
		}
	}
	return lo, hi
}

// laOf is a pair's label of A, the key its searches go by.
func laOf(p ocPair) uint64 { return p.LA }

// label is a label as its own key.
func label(v uint64) uint64 { return v }

// gallopLabels returns the first index from from on whose key is not
// below v (those before from are; xs sorted by key), galloping from from.
func gallopLabels[E any](xs []E, from int, v uint64, key func(E) uint64) int {
	if from == len(xs) || key(xs[from]) >= v {
		return from
	}
	lo, hi := from, from+1 // key(xs[lo]) < v; the answer is in (lo, hi]
	for step := 1; hi < len(xs) && key(xs[hi]) < v; step *= 2 {
		lo, hi = hi, hi+step
	}
	return searchKeys(xs, lo, min(hi, len(xs)), v, key)
}

// firstAbove returns the first index from from on whose key is above v
// (those before from are not; xs sorted by key), galloping from from.
func firstAbove[E any](xs []E, from int, v uint64, key func(E) uint64) int {
	if v == ^uint64(0) {
		return len(xs)
	}
	return gallopLabels(xs, from, v+1, key)
}

// runStart returns the first index of the run of keys equal to xs[i]'s
// (xs sorted by key), galloping back from i.
func runStart[E any](xs []E, i int, key func(E) uint64) int {
	v := key(xs[i])
	if i == 0 || key(xs[i-1]) != v {
		return i
	}
	lo, hi := i-1, i-1 // key(xs[hi]) == v; the answer is in (lo', hi] once key(xs[lo']) < v
	for step := 1; ; step *= 2 {
		lo = hi - step
		if lo < 0 {
			lo = -1
			break
		}
		if key(xs[lo]) != v {
			break
		}
		hi = lo
	}
	return searchKeys(xs, lo, hi, v, key)
}

// searchKeys returns the first index in (lo, hi] whose key is not below v,
// given that xs[lo]'s is below v (or lo is -1) and xs[hi]'s is not (or hi
// is len(xs)).
func searchKeys[E any](xs []E, lo, hi int, v uint64, key func(E) uint64) int {
	for lo+1 < hi {
		mid := int(uint(lo+hi) >> 1)
		if key(xs[mid]) < v {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// runFits runs the fit tests of the OCs in e.fits (phaseFit), on two
// goroutines when their pending rows reach flushParallelMin.
func (e *Engine) runFits() {
	work := 0
	for _, o := range e.fits {
		work += o.ins
	}
	e.spread(phaseFit, len(e.fits), work, e.tune.flushParallelMin)
}
