package discovery

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// The steps of the lattice walk (lattice.run), each judged against the
// oracle's measures on small random tables: the test walks the lattice
// one step at a time, as run does, and checks what each step keeps,
// drops and marks against the definitions. TestLatticeMatchesBruteForce
// judges the whole walk.

// stepCase is one small table with its oracle measures.
type stepCase struct {
	cols    [][]int
	tab     *table.Table
	om      *oracleMeasures
	ordered []bool
}

func (sc *stepCase) g3(x uint64, a int) int { return sc.om.ofd[[2]uint64{x, uint64(a)}] }

// saturated reports whether every OFD X: [] -> A is valid at a direct
// subset of X: what inherit drops.
func (sc *stepCase) saturated(x uint64, m, budget int) bool {
	for a := range m {
		if x&(1<<a) == 0 && !anyDirectSubset(x, m, func(y uint64) bool { return sc.g3(y, a) <= budget }) {
			return false
		}
	}
	return true
}

// exactlyDetermined reports whether X\{C}: [] -> C holds exactly for some C
// in X: what dropExactlyDetermined drops.
func (sc *stepCase) exactlyDetermined(x uint64, m int) bool {
	for c := range m {
		if x&(1<<c) != 0 && sc.g3(x&^(1<<c), c) == 0 {
			return true
		}
	}
	return false
}

// nodeSets returns the column sets of nodes, in order.
func nodeSets(nodes []*latNode) []uint64 {
	var out []uint64
	for _, n := range nodes {
		out = append(out, n.set)
	}
	return out
}

// keptBy returns the sets of nodes for which keep holds, in order.
func keptBy(nodes []*latNode, keep func(n *latNode) bool) []uint64 {
	var out []uint64
	for _, n := range nodes {
		if keep(n) {
			out = append(out, n.set)
		}
	}
	return out
}

// TestLatticeStepsMatchDefinitions walks the lattice step by step on
// random small tables and checks each step against the oracle:
//   - inherit ORs the parents' OFD bits and drops exactly the contexts where
//     every OFD holds at a direct subset;
//   - buildPartitions gives each context the partition of its columns;
//   - dropExactlyDetermined drops exactly the X with X\{C}: [] -> C exact;
//   - computeODs leaves ofdValid equal to the valid OFDs, ofdExact within
//     the exact ones, and the OC bits equal to the valid OCs where both
//     OFDs fail;
//   - prune keeps exactly the contexts where some OFD fails (none past
//     MaxLevel);
//   - nextLevel is checked by checkNextLevel.
func TestLatticeStepsMatchDefinitions(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 2021))
	const tables = 120
	for i := range tables {
		cols := strengthTable(rng)
		tab := tableFromInts(cols)
		if tab.Rows == 0 {
			continue
		}
		sc := &stepCase{cols: cols, tab: tab, om: measureAll(cols, tab.Rows), ordered: make([]bool, len(cols))}
		for c := range cols {
			sc.ordered[c] = rng.IntN(4) != 0
			if !sc.ordered[c] {
				tab.Columns[c].Type = table.Nominal
			}
		}
		for _, eps := range []float64{0, 0.1, 0.3} {
			for _, minStrength := range []float64{0, DefaultMinStrength} {
				for _, maxLevel := range []int{0, 2} {
					opts := Options{Epsilon: eps, MinStrength: minStrength, MaxLevel: maxLevel, Workers: 1 + i%2, RemovalSample: i % 3}
					name := fmt.Sprintf("table %d (%d rows, %d cols) %+v", i, tab.Rows, len(cols), opts)
					walkSteps(t, name, sc, opts)
				}
			}
		}
	}
}

