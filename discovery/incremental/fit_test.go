package incremental

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/odwatch/odwatch/discovery"
)

// consistentPairs reads the definition: no two pairs x, y with x.la <
// y.la and x.lb > y.lb (desc: x.lb < y.lb).
func consistentPairs(ps []ocPair, desc bool) bool {
	for _, x := range ps {
		for _, y := range ps {
			if x.LA < y.LA && (!desc && x.LB > y.LB || desc && x.LB < y.LB) {
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

// randomClass returns a class of 1 to 12 rows' pairs over 1 to 6 labels
// each, sorted: repeated pairs, ties in la and in lb.
func randomClass(r *rand.Rand) []ocPair {
	n, dom := 1+r.IntN(12), uint64(1+r.IntN(6))
	ps := make([]ocPair, n)
	for i := range ps {
		ps[i] = ocPair{LA: r.Uint64N(dom), LB: r.Uint64N(dom)}
	}
	slices.SortFunc(ps, comparePairs)
	return ps
}

// pairColumns returns ps's labels of A and of B.
func pairColumns(ps []ocPair) (la, lb []uint64) {
	la, lb = make([]uint64, len(ps)), make([]uint64, len(ps))
	for i, p := range ps {
		la[i], lb[i] = p.LA, p.LB
	}
	return la, lb
}

// TestBacktrackLargestConsistent checks the subset lnds records (keep)
// against brute force: it is consistent and as large as the largest, for
// both polarities, on classes with ties in la and in lb.
func TestBacktrackLargestConsistent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	var w recountScratch
	for trial := 0; trial < 3000; trial++ {
		ps := randomClass(r)
		n := len(ps)
		la, lb := pairColumns(ps)
		o := &ocCheck{asc: true, desc: true}
		var sets [2][]uint64
		asc, desc := o.lnds(&w, la, lb, true)
		for p, rem := range []int{asc, desc} {
			sets[p] = backtrack(nil, la, lb, w.pos[p], n-rem, p == 1)
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

// TestIncrementalFitBound is a differential test aimed at the fit bound:
// OCs that nearly hold (B mostly a non-decreasing function of A, with
// ties, and noise), both polarities, in the empty context and in one of a
// few classes, small slides, and at every check cuts just around each
// dependency's true count, so that the OCs are fit-tested check after
// check between recounts and A grows. Every count must be exact or
// bracket the full recomputation on the same side of every cut.
func TestIncrementalFitBound(t *testing.T) {
	t.Parallel()
	boundRuns(t, false)
}

// TestIncrementalFloorBound is TestIncrementalFitBound aimed at the pile
// bound: a window that slides (as many rows leave as enter, once full),
// and cuts just below each dependency's true count as often as just
// above, so that the OCs are floor-tested check after check between
// recounts.
func TestIncrementalFloorBound(t *testing.T) {
	t.Parallel()
	boundRuns(t, true)
}

// boundRuns runs fitRun over the seeds, with slide or not, and fails when
// the bound aimed at never took part: no row accepted by a fit test, or
// with slide no row that left spared by a floor test.
func boundRuns(t *testing.T, slide bool) {
	seeds := 40
	if testing.Short() {
		seeds = 15
	}
	took := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		accepted, spared := fitRun(t, seed, 150, slide)
		if slide {
			accepted = spared
		}
		took += accepted
	}
	what := "rows accepted by a fit test"
	if slide {
		what = "rows that left spared by a floor test"
	}
	if took == 0 {
		t.Fatal("no " + what)
	}
	t.Logf("%d %s (summed over the checks)", took, what)
}

// fitRun is one run of TestIncrementalFitBound, or with slide of
// TestIncrementalFloorBound; it returns the rows the fit tests accepted
// and the rows the floor tests spared.
func fitRun(t *testing.T, seed uint64, steps int, slide bool) (accepted, spared int) {
	r := rand.New(rand.NewPCG(seed, 77))
	names := []string{"x", "a", "b"}
	var deps []discovery.Dependency
	for _, ctx := range [][]string{nil, {"x"}} {
		for _, pol := range []discovery.Polarity{discovery.Asc, discovery.Desc} {
			deps = append(deps, discovery.Dependency{Kind: discovery.KindOC, Context: ctx, Left: "a", Right: "b", Polarity: pol})
		}
	}
	e, err := New(deps, Options{SortedMin: 2 + r.IntN(4), RecountBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	e.tune.presortMin = 1 + r.IntN(8)
	if r.IntN(3) == 0 {
		e.tune.fitMax = r.IntN(20)
	}
	if r.IntN(3) == 0 {
		e.tune.floorMax = r.IntN(20)
	}
	m := &incModel{names: names}
	for _, name := range names {
		e.Column(name)
	}
	// B grows (asc holds) or falls (desc holds) with A, but for noise
	// rows; a wide domain of A leaves gaps between S's pairs, where noise
	// rows fit S and may conflict with each other.
	dir := 1 - 2*r.IntN(2)
	noise := r.Float64() * 0.3
	dom := []int{30, 1000}[r.IntN(2)]
	div := 1 + r.IntN(3)
	jitter := []int{3, 30, 300}[r.IntN(3)]
	row := func() []incCell {
		a := r.IntN(dom)
		b := dir * (a / div)
		if r.Float64() < noise {
			b = dir * ((a + r.IntN(2*jitter+1) - jitter) / div)
		}
		return []incCell{{v: strconv.Itoa(r.IntN(3))}, {v: strconv.Itoa(a)}, {v: strconv.Itoa(b)}}
	}
	size := 40 + r.IntN(150)
	vals, nulls := make([]string, 3), make([]bool, 3)
	for step := 0; step < steps; step++ {
		in := r.IntN(8) + 1
		out := r.IntN(6)
		switch {
		case slide && len(m.rows) >= size:
			out = in + r.IntN(3) - 1
		case slide:
			out = 0
		case len(m.rows) < size || r.IntN(4) != 0:
			out = 0 // rows that leave loosen the bound: mostly none
		}
		out = min(out, len(m.rows))
		e.Evict(out)
		m.rows = m.rows[out:]
		for k := in; k > 0; k-- {
			c := row()
			for i := range c {
				vals[e.colIdx[names[i]]] = c[i].v
			}
			e.Append(vals, nulls)
			m.rows = append(m.rows, c)
		}
		want := m.removals(t, deps)
		var cuts []int
		for _, w := range want {
			cuts = append(cuts, w+r.IntN(3))
			if r.IntN(3) == 0 || slide && r.IntN(2) == 0 {
				cuts = append(cuts, w-1-r.IntN(3))
			}
		}
		got := e.Check(cuts)
		for i, res := range got {
			w := want[i]
			if res.Exact && res.Removals != w || w < res.Low || w > res.High {
				t.Fatalf("seed %d step %d: %s: %d removals in [%d, %d] (exact %v), full recomputation %d",
					seed, step, deps[i], res.Removals, res.Low, res.High, res.Exact, w)
			}
			for _, c := range cuts {
				if (w > c) != (res.Removals > c) {
					t.Fatalf("seed %d step %d: %s skipped with %d removals (full %d) across cut %d", seed, step, deps[i], res.Removals, w, c)
				}
			}
		}
		for _, o := range e.ocs {
			accepted += o.acc[0] + o.acc[1]
			spared += o.spared[0] + o.spared[1]
		}
	}
	return accepted, spared
}

// TestLabelSearches checks gallopLabels, firstAbove and runStart, over
// labels and over pairs (keyed by la), against linear scans, on labels
// with long runs.
func TestLabelSearches(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 300; trial++ {
		n := 1 + r.IntN(200)
		la := make([]uint64, n)
		for i := range la {
			la[i] = r.Uint64N(uint64(1 + r.IntN(20)))
		}
		slices.Sort(la)
		ps := make([]ocPair, n)
		for i, v := range la {
			ps[i] = ocPair{LA: v, LB: r.Uint64()}
		}
		for i := range la {
			want := i
			for want > 0 && la[want-1] == la[i] {
				want--
			}
			if got := runStart(la, i, label); got != want {
				t.Fatalf("%v: runStart(%d) = %d, want %d", la, i, got, want)
			}
			if got := runStart(ps, i, laOf); got != want {
				t.Fatalf("%v: runStart(pairs, %d) = %d, want %d", la, i, got, want)
			}
		}
		for v := uint64(0); v <= 21; v++ {
			lower, upper := 0, 0
			for lower < n && la[lower] < v {
				lower++
			}
			for upper < n && la[upper] <= v {
				upper++
			}
			for from := 0; from <= lower; from++ {
				if got := gallopLabels(la, from, v, label); got != lower {
					t.Fatalf("%v: gallopLabels(%d, %d) = %d, want %d", la, from, v, got, lower)
				}
				if got := gallopLabels(ps, from, v, laOf); got != lower {
					t.Fatalf("%v: gallopLabels(pairs, %d, %d) = %d, want %d", la, from, v, got, lower)
				}
			}
			for from := 0; from <= lower; from++ {
				if got := firstAbove(la, from, v, label); got != upper {
					t.Fatalf("%v: firstAbove(%d, %d) = %d, want %d", la, from, v, got, upper)
				}
				if got := firstAbove(ps, from, v, laOf); got != upper {
					t.Fatalf("%v: firstAbove(pairs, %d, %d) = %d, want %d", la, from, v, got, upper)
				}
			}
		}
	}
}
