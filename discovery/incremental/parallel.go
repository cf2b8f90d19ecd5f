package incremental

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// A check (flush, settle, runRecounts) runs in phases, one after another;
// each phase's work splits into units that touch disjoint state, and the
// units of a phase run on the calling goroutine and, when the phase has
// enough work and there are two cores, on one more (spread). Per phase:
//
//   - phaseIntern, phaseRelease, phaseSettle: a unit is a column (in
//     colOrder); it writes that column's dictionary, counts and codes
//     only (and settle's its entries of switched and relabelled).
//   - phaseLeave, phaseEnter, phaseRebuild: a unit is a tree (nodeTree):
//     its nodes, the FDs applied with them, and the OCs whose context is
//     among them. A node's classes read its parent's (classesFor), an FD's
//     its nodes', and every one of them is in the tree, applied in the
//     tree's order, parents first. All units read the columns' codes and
//     ids, which no unit of these phases writes.
//   - phaseFit: a unit is one OC's fit test (e.fits; see ocCheck.fit),
//     with the scratch of the goroutine that runs it; it writes that OC's
//     state and reads the nodes and columns, which no unit writes.
//   - phaseRecount: a unit is one OC's recount (e.todo; see
//     ocCheck.recount), or, after them, the presorting of one OC that is
//     not recounted (e.presorts; see ocCheck.presort), with the scratch of
//     the goroutine that runs it; it writes that OC's state and reads the
//     nodes and columns, which no unit writes.
//
// Between phases the goroutines meet (a WaitGroup), so a phase sees all
// of the previous one's writes; state outside the units (the ring, the
// batch, the spreader) is written on the calling goroutine only, before
// or after a phase.
type checkPhase uint8

const (
	phaseIntern  checkPhase = iota // internColumn: the batched rows' values
	phaseLeave                     // nodeTree.leave: the rows that left
	phaseRelease                   // releaseColumn: the codes of the rows that left
	phaseEnter                     // nodeTree.enter: the rows that arrived
	phaseSettle                    // the column's settle
	phaseRebuild                   // nodeTree.rebuild: every row, into the stale nodes
	phaseFit                       // ocCheck.fit
	phaseRecount                   // ocCheck.recount
)

// spreader is the state of the phase running (see spread): written by the
// calling goroutine before the helper starts, read by both.
type spreader struct {
	phase checkPhase
	n     int  // units
	rows  span // the rows phaseLeave, phaseRelease and phaseEnter apply
	next  atomic.Int64
	wg    sync.WaitGroup
}

// span is the rows from..to-1 (sequence numbers).
type span struct{ from, to uint32 }

// spread runs units 0..n-1 of phase p, each once. With work at least
// least and two cores, the calling goroutine and a helper take the next
// unit in turn until none is left (the units are listed largest first,
// so the two end close together); else the caller runs them in order.
func (e *Engine) spread(p checkPhase, n, work, least int) {
	if n < 2 || work < least || runtime.GOMAXPROCS(0) < 2 {
		for i := range n {
			e.unit(p, 0, i)
		}
		return
	}
	s := &e.sp
	s.phase, s.n = p, n
	s.next.Store(0)
	s.wg.Add(1)
	go e.helpSpread()
	e.takeUnits(0)
	s.wg.Wait()
}

// helpSpread is the second goroutine of a phase.
func (e *Engine) helpSpread() {
	defer e.sp.wg.Done()
	e.takeUnits(1)
}

// takeUnits runs the phase's units that are left, as goroutine w (0 or
// 1), one at a time.
func (e *Engine) takeUnits(w int) {
	s := &e.sp
	for {
		i := int(s.next.Add(1)) - 1
		if i >= s.n {
			return
		}
		e.unit(s.phase, w, i)
	}
}

// unit runs unit i of phase p on goroutine w.
func (e *Engine) unit(p checkPhase, w, i int) {
	switch p {
	case phaseIntern:
		e.internColumn(e.colOrder[i])
	case phaseLeave:
		e.trees[i].leave(e, e.sp.rows)
	case phaseRelease:
		e.releaseColumn(e.colOrder[i], e.sp.rows)
	case phaseEnter:
		e.trees[i].enter(e, e.sp.rows)
	case phaseSettle:
		c := e.colOrder[i]
		e.switched[c], e.relabelled[c] = e.cols[c].Settle()
	case phaseRebuild:
		e.trees[i].rebuild(e)
	case phaseFit:
		e.fits[i].fit(e, &e.scratch[w])
	case phaseRecount:
		if i < len(e.todo) {
			e.todo[i].recount(e, &e.scratch[w])
		} else {
			e.presorts[i-len(e.todo)].presort(e, &e.scratch[w])
		}
	}
}

