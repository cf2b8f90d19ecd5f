package incremental

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFloorBoundsRemovals checks the pile bound against brute force: for
// random classes (ties in la and in lb, both polarities), after random
// rows leave and new rows enter, the largest consistent subset of what is
// left leaves at least r - cost removals, and cost is at most the rows
// that left.
func TestFloorBoundsRemovals(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var w recountScratch
	tight := 0
	for trial := 0; trial < 3000; trial++ {
		n := 1 + r.IntN(11)
		dom := uint64(1 + r.IntN(6))
		pair := func() ocPair { return ocPair{LA: r.Uint64N(dom), LB: r.Uint64N(dom)} }
		ps := make([]ocPair, n)
		for i := range ps {
			ps[i] = pair()
		}
		slices.SortFunc(ps, comparePairs)
		la, lb := make([]uint64, n), make([]uint64, n)
		for i, p := range ps {
			la[i], lb[i] = p.LA, p.LB
		}
		o := &ocCheck{asc: true, desc: true}
		asc, desc := o.lnds(&w, la, lb, true)
		for p, rem := range []int{asc, desc} {
			var f classFloor
			if !f.build(la, lb, w.pos[p], n-rem, n, &w.piles) {
				t.Fatalf("%v: the floor of %d pairs at most did not fit %d", ps, n, n)
			}
			if len(f.ps) > 2*rem {
				t.Fatalf("%v desc=%v: %d pairs kept for %d removals", ps, p == 1, len(f.ps), rem)
			}
			var dead, kept []ocPair
			for _, q := range ps {
				if r.IntN(3) == 0 {
					dead = append(dead, q)
				} else {
					kept = append(kept, q)
				}
			}
			for k := r.IntN(3); k > 0; k-- {
				kept = append(kept, pair())
			}
			cost := 0
			r.Shuffle(len(dead), func(i, j int) { dead[i], dead[j] = dead[j], dead[i] })
			for _, q := range dead {
				cost += boolIndex(!f.take(q))
			}
			if cost < 0 || cost > len(dead) {
				t.Fatalf("%v desc=%v: cost %d of %d rows that left", ps, p == 1, cost, len(dead))
			}
			got := len(kept) - largestConsistent(kept, p == 1)
			if got < rem-cost {
				t.Fatalf("%v desc=%v (%d removals): %v left, %d removals now, below the bound %d - %d",
					ps, p == 1, rem, dead, got, rem, cost)
			}
			if got == rem-cost && cost < len(dead) {
				tight++
			}
		}
	}
	if tight == 0 {
		t.Fatal("the bound was never tighter than one per row that left")
	}
}

// TestFloorTake checks classFloor.take against a count of each pair: the
// rows that left in any order cost, per pair of the floor, how many more
// of them left than it has in piles of one row, and a pair not in the
// floor costs nothing.
func TestFloorTake(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 2000; trial++ {
		dom := uint64(1 + r.IntN(5))
		var f classFloor
		for a := uint64(0); a < dom; a++ {
			for b := uint64(0); b < dom; b++ {
				if r.IntN(2) == 0 {
					f.ps = append(f.ps, floorPair{p: ocPair{LA: a, LB: b}, spare: uint32(r.IntN(3))})
				}
			}
		}
		spares := slices.Clone(f.ps)
		dead := make([]ocPair, r.IntN(40))
		for i := range dead {
			dead[i] = ocPair{LA: r.Uint64N(dom), LB: r.Uint64N(dom)}
		}
		want := 0
		for _, fp := range spares {
			m := 0
			for _, d := range dead {
				if d == fp.p {
					m++
				}
			}
			want += max(m-int(fp.spare), 0)
		}
		got := 0
		for _, d := range dead {
			got += boolIndex(!f.take(d))
		}
		if got != want {
			t.Fatalf("floor %v, rows that left %v: cost %d, want %d", spares, dead, got, want)
		}
	}
}