// walkSteps runs the steps of lattice.run on sc.tab with opts, checking
// each one.
func walkSteps(t *testing.T, name string, sc *stepCase, opts Options) {
	t.Helper()
	ctx := context.Background()
	l := newLattice(sc.tab, opts)
	m, budget := l.m, l.budget
	level := []*latNode{l.newNode(nil, validate.FullPartition(sc.tab.Rows))}
	var prev []*latNode
	for k := 0; len(level) > 0 && l.withinMaxLevel(k+1); k++ {
		before := slices.Clone(level)
		level = l.inherit(level)
		for _, n := range before {
			var valid, exact, rel uint64
			for _, p := range n.parents {
				valid |= p.ofdValid
				exact |= p.ofdExact
				rel |= p.ofdRel
			}
			if n.ofdValid != valid&^n.set || n.ofdExact != exact&^n.set || n.ofdRel != rel&^n.set {
				t.Fatalf("%s: inherit at %v: bits %b %b %b, parents' %b %b %b", name, n.cols, n.ofdValid, n.ofdExact, n.ofdRel, valid, exact, rel)
			}
		}
		if got, want := nodeSets(level), keptBy(before, func(n *latNode) bool { return !sc.saturated(n.set, m, budget) }); !slices.Equal(got, want) {
			t.Fatalf("%s: inherit at level %d kept %b, want %b", name, k, got, want)
		}
		if k > 0 {
			if err := l.buildPartitions(ctx, level, k); err != nil {
				t.Fatal(err)
			}
			for _, n := range level {
				classes := oracleClasses(sc.cols, sc.tab.Rows, n.cols)
				if got, want := n.part.Score(), oracleScore(classes, sc.tab.Rows); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
					t.Fatalf("%s: partition of %v: score %v, want %v", name, n.cols, got, want)
				}
				if want := validate.PartitionOf(sc.tab, n.cols); n.part.Covered() != want.Covered() || n.part.NumClasses() != want.NumClasses() {
					t.Fatalf("%s: partition of %v: %d rows in %d classes, want %d in %d", name, n.cols,
						n.part.Covered(), n.part.NumClasses(), want.Covered(), want.NumClasses())
				}
			}
			before = slices.Clone(level)
			level = dropExactlyDetermined(level)
			if got, want := nodeSets(level), keptBy(before, func(n *latNode) bool { return !sc.exactlyDetermined(n.set, m) }); !slices.Equal(got, want) {
				t.Fatalf("%s: dropExactlyDetermined at level %d kept %b, want %b", name, k, got, want)
			}
		}
		if _, err := l.computeODs(ctx, level, k); err != nil {
			t.Fatal(err)
		}
		for _, n := range level {
			checkNodeBits(t, name, sc, l, n, k)
		}
		retire(prev)
		alive := l.prune(level, k)
		want := keptBy(level, func(n *latNode) bool {
			if !l.withinMaxLevel(k + 2) {
				return false
			}
			for a := range m {
				if n.set&(1<<a) == 0 && sc.g3(n.set, a) > budget {
					return true
				}
			}
			return false
		})
		if got := nodeSets(alive); !slices.Equal(got, want) {
			t.Fatalf("%s: prune at level %d kept %b, want %b", name, k, got, want)
		}
		next := l.nextLevel(alive, k)
		checkNextLevel(t, name, m, k, alive, next)
		prev, level = level, next
	}
}

// checkNodeBits checks n's validity bits after computeODs against the
// oracle.
func checkNodeBits(t *testing.T, name string, sc *stepCase, l *lattice, n *latNode, k int) {
	t.Helper()
	for a := range l.m {
		if n.set&(1<<a) != 0 {
			continue
		}
		g3 := sc.g3(n.set, a)
		if got := n.ofdValid&(1<<a) != 0; got != (g3 <= l.budget) {
			t.Fatalf("%s: %v: [] -> c%d valid %v, g3 %d budget %d", name, n.cols, a, got, g3, l.budget)
		}
		if n.ofdExact&(1<<a) != 0 && g3 != 0 {
			t.Fatalf("%s: %v: [] -> c%d marked exact, g3 %d", name, n.cols, a, g3)
		}
		if n.ofdRel&^n.ofdValid != 0 {
			t.Fatalf("%s: %v: reliable OFDs %b not within the valid %b", name, n.cols, n.ofdRel, n.ofdValid)
		}
		for b := a + 1; b < l.m; b++ {
			if n.set&(1<<b) != 0 || n.ofdValid&(1<<a|1<<b) != 0 || !sc.ordered[a] || !sc.ordered[b] || !l.withinMaxLevel(k+2) {
				continue
			}
			for pol := Asc; pol <= Desc; pol++ {
				removals := sc.om.oc[[4]uint64{n.set, uint64(a), uint64(b), uint64(pol)}]
				if got := n.hasOC(ocBit(l.m, a, b, pol)); got != (removals <= l.budget) {
					t.Fatalf("%s: %v: c%d ~ c%d %v valid %v, removals %d budget %d", name, n.cols, a, b, pol, got, removals, l.budget)
				}
			}
		}
	}
}

