package discovery

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// consistentPairs reads the definition: no two pairs x, y with x.la <
// y.la and x.lb > y.lb (desc: x.lb < y.lb).
func consistentPairs(ps []ocPair, desc bool) bool {
	for _, x := range ps {
		for _, y := range ps {
			if x.la < y.la && (!desc && x.lb > y.lb || desc && x.lb < y.lb) {
				return false
			}
		}
	}
	return true
}

// largestConsistent is the size of a largest consistent subset of ps, by
// trying every subset.
func largestConsistent(ps []ocPair, desc bool) int {
	best := 0
	for mask := 0; mask < 1<<len(ps); mask++ {
		var sub []ocPair
		for i, p := range ps {
			if mask>>i&1 == 1 {
				sub = append(sub, p)
			}
		}
		if len(sub) > best && consistentPairs(sub, desc) {
			best = len(sub)
		}
	}
	return best
}

// TestBacktrackLargestConsistent checks the subset lnds records (keep)
// against brute force: it is consistent and as large as the largest, for
// both polarities, on classes with ties in la and in lb.
func TestBacktrackLargestConsistent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var w recountScratch
	for trial := 0; trial < 3000; trial++ {
		n := 1 + r.IntN(12)
		dom := uint64(1 + r.IntN(6))
		ps := make([]ocPair, n)
		for i := range ps {
			ps[i] = ocPair{r.Uint64N(dom), r.Uint64N(dom)}
		}
		slices.SortFunc(ps, comparePairs)
		la, lb := make([]uint64, n), make([]uint64, n)
		for i, p := range ps {
			la[i], lb[i] = p.la, p.lb
		}
		o := &incOC{asc: true, desc: true}
		var sets [2][]uint64
		asc, desc := o.lnds(&w, la, lb, [2]*[]uint64{&sets[0], &sets[1]})
		for p, rem := range []int{asc, desc} {
			isDesc := p == 1
			want := largestConsistent(ps, isDesc)
			if n-rem != want {
				t.Fatalf("%v desc=%v: lnds keeps %d, largest consistent subset %d", ps, isDesc, n-rem, want)
			}
			var sub []ocPair
			for i := range ps {
				if sets[p][i>>6]>>(i&63)&1 == 1 {
					sub = append(sub, ps[i])
				}
			}
			if len(sub) != want || !consistentPairs(sub, isDesc) {
				t.Fatalf("%v desc=%v: recorded %v (%d rows, consistent %v), want a consistent subset of %d",
					ps, isDesc, sub, len(sub), consistentPairs(sub, isDesc), want)
			}
		}
	}
}

// TestBitsScan checks nextSet and prevSet against a scan of the bits.
func TestBitsScan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(300)
		set := resizeBits(nil, n, false)
		dens := r.Float64() * 0.1
		for i := 0; i < n; i++ {
			if r.Float64() < dens {
				set[i>>6] |= 1 << (i & 63)
			}
		}
		has := func(i int) bool { return set[i>>6]>>(i&63)&1 == 1 }
		for i := 0; i <= n; i++ {
			next := i
			for next < n && !has(next) {
				next++
			}
			prev := i - 1
			for prev >= 0 && !has(prev) {
				prev--
			}
			if got := nextSet(set, i, n); got != next {
				t.Fatalf("n %d: nextSet(%d) = %d, want %d", n, i, got, next)
			}
			if got := prevSet(set, i); got != prev {
				t.Fatalf("n %d: prevSet(%d) = %d, want %d", n, i, got, prev)
			}
		}
	}
}