// nodeTree is a node without a parent (the empty list, or one column) with
// its descendants, parents first, the FDs whose X ∪ {A} is one of them
// (nd.fds; an FD's X is that node's parent, or the empty list, whose
// class is 0 whatever its state), and the OCs whose context is one of
// them: the state a row is applied to on one goroutine, in order.
type nodeTree struct {
	nodes  []*node
	ocs    []*ocCheck
	weight int        // about its cost per row: nodes, twice its FDs, its OCs
	stale  []*node    // the nodes rebuildNodes replays the window into
	fds    []*fdCheck // scratch of liveFDs
	batch  rowBatch   // scratch of enter and leave
}

// listTrees rebuilds e.trees from e.nodes, e.fds and e.ocs (listed),
// heaviest first.
func (e *Engine) listTrees() {
	at := map[*node]int{} // root → index in trees
	var trees []nodeTree
	root := func(nd *node) int {
		for nd.parent != nil {
			nd = nd.parent
		}
		i, ok := at[nd]
		if !ok {
			i = len(trees)
			at[nd] = i
			trees = append(trees, nodeTree{})
		}
		return i
	}
	for _, nd := range e.nodes {
		t := &trees[root(nd)]
		t.nodes = append(t.nodes, nd)
		t.weight += 1 + 2*len(nd.fds)
	}
	for _, o := range e.ocs {
		t := &trees[root(o.x)]
		t.ocs = append(t.ocs, o)
		t.weight++
	}
	slices.SortStableFunc(trees, func(x, y nodeTree) int { return cmp.Compare(y.weight, x.weight) })
	e.trees = trees
}

// leave applies the rows of rs, which are leaving, to t: each OC marks
// the classes they leave (as x still has them), then each node, a chunk
// of rows at a time, takes them off its classes' sizes, its FDs apply
// them, and it lets them go, one structure at a time.
func (t *nodeTree) leave(e *Engine, rs span) {
	t.touchOCs(e, rs, false)
	for _, nd := range t.nodes {
		if nd.stale {
			continue
		}
		fds := t.liveFDs(nd)
		for ch := rs.chunk(rs.from, e.tune.nodeChunk); ch.from != rs.to; ch = rs.chunk(ch.to, e.tune.nodeChunk) {
			nd.leaveRows(ch, e.mask, &t.batch)
			for _, f := range fds {
				f.leaveRows(ch, e.mask, &t.batch)
			}
			nd.dropRows(&t.batch)
		}
	}
}

// enter applies the rows of rs, which arrived, to t: each node takes them
// (parents first), a chunk of rows at a time, then its FDs; then each OC
// marks the classes they entered.
func (t *nodeTree) enter(e *Engine, rs span) {
	for _, nd := range t.nodes {
		if nd.stale {
			continue
		}
		fds := t.liveFDs(nd)
		for ch := rs.chunk(rs.from, e.tune.nodeChunk); ch.from != rs.to; ch = rs.chunk(ch.to, e.tune.nodeChunk) {
			nd.enterRows(ch, e.mask, &t.batch)
			for _, f := range fds {
				f.enterRows(&t.batch)
			}
		}
	}
	t.touchOCs(e, rs, true)
}

// chunk is the rows of rs from from on, at most n of them.
func (rs span) chunk(from uint32, n int) span {
	return span{from, from + min(rs.to-from, uint32(n))}
}

// liveFDs returns nd's FDs that are not stale (in t.fds).
func (t *nodeTree) liveFDs(nd *node) []*fdCheck {
	t.fds = t.fds[:0]
	for _, f := range nd.fds {
		if !f.stale && !f.x.stale {
			t.fds = append(t.fds, f)
		}
	}
	return t.fds
}

// touchOCs marks, in each of t's OCs that is not stale, the classes the
// rows of rs entered or leave.
func (t *nodeTree) touchOCs(e *Engine, rs span, entered bool) {
	for _, o := range t.ocs {
		if o.stale || o.x.stale {
			continue
		}
		for s := rs.from; s != rs.to; s++ {
			o.touch(e, o.x.class(s&e.mask), s, entered)
		}
	}
}

// rebuild replays the window's rows into t's stale nodes, a chunk of
// rows at a time (see enter), each chunk into every stale node in order,
// so that a parent has the chunk's classes before its children ask for
// them.
func (t *nodeTree) rebuild(e *Engine) {
	if len(t.stale) == 0 {
		return
	}
	rs := span{e.oldest, e.oldest + uint32(e.n)}
	for ch := rs.chunk(rs.from, e.tune.nodeChunk); ch.from != rs.to; ch = rs.chunk(ch.to, e.tune.nodeChunk) {
		for _, nd := range t.stale {
			nd.enterRows(ch, e.mask, &t.batch)
		}
	}
}