// checkNextLevel checks next against FASTOD's calculateNextLevel read
// directly: the (k+1)-subsets of the m columns, in lexicographic order,
// all of whose k-subsets X\{C} are alive and none of which has
// X\{C}: [] -> C marked exact; each with its direct subsets as parents,
// parent j lacking the j-th column.
func checkNextLevel(t *testing.T, name string, m, k int, alive, next []*latNode) {
	t.Helper()
	bySet := map[uint64]*latNode{}
	for _, n := range alive {
		bySet[n.set] = n
	}
	var want []uint64
	if len(alive) > 0 {
		for _, x := range lexSubsets(m, k+1) {
			ok := true
			for c := range m {
				if x&(1<<c) == 0 {
					continue
				}
				p, in := bySet[x&^(1<<c)]
				ok = ok && in && p.ofdExact&(1<<c) == 0
			}
			if ok {
				want = append(want, x)
			}
		}
	}
	if got := nodeSets(next); !slices.Equal(got, want) {
		t.Fatalf("%s: next level after %d: %b, want %b", name, k, got, want)
	}
	for _, n := range next {
		if len(n.cols) != k+1 || bits.OnesCount64(n.set) != k+1 || len(n.parents) != k+1 {
			t.Fatalf("%s: node %v set %b with %d parents", name, n.cols, n.set, len(n.parents))
		}
		for j, p := range n.parents {
			if p != bySet[n.set&^(1<<n.cols[j])] {
				t.Fatalf("%s: node %v parent %d is %v", name, n.cols, j, p.cols)
			}
		}
		if len(n.ocValid) != (m*m*2+63)/64 {
			t.Fatalf("%s: node %v has %d OC words", name, n.cols, len(n.ocValid))
		}
	}
}

// lexSubsets returns the size-subsets of m columns as bit sets, in
// lexicographic order of their ascending column lists.
func lexSubsets(m, size int) []uint64 {
	var out []uint64
	var walk func(set uint64, from, left int)
	walk = func(set uint64, from, left int) {
		if left == 0 {
			out = append(out, set)
			return
		}
		for c := from; c < m; c++ {
			walk(set|1<<c, c+1, left-1)
		}
	}
	walk(0, 0, size)
	return out
}

// TestLatticeNextLevel checks nextLevel on random alive sets, wider than
// the tables of TestLatticeStepsMatchDefinitions make: any subset of a
// level's contexts, some with exact OFDs marked.
func TestLatticeNextLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 2021))
	for i := range 400 {
		m := 1 + rng.IntN(9)
		k := rng.IntN(m)
		cols := make([][]int, m)
		for c := range cols {
			cols[c] = []int{0}
		}
		l := newLattice(tableFromInts(cols), Options{})
		keep := rng.Float64()
		var alive []*latNode
		for _, x := range lexSubsets(m, k) {
			if rng.Float64() >= keep {
				continue
			}
			var cs []int
			for c := range m {
				if x&(1<<c) != 0 {
					cs = append(cs, c)
				}
			}
			n := l.newNode(cs, nil)
			if rng.IntN(4) == 0 {
				n.ofdExact = rng.Uint64() & l.all &^ n.set
			}
			alive = append(alive, n)
		}
		checkNextLevel(t, fmt.Sprintf("case %d (m %d, k %d, %d alive)", i, m, k, len(alive)), m, k, alive, l.nextLevel(alive, k))
	}
}

// TestLatticeInherit checks inherit on hand-made contexts: the parents'
// bits less the context's own columns, and the drop of a context where
// every OFD already holds.
func TestLatticeInherit(t *testing.T) {
	l := newLattice(tableFromInts([][]int{{0}, {0}, {0}, {0}}), Options{})
	p0, p1, p2 := l.newNode([]int{0}, nil), l.newNode([]int{1}, nil), l.newNode([]int{2}, nil)
	p0.ofdValid, p0.ofdExact = 0b0010, 0b0010                    // {c0}: [] -> c1 exactly
	p1.ofdValid, p1.ofdExact, p1.ofdRel = 0b0100, 0b0100, 0b0100 // {c1}: [] -> c2 exactly, reliable
	p2.ofdValid, p2.ofdRel = 0b1000, 0b1000                      // {c2}: [] -> c3 reliable
	x01 := l.newNode([]int{0, 1}, nil)
	x01.parents = []*latNode{p1, p0}
	x02 := l.newNode([]int{0, 2}, nil)
	x02.parents = []*latNode{p2, p0}
	x12 := l.newNode([]int{1, 2}, nil)
	x12.parents = []*latNode{p2, p1}
	got := l.inherit([]*latNode{x01, x02, x12})
	if want := []uint64{0b011, 0b110}; !slices.Equal(nodeSets(got), want) {
		t.Fatalf("kept %b, want %b ({c0,c2} has [] -> c1 from {c0} and -> c3 from {c2})", nodeSets(got), want)
	}
	if x01.ofdValid != 0b0100 || x01.ofdExact != 0b0100 || x01.ofdRel != 0b0100 {
		t.Errorf("{c0,c1}: valid %b exact %b reliable %b, want 100 100 100", x01.ofdValid, x01.ofdExact, x01.ofdRel)
	}
	if x12.ofdValid != 0b1000 || x12.ofdExact != 0 || x12.ofdRel != 0b1000 {
		t.Errorf("{c1,c2}: valid %b exact %b reliable %b, want 1000 0 1000", x12.ofdValid, x12.ofdExact, x12.ofdRel)
	}
}
