package incremental

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery"
)

// TestIncrementalPruneKeepsWhatDepsUse: after each SetDependencies, with
// random sets of OFDs and OCs replacing each other, Engine.prune has
// kept exactly what the tracked dependencies use (their FDs, their OCs
// with the tracked polarities, their nodes and all ancestors), listed in
// order, with the columns ordered and the nodes keeping members exactly
// where an OC needs them.
func TestIncrementalPruneKeepsWhatDepsUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2021))
	names := []string{"a", "b", "c", "d", "e"}
	randomDep := func() discovery.Dependency {
		perm := rng.Perm(len(names))
		var ctx []string
		for _, i := range perm[2 : 2+rng.IntN(3)] {
			ctx = append(ctx, names[i])
		}
		if rng.IntN(2) == 0 {
			return discovery.Dependency{Kind: discovery.KindOFD, Context: ctx, RHS: names[perm[0]]}
		}
		a, b := min(perm[0], perm[1]), max(perm[0], perm[1])
		return discovery.Dependency{Kind: discovery.KindOC, Context: ctx, Left: names[a], Right: names[b], Polarity: discovery.Polarity(rng.IntN(2))}
	}
	e, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		deps := make([]discovery.Dependency, rng.IntN(7))
		for j := range deps {
			deps[j] = randomDep()
		}
		if err := e.SetDependencies(deps); err != nil {
			t.Fatal(err)
		}
		checkPruned(t, i, e)
	}
}

func checkPruned(t *testing.T, i int, e *Engine) {
	t.Helper()
	fds, nodes := map[*fdCheck]bool{}, map[*node]bool{}
	ocs := map[*ocCheck][2]bool{}
	mark := func(nd *node) {
		for ; nd != nil; nd = nd.parent {
			nodes[nd] = true
		}
	}
	for _, d := range e.deps {
		if d.fd != nil {
			fds[d.fd] = true
			mark(d.fd.x)
			mark(d.fd.xa)
		}
		if d.oc != nil {
			p := ocs[d.oc]
			p[boolIndex(d.desc)] = true
			ocs[d.oc] = p
			mark(d.oc.x)
		}
	}
	if len(e.fdBy) != len(fds) || len(e.fds) != len(fds) {
		t.Fatalf("set %d: %d FDs indexed, %d listed, %d used", i, len(e.fdBy), len(e.fds), len(fds))
	}
	for _, f := range e.fdBy {
		if !fds[f] {
			t.Fatalf("set %d: unused FD kept", i)
		}
	}
	if !slices.IsSortedFunc(e.fds, func(x, y *fdCheck) int { return strings.Compare(x.xa.key, y.xa.key) }) {
		t.Fatalf("set %d: FDs not in key order", i)
	}
	if len(e.ocBy) != len(ocs) || len(e.ocs) != len(ocs) {
		t.Fatalf("set %d: %d OCs indexed, %d listed, %d used", i, len(e.ocBy), len(e.ocs), len(ocs))
	}
	ordered := make([]bool, len(e.cols))
	members := map[*node]bool{}
	for _, o := range e.ocBy {
		pol, ok := ocs[o]
		if !ok || o.asc != pol[0] || o.desc != pol[1] {
			t.Fatalf("set %d: OC kept %v with asc %v desc %v, tracked %v", i, ok, o.asc, o.desc, pol)
		}
		ordered[o.a], ordered[o.b] = true, true
		members[o.x] = true
	}
	ocKey := func(o *ocCheck) string { return o.x.key + "|" + strconv.Itoa(o.a) + "~" + strconv.Itoa(o.b) }
	if !slices.IsSortedFunc(e.ocs, func(x, y *ocCheck) int { return strings.Compare(ocKey(x), ocKey(y)) }) {
		t.Fatalf("set %d: OCs not in order", i)
	}
	for c, col := range e.cols {
		if col.Ordered != ordered[c] {
			t.Fatalf("set %d: column %s ordered %v, compared by an OC %v", i, col.Name, col.Ordered, ordered[c])
		}
	}
	if len(e.nodeBy) != len(nodes) || len(e.nodes) != len(nodes) {
		t.Fatalf("set %d: %d nodes indexed, %d listed, %d used", i, len(e.nodeBy), len(e.nodes), len(nodes))
	}
	for k, nd := range e.nodes {
		if !nodes[nd] || e.nodeBy[nd.key] != nd {
			t.Fatalf("set %d: node %q listed but not used or not indexed", i, nd.key)
		}
		if k > 0 {
			if p := e.nodes[k-1]; len(p.cols) > len(nd.cols) || len(p.cols) == len(nd.cols) && p.key >= nd.key {
				t.Fatalf("set %d: node %q listed after %q", i, nd.key, p.key)
			}
		}
		if nd.withMembers != members[nd] || !nd.withMembers && nd.members != nil {
			t.Fatalf("set %d: node %q keeps members %v, an OC's context %v", i, nd.key, nd.withMembers, members[nd])
		}
		var own []*fdCheck
		for _, f := range e.fds {
			if f.xa == nd {
				own = append(own, f)
			}
		}
		if !slices.Equal(nd.fds, own) {
			t.Fatalf("set %d: node %q has %d FDs, is X ∪ {A} of %d", i, nd.key, len(nd.fds), len(own))
		}
	}
}
