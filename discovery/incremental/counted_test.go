package incremental

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCountedRemovals checks countedRemovals against brute force on small
// classes with repeated pairs, ties in la and in lb, both polarities: the
// removals are the rows outside a largest consistent subset, and the
// chain it records is consistent, its pairs' rows as many as are kept.
func TestCountedRemovals(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	var w recountScratch
	for trial := 0; trial < 3000; trial++ {
		ps := randomClass(r)
		n := len(ps)
		sc := &sortedClass{}
		sc.la, sc.lb = pairColumns(ps)
		sc.toCounted(distinctPairs(sc.la, sc.lb))
		o := &ocCheck{asc: true, desc: true, fitBound: fitBound{fitCuts: []int{n}}, remAsc: []uint32{0}, remDesc: []uint32{0}}
		asc, desc := o.countedRemovals(&w, sc, 0, n, true)
		for p, rem := range []int{asc, desc} {
			isDesc := p == 1
			want := largestConsistent(ps, isDesc)
			if n-rem != want {
				t.Fatalf("%v desc=%v: counted keeps %d, largest consistent subset %d", ps, isDesc, n-rem, want)
			}
			var chain []ocPair
			rows := 0
			for _, id := range sc.cnt.byPair {
				if sc.cnt.chain[id]>>p&1 == 1 {
					chain = append(chain, sc.cnt.pairs[id])
					rows += int(sc.cnt.n[id])
				}
			}
			if !sc.fit[p].ok || rows != want || !consistentPairs(chain, isDesc) {
				t.Fatalf("%v desc=%v: chain %v (ok %v, %d rows, consistent %v), want a consistent chain of %d rows",
					ps, isDesc, chain, sc.fit[p].ok, rows, consistentPairs(chain, isDesc), want)
			}
		}
	}
}

// TestPrefixMaxTree checks raise against a scan of the pairs raised.
func TestPrefixMaxTree(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var w recountScratch
	for trial := 0; trial < 500; trial++ {
		ranks := 1 + r.IntN(20)
		tree := w.prefixMax(ranks)
		var raised []struct{ r, v int }
		best := 0
		for range 1 + r.IntN(30) {
			rk, c := r.IntN(ranks), 1+r.IntN(5)
			want := c
			for _, x := range raised {
				if x.r <= rk {
					want = max(want, x.v+c)
				}
			}
			if got := tree.raise(rk, c); got != want {
				t.Fatalf("raise(%d, %d) after %v = %d, want %d", rk, c, raised, got, want)
			}
			raised = append(raised, struct{ r, v int }{rk, want})
			best = max(best, want)
			if tree.best != best {
				t.Fatalf("best %d, want %d", tree.best, best)
			}
		}
	}
}

// TestPairCounts checks add, remove and settle against a plain count of
// the pairs: after each settle, byPair and byLB hold each pair with rows
// once, in order, under an id that counts its rows.
func TestPairCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var w recountScratch
	for trial := 0; trial < 300; trial++ {
		dom := uint64(1 + r.IntN(5))
		sc := &sortedClass{la: []uint64{0}, lb: []uint64{0}}
		sc.toCounted(1)
		pc := sc.cnt
		model := map[ocPair]int{{LA: 0, LB: 0}: 1}
		for step := 0; step < 200; step++ {
			p := ocPair{LA: r.Uint64N(dom), LB: r.Uint64N(dom)}
			if model[p] > 0 && r.IntN(2) == 0 {
				pc.remove(p)
				model[p]--
			} else {
				pc.add(p)
				model[p]++
			}
			if r.IntN(5) > 0 {
				continue
			}
			pc.settle(&w)
			var live []ocPair
			rows := 0
			for q, n := range model {
				if n > 0 {
					live = append(live, q)
					rows += n
				}
			}
			slices.SortFunc(live, comparePairs)
			var got []ocPair
			counted := 0
			for _, id := range pc.byPair {
				got = append(got, pc.pairs[id])
				counted += int(pc.n[id])
				if int(pc.n[id]) != model[pc.pairs[id]] {
					t.Fatalf("pair %v counts %d rows, want %d", pc.pairs[id], pc.n[id], model[pc.pairs[id]])
				}
			}
			if !slices.Equal(got, live) || counted != rows || pc.ids.Len() != len(live) {
				t.Fatalf("byPair %v (%d rows, %d ids), want %v (%d rows)", got, counted, pc.ids.Len(), live, rows)
			}
			if len(pc.byLB) != len(live) || !slices.IsSortedFunc(pc.byLB, func(x, y uint32) int {
				return cmp.Compare(pc.pairs[x].LB, pc.pairs[y].LB)
			}) {
				t.Fatalf("byLB %v not the %d live ids by lb", pc.byLB, len(live))
			}
		}
	}
}
