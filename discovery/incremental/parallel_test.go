package incremental

import "testing"

// TestIncrementalTreesPartition checks what lets a check apply rows to its
// trees on two goroutines (see nodeTree): every node is in exactly one
// tree, after its parent; an FD is applied at its X ∪ {A}, whose tree
// holds its X too unless X is the empty list; an OC is in its context's
// tree; trees come heaviest first.
func TestIncrementalTreesPartition(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		g := newIncGen(seed, 3+int(seed%5))
		e, err := New(g.deps(1+g.r.IntN(15)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetDependencies(g.deps(1 + g.r.IntN(15))); err != nil {
			t.Fatal(err) // trees rebuilt after a change of dependencies
		}
		checkTrees(t, e)
	}
	e, err := New(benchDeps(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkTrees(t, e)
	if len(e.trees) < 2 {
		t.Fatalf("BenchmarkCheck's dependencies make %d tree(s): nothing to spread", len(e.trees))
	}
}

func checkTrees(t *testing.T, e *Engine) {
	t.Helper()
	treeOf := map[*node]int{}
	for i, tr := range e.trees {
		if i > 0 && tr.weight > e.trees[i-1].weight {
			t.Fatalf("tree %d weighs %d, more than tree %d (%d)", i, tr.weight, i-1, e.trees[i-1].weight)
		}
		for _, nd := range tr.nodes {
			if _, dup := treeOf[nd]; dup {
				t.Fatalf("node %q in two trees", nd.key)
			}
			if nd.parent != nil {
				if p, ok := treeOf[nd.parent]; !ok || p != i {
					t.Fatalf("node %q listed before its parent %q, or in another tree", nd.key, nd.parent.key)
				}
			}
			treeOf[nd] = i
		}
	}
	if len(treeOf) != len(e.nodes) {
		t.Fatalf("%d nodes in trees, %d tracked", len(treeOf), len(e.nodes))
	}
	for _, f := range e.fds {
		if f.x.last >= 0 && (f.xa.parent != f.x || treeOf[f.x] != treeOf[f.xa]) {
			t.Fatalf("FD %q -> %q: X is not the parent of X ∪ {A} in its tree", f.x.key, f.xa.key)
		}
	}
	ocs := 0
	for i, tr := range e.trees {
		for _, o := range tr.ocs {
			if treeOf[o.x] != i {
				t.Fatalf("OC on %q in tree %d, its context in tree %d", o.x.key, i, treeOf[o.x])
			}
			ocs++
		}
	}
	if ocs != len(e.ocs) {
		t.Fatalf("%d OCs in trees, %d tracked", ocs, len(e.ocs))
	}
}
