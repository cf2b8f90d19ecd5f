package incremental

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/incremental/internal/dict"
	"github.com/odwatch/odwatch/discovery/table"
)

// Engine keeps the removal counts of a set of dependencies (OFDs and
// OCs) over a sliding window whose records arrive at one end (Append) and
// leave from the other (Evict), so that re-checking them costs about what
// changed, not the window's size. After Check, every dependency's count
// equals what Validate gives on the window's table (see
// Result.Exact for the counts a check may skip).
//
// Per context X (a list of columns) it keeps the partition of the window
// into classes (node), updated per row. An OFD X: [] -> A keeps, per
// class of X, the count of each value of A (the classes of X+A) and a
// count-of-counts that keeps the largest exact under decrements (fdCheck):
// its count is exact after every row, at O(1) per row. An OC X: A ~ B
// marks the classes of X a row entered or left, and a check recomputes the
// LNDS of those classes only (ocCheck).
//
// Skip what cannot change: a row entering or leaving changes a
// dependency's minimal removal count by at most one (for g3 and LNDS
// alike), so an OC whose last exact count is r may now count anything in
// [r - left, r + entered], left and entered counting the rows since. A
// check given the cuts its caller compares counts with (e.g. floor((eps +
// margin) * n)) skips an OC whose bounds lie on one side of every cut: its
// verdict cannot have changed. It never skips once MaxStale rows changed.
// The upper bound is tighter than one per row entered: a row that entered
// and is consistent with a largest consistent subset of its class kept
// from the last recount, and with the rows accepted so far, cannot raise
// the count, so the bound grows by the rows not accepted only (the fit
// bound: see fit.go). An OC that the plain bounds would
// recount has its new rows tested so before it is decided.
//
// Values are strings as the window holds them (AppendCoded takes the
// caller's dictionary codes with them, and spares hashing a value whose
// string it has seen); a column's values are typed as EncodeTyped types
// them with Options.Typing (numeric when every value in the
// window parses as a number, temporal when every one is an ISO 8601 date
// or timestamp, else text in byte order), and the typing follows the
// window: a text value arriving in a numeric column rebuilds the state
// that depends on that column at the next check.
//
// An Engine is not safe for concurrent use. A check may run its
// phases (interning, applying rows, settling columns, fit tests,
// recounting OCs) on
// two goroutines of its own, each phase split into units that touch
// disjoint state (see checkPhase).
type Engine struct {
	structures
	deps []dep
	// prep are the dependencies kept up to date without being reported
	// (Prepare); tracked and prepOCs split e.ocs into the OCs a tracked
	// dependency uses and the others (see prune); restarts are the OCs
	// whose counts start over at the next check (see startOver), true for
	// those newly tracked; builds is what the last check built (LastBuilds).
	prep       []dep
	trackedOCs []*ocCheck
	prepOCs    []*ocCheck
	restarts   map[*ocCheck]bool
	builds     Builds
	ringCounts [][]uint32 // Ring's counts, kept for the next call
	// keyClass and keySeen are KeyRemovals' arrays, kept for the next call:
	// a stream's key is counted at every check.
	keyClass []uint32
	keySeen  []bool

	ring

	typing    table.Typing
	exact     bool
	sortedMin int
	maxStale  int
	// recountBudget is Options.RecountBudget; credit the rows
	// early recounts may still read (see recountOCs); entered and left
	// count the rows applied to the structures since the last check.
	recountBudget, credit int
	entered, left         int
	// recounted is the rows the last check's recounts read (for the
	// benchmarks: a measure of a check's recounts that load does not
	// blur).
	recounted int

	batch
	checkWork
	phases
	tune tuning
}

// structures are the columns, partitions, FD counts and OCs the tracked
// and prepared dependencies use, each listed and keyed (see listKey and
// ocKey) so that dependencies sharing one share its state.
type structures struct {
	cols   []*dict.Column
	colIdx map[string]int
	nodes  []*node // parents before children
	nodeBy map[string]*node
	fds    []*fdCheck
	fdBy   map[string]*fdCheck
	ocs    []*ocCheck
	ocBy   map[string]*ocCheck
}

// ring is the window's rows: row seq (mod 2^32) lives in slot seq & mask;
// rows are oldest .. oldest+n-1. The structures reflect rows from .. to-1
// (see flush).
type ring struct {
	oldest   uint32
	n        int
	mask     uint32
	from, to uint32
}

// batch is the values of the rows appended since the last flush,
// batchWidth a row (see internBatch), with the caller's codes
// (AppendCoded; dict.NoHint from Append); code 0 is NULL.
type batch struct {
	batchVals             []string
	batchCodes            []uint32
	batchRows, batchWidth int
	batchFirst            uint32 // seq of the first batched row
}

// checkWork is what one check recounts: the OCs (see runRecounts) with the
// scratch of each of the recounts that run at once, the OCs whose rows
// that entered it tests (fits, see ocCheck.fit) and those it presorts
// (presorts, see runRecounts).
type checkWork struct {
	todo     []*ocCheck
	scratch  [2]recountScratch
	fits     []*ocCheck
	presorts []*ocCheck
}

// phases is how a check's phases are split: trees are the units rows are
// applied to (see nodeTree), colOrder the order the column phases take the
// columns in (see orderColumns), sp the phase running (see spread);
// switched and relabelled are settle's.
type phases struct {
	trees                []nodeTree
	colOrder             []int
	sp                   spreader
	switched, relabelled []bool
}

type dep struct {
	dep  discovery.Dependency
	cols []int // every column it mentions
	fd   *fdCheck
	oc   *ocCheck
	desc bool
}

// Options tune an Engine.
type Options struct {
	// Exact disables skipping: every check recounts every OC a row entered
	// or left (for tests and measurements).
	Exact bool
	// SortedMin is the class size from which an OC keeps the class's rows
	// sorted between checks; 0 means defaultSortedMin.
	SortedMin int
	// MaxStale bounds the number of changed rows after which an OC is
	// recounted whatever the cuts (the OCs' limits are spread over
	// [MaxStale/2, MaxStale]); 0 means the window's row count, at most
	// 200,000 (defaultMaxStaleRows). An OC that skips keeps the rows that
	// changed since its last recount (about 50 bytes each), so the limit
	// bounds that backlog.
	MaxStale int
	// RecountBudget is the rows of early recounts a check adds to the
	// credit, in OCs whose count could still be skipped (see recountOCs);
	// 0 means the rows the skippable OCs need per check to be recounted
	// before they are forced, negative no early recounts.
	RecountBudget int
	// Typing types the columns as EncodeTyped does. Ordinal declarations
	// with a list of values are not supported (New fails).
	Typing table.Typing
}

// defaultSortedMin is Options.SortedMin's default: below it, a
// class is cheaper to sort again than to keep sorted.
const defaultSortedMin = 16

// defaultMaxStaleRows caps Options.MaxStale's default (the
// window's rows): the changed rows after which an OC that could still skip
// is recounted. An OC that skips holds a backlog per changed row (the
// pending row, its pair in adds or dead, its pair in A per polarity), so
// on a large window whose holding OCs could skip until a window's worth of
// rows changed the backlogs would add up to hundreds of megabytes; 200k
// changed rows are 100 checks of a 1k-record slide, and a recount of a
// 1M-row class every 50-100 checks costs little per check.
const defaultMaxStaleRows = 200_000

// recountChangeNs is about the time a recount spends per row that entered
// or left its classes since the last one (see runRecounts).
const recountChangeNs = 60

// initialSlots is the ring's first capacity (a power of two).
const initialSlots = 1024

// Result is one dependency's count after a check.
type Result struct {
	Dependency discovery.Dependency
	// Removals is the exact minimal removal count when Exact; when the
	// check skipped the dependency it is the last exact count, and the
	// current one lies in [Low, High], on the same side of every cut.
	Removals  int
	Exact     bool
	Low, High int
	// Present says every column the dependency mentions has a non-NULL
	// value in the window.
	Present bool
}

// Builds is what a check built from the whole window rather
// than from the rows that changed: partitions (nodes) replayed, FD blocks
// rebuilt, OCs whose classes were sorted again from their members
// (Rebuilt), and OCs recounted in full from the sorted classes they kept
// (Restarted: newly tracked ones that were prepared; see Prepare).
type Builds struct {
	Nodes, FDs, Rebuilt, Restarted int
}

// LastBuilds reports what the last Check built (see Builds).
func (e *Engine) LastBuilds() Builds { return e.builds }

// New returns an empty window tracking deps (OFDs and OCs; a
// list-based OD is refused with ErrBadDependency).
func New(deps []discovery.Dependency, opts Options) (*Engine, error) {
	e := &Engine{
		structures: structures{
			colIdx: map[string]int{},
			nodeBy: map[string]*node{},
			fdBy:   map[string]*fdCheck{},
			ocBy:   map[string]*ocCheck{},
		},
		restarts:  map[*ocCheck]bool{},
		ring:      ring{mask: initialSlots - 1},
		typing:    opts.Typing,
		exact:     opts.Exact,
		sortedMin: opts.SortedMin,
		maxStale:  opts.MaxStale,

		recountBudget: opts.RecountBudget,
		tune:          defaultTuning(),
	}
	if e.sortedMin <= 0 {
		e.sortedMin = defaultSortedMin
	}
	for name, list := range opts.Typing.Ordinal {
		if len(list) > 0 {
			return nil, fmt.Errorf("%w: column %q: an order by a list of values is not checked incrementally", table.ErrOrdinal, name)
		}
	}
	if err := e.SetDependencies(deps); err != nil {
		return nil, err
	}
	return e, nil
}

// Len is the number of rows in the window.
func (e *Engine) Len() int { return e.n }

// Column returns the index of the named column in the rows Append takes,
// adding it (NULL in the rows already in the window) if it is new.
func (e *Engine) Column(name string) int {
	if i, ok := e.colIdx[name]; ok {
		return i
	}
	e.internBatch() // the rows batched so far have no value in it
	e.colIdx[name] = len(e.cols)
	_, declared := e.typing.Ordinal[name]
	e.cols = append(e.cols, dict.NewColumn(name, int(e.mask)+1, !e.typing.OrderText && !declared, e.tune.column))
	return len(e.cols) - 1
}

// Columns returns the column names in Append's order.
func (e *Engine) Columns() []string {
	out := make([]string, len(e.cols))
	for i, c := range e.cols {
		out[i] = c.Name
	}
	return out
}

func (e *Engine) alive(seq uint32) bool { return seq-e.oldest < uint32(e.n) }

// SetDependencies replaces the tracked dependencies. State shared with the
// previous set is kept; the state of new ones is built from the rows in
// the window at the next Check, unless Prepare built it ahead. The
// prepared dependencies that Prepare would no longer keep with the new
// tracked set are dropped.
//
// A dependency's reported counts do not depend on whether or when it was
// prepared: a newly tracked OC starts over at the next check (startOver)
// as a new one would, from its prepared sorted classes instead of a sort
// of the window, and what a newly tracked OC makes the rest start over
// without Prepare (its context starting to keep member lists: a rebuild of
// the context and its descendants) it makes them start over with Prepare
// too (promote).
func (e *Engine) SetDependencies(deps []discovery.Dependency) error {
	out := make([]dep, 0, len(deps))
	for _, d := range deps {
		dd, err := e.dependency(d)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		out = append(out, dd)
	}
	was := map[*ocCheck]bool{}
	for _, o := range e.trackedOCs {
		was[o] = true
	}
	e.deps = out
	// What Prepare may keep depends on the tracked set (a prepared OC on
	// a text column needs a tracked OC ordering it): the prepared set is
	// chosen again, as Prepare would choose it now.
	prepared := make([]discovery.Dependency, len(e.prep))
	for i, d := range e.prep {
		prepared[i] = d.dep
	}
	if err := e.choosePrepared(prepared); err != nil {
		return err // none: Prepare took each of them
	}
	e.prune()
	e.promote(was)
	return nil
}

// promote schedules the restarts that make the tracked OCs count as they
// would had nothing been prepared, was being the OCs tracked before: an
// OC newly tracked starts over as a new one (its history forgotten), and
// when a newly tracked OC's context already kept member lists (for a
// prepared OC) and no tracked OC's context was it before, every tracked
// OC in its subtree starts over, as it would after the rebuild that
// starting to keep members is (see listNodes).
func (e *Engine) promote(was map[*ocCheck]bool) {
	wasContext := map[*node]bool{}
	for o := range was {
		wasContext[o.x] = true
	}
	gained := map[*node]bool{}
	for _, o := range e.trackedOCs {
		if !was[o] {
			e.restarts[o] = true
			if !wasContext[o.x] && !o.x.stale {
				gained[o.x] = true
			}
		}
	}
	if len(gained) == 0 {
		return
	}
	for _, o := range e.trackedOCs {
		for nd := o.x; nd != nil; nd = nd.parent {
			if gained[nd] {
				if _, ok := e.restarts[o]; !ok {
					e.restarts[o] = false // history kept, as a rebuild keeps it
				}
				break
			}
		}
	}
}

// Prepare keeps the state of deps (OFDs and OCs) up to date from the next
// Check on without reporting them (Check returns the tracked ones only),
// so that a SetDependencies that tracks them later finds their partitions,
// FD blocks and OCs' sorted classes built, and the check after it costs
// about what changed. It replaces the previously prepared set and returns
// how many of deps it prepares. It leaves out, for SetDependencies to
// build, the ones whose state would change the tracked dependencies'
// (their counts must not depend on what was prepared, or when):
//   - the tracked ones, and OCs whose columns and context a tracked OC of
//     the other polarity shares;
//   - those mentioning a column the engine does not know (adding one
//     renumbers nothing, but it is not Prepare's to add);
//   - OCs comparing a column no tracked OC orders unless it is numeric
//     (ordering a column labels it, and its labels' history would change
//     the tracked OCs' restarts after it is tracked);
//   - OCs whose context would start keeping member lists while a tracked
//     OC's context lies in its subtree (the rebuild would restart it).
//
// A prepared OC is counted in full once built and then only when its
// changed rows pass MaxStale; between, the rows that entered are presorted
// as a skipped OC's are. It takes no part in the tracked OCs' recount
// schedule.
func (e *Engine) Prepare(deps []discovery.Dependency) (int, error) {
	if err := e.choosePrepared(deps); err != nil {
		return 0, err
	}
	e.prune()
	return len(e.prep), nil
}

// choosePrepared sets e.prep to the dependencies of deps Prepare keeps,
// given the tracked ones (see Prepare).
func (e *Engine) choosePrepared(deps []discovery.Dependency) error {
	v := prepView{ids: map[string]bool{}, ordered: make([]bool, len(e.cols)), ocs: map[*ocCheck]bool{},
		context: map[*node]bool{}, under: map[*node]bool{}}
	for _, d := range e.deps {
		v.ids[d.dep.String()] = true
		if d.oc != nil {
			v.ordered[d.oc.a], v.ordered[d.oc.b] = true, true
			v.ocs[d.oc], v.context[d.oc.x] = true, true
			for nd := d.oc.x; nd != nil && !v.under[nd]; nd = nd.parent {
				v.under[nd] = true
			}
		}
	}
	out := make([]dep, 0, len(deps))
	for _, d := range deps {
		if d.Kind != discovery.KindOFD && d.Kind != discovery.KindOC {
			return fmt.Errorf("%s: %w: only OFDs and OCs are checked incrementally, not %v", d, discovery.ErrBadDependency, d.Kind)
		}
		if v.ids[d.String()] || !e.preparable(d, &v) {
			continue
		}
		dd, err := e.dependency(d)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		out = append(out, dd)
	}
	e.prep = out
	return nil
}

// prepView is what Prepare's choice depends on: the tracked dependencies'
// ids, the columns tracked OCs compare, the tracked OCs, their contexts,
// and those contexts with their ancestors (under).
type prepView struct {
	ids            map[string]bool
	ordered        []bool
	ocs            map[*ocCheck]bool
	context, under map[*node]bool
}

// preparable reports whether Prepare may keep d's state (see Prepare).
func (e *Engine) preparable(d discovery.Dependency, v *prepView) bool {
	ctx := make([]int, 0, len(d.Context))
	for _, name := range d.Context {
		i, ok := e.colIdx[name]
		if !ok {
			return false
		}
		ctx = append(ctx, i)
	}
	slices.Sort(ctx)
	ctx = slices.Compact(ctx)
	if d.Kind == discovery.KindOFD {
		_, ok := e.colIdx[d.RHS]
		return ok
	}
	a, okA := e.colIdx[d.Left]
	b, okB := e.colIdx[d.Right]
	if !okA || !okB {
		return false
	}
	for _, c := range []int{a, b} {
		if !v.ordered[c] && e.cols[c].Mode != dict.Numeric {
			return false
		}
	}
	if b < a {
		a, b = b, a
	}
	ctxKey := listKey(ctx)
	if o, ok := e.ocBy[ocKey(ctxKey, a, b)]; ok && v.ocs[o] {
		return false // tracked with the other polarity
	}
	nd, ok := e.nodeBy[ctxKey]
	return !ok || nd.withMembers || v.context[nd] || !v.under[nd]
}

func (e *Engine) dependency(d discovery.Dependency) (dep, error) {
	dd := dep{dep: d, desc: d.Polarity == discovery.Desc}
	ctx := make([]int, 0, len(d.Context))
	for _, name := range d.Context {
		ctx = append(ctx, e.Column(name))
	}
	slices.Sort(ctx)
	ctx = slices.Compact(ctx)
	dd.cols = append(dd.cols, ctx...)
	switch d.Kind {
	case discovery.KindOFD:
		a := e.Column(d.RHS)
		dd.cols = append(dd.cols, a)
		dd.fd = e.fd(ctx, a)
	case discovery.KindOC:
		a, b := e.Column(d.Left), e.Column(d.Right)
		dd.cols = append(dd.cols, a, b)
		dd.oc = e.oc(ctx, a, b, dd.desc)
	default:
		return dep{}, fmt.Errorf("%w: only OFDs and OCs are checked incrementally, not %v", discovery.ErrBadDependency, d.Kind)
	}
	return dd, nil
}

func listKey(cols []int) string {
	var sb strings.Builder
	for i, c := range cols {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(c))
	}
	return sb.String()
}

// node returns the node of the column list, creating it and its ancestors.
func (e *Engine) node(cols []int) *node {
	key := listKey(cols)
	if nd, ok := e.nodeBy[key]; ok {
		return nd
	}
	nd := &node{key: key, cols: slices.Clone(cols), last: -1, stale: true}
	if len(cols) > 0 {
		nd.last = cols[len(cols)-1]
		nd.lastCol = e.cols[nd.last]
	}
	if len(cols) > 1 {
		nd.parent = e.node(cols[:len(cols)-1])
		nd.classOf = make([]uint32, int(e.mask)+1)
	}
	e.nodeBy[key] = nd
	return nd
}

func (e *Engine) fd(ctx []int, a int) *fdCheck {
	key := listKey(ctx) + "|" + strconv.Itoa(a)
	if f, ok := e.fdBy[key]; ok {
		return f
	}
	f := &fdCheck{x: e.node(ctx), xa: e.node(append(slices.Clone(ctx), a)), stale: true}
	e.fdBy[key] = f
	return f
}

// ocKey is the key in ocBy of the OC of columns a < b in the context
// whose listKey is ctxKey.
func ocKey(ctxKey string, a, b int) string {
	return ctxKey + "|" + strconv.Itoa(a) + "~" + strconv.Itoa(b)
}

func (e *Engine) oc(ctx []int, a, b int, desc bool) *ocCheck {
	if b < a {
		a, b = b, a // the removals of A ~ B and B ~ A are the same
	}
	key := ocKey(listKey(ctx), a, b)
	o, ok := e.ocBy[key]
	if !ok {
		o = &ocCheck{x: e.node(ctx), a: a, b: b, stale: true}
		o.forget() // a new OC's history
		e.ocBy[key] = o
	}
	if desc && !o.desc || !desc && !o.asc {
		// A polarity not counted so far: count every class again.
		o.stale = true
	}
	if desc {
		o.desc = true
	} else {
		o.asc = true
	}
	return o
}

// prune drops the state no dependency uses any more and orders the rest:
// it finds what the dependencies use (used), drops the rest from the
// indexes (dropUnused), and rebuilds the ordered lists the checks walk
// (listFDs, listOCs, listNodes, listTrees).
func (e *Engine) prune() {
	u := e.used()
	e.dropUnused(u)
	e.listFDs()
	members := e.listOCs(u)
	e.listNodes(members)
	e.listTrees()
}

// usage is what the tracked and prepared dependencies use: their FDs,
// their OCs with the polarities counted of each (a tracked OC's tracked
// ones only), and the nodes of both with all their ancestors; tracked are
// the OCs a tracked dependency uses.
type usage struct {
	fds     map[*fdCheck]bool
	ocs     map[*ocCheck][2]bool // asc, desc
	nodes   map[*node]bool
	tracked map[*ocCheck]bool
}

// used returns what e.deps and e.prep use.
func (e *Engine) used() usage {
	u := usage{fds: map[*fdCheck]bool{}, ocs: map[*ocCheck][2]bool{}, nodes: map[*node]bool{}, tracked: map[*ocCheck]bool{}}
	mark := func(nd *node) {
		for ; nd != nil && !u.nodes[nd]; nd = nd.parent {
			u.nodes[nd] = true
		}
	}
	use := func(deps []dep, tracked bool) {
		for _, d := range deps {
			if d.fd != nil {
				u.fds[d.fd] = true
				mark(d.fd.x)
				mark(d.fd.xa)
			}
			if d.oc != nil && (tracked || !u.tracked[d.oc]) {
				mark(d.oc.x)
				p := u.ocs[d.oc]
				p[boolIndex(d.desc)] = true
				u.ocs[d.oc] = p
				u.tracked[d.oc] = u.tracked[d.oc] || tracked
			}
		}
	}
	use(e.deps, true)
	use(e.prep, false)
	return u
}

// dropUnused deletes from fdBy, ocBy and nodeBy what u does not hold, and
// sets each OC's polarities to the counted ones.
func (e *Engine) dropUnused(u usage) {
	for k, f := range e.fdBy {
		if !u.fds[f] {
			delete(e.fdBy, k)
		}
	}
	for k, o := range e.ocBy {
		if pol, ok := u.ocs[o]; !ok {
			delete(e.ocBy, k)
		} else {
			if pol[0] && !o.asc || pol[1] && !o.desc {
				o.stale = true // a polarity not counted so far (a prepared one)
			}
			o.asc, o.desc = pol[0], pol[1]
		}
	}
	for k, nd := range e.nodeBy {
		if !u.nodes[nd] {
			delete(e.nodeBy, k)
		}
	}
}

// listFDs rebuilds e.fds from fdBy, by the key of X ∪ {A}.
func (e *Engine) listFDs() {
	e.fds = e.fds[:0]
	for _, f := range e.fdBy {
		e.fds = append(e.fds, f)
	}
	slices.SortFunc(e.fds, func(x, y *fdCheck) int {
		return strings.Compare(x.xa.key, y.xa.key)
	})
}

// listOCs rebuilds e.ocs from ocBy, by context and columns, and of them
// trackedOCs (those in u.tracked) and prepOCs (the others), marks ordered
// exactly the columns a tracked OC compares (a prepared one compares
// numeric or ordered columns: see Prepare), and returns the OCs'
// contexts: the nodes that keep their classes' members.
func (e *Engine) listOCs(u usage) map[*node]bool {
	e.ocs = e.ocs[:0]
	ordered := make([]bool, len(e.cols))
	members := map[*node]bool{}
	for _, o := range e.ocBy {
		e.ocs = append(e.ocs, o)
		if u.tracked[o] {
			ordered[o.a], ordered[o.b] = true, true
		}
		members[o.x] = true
	}
	for i, c := range e.cols {
		c.Ordered = ordered[i]
	}
	slices.SortFunc(e.ocs, func(x, y *ocCheck) int {
		return strings.Compare(ocKey(x.x.key, x.a, x.b), ocKey(y.x.key, y.a, y.b))
	})
	e.trackedOCs, e.prepOCs = e.trackedOCs[:0], e.prepOCs[:0]
	for _, o := range e.ocs {
		if u.tracked[o] {
			e.trackedOCs = append(e.trackedOCs, o)
		} else {
			e.prepOCs = append(e.prepOCs, o)
		}
	}
	return members
}

// listNodes rebuilds e.nodes from nodeBy, parents (shorter lists) first
// and then by key, giving each node the FDs whose X ∪ {A} it is (e.fds
// must be listed) and keeping members at exactly the nodes in members; a
// node that starts keeping them is stale.
func (e *Engine) listNodes(members map[*node]bool) {
	e.nodes = e.nodes[:0]
	fdsOf := map[*node][]*fdCheck{}
	for _, f := range e.fds {
		fdsOf[f.xa] = append(fdsOf[f.xa], f)
	}
	for _, nd := range e.nodeBy {
		nd.fds = fdsOf[nd]
		if members[nd] && !nd.withMembers {
			nd.withMembers, nd.stale = true, true
		}
		nd.withMembers = members[nd]
		if !nd.withMembers {
			nd.members = nil
		}
		e.nodes = append(e.nodes, nd)
	}
	slices.SortFunc(e.nodes, func(x, y *node) int {
		if len(x.cols) != len(y.cols) {
			return len(x.cols) - len(y.cols)
		}
		return strings.Compare(x.key, y.key)
	})
}

// boolIndex is 1 for true, 0 for false (compiled without a branch).
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Append adds a row at the newest end: values[i] is the value of column i
// (see Column); null[i] (when null is not nil) makes it NULL, and so do
// columns past len(values). An empty string that is not NULL is a value,
// as it is in a window's dictionary. Strings are kept as given.
//
// Append and Evict only store the rows; the dictionaries take the batch
// of new values, and the partitions and counts the whole batch of changes,
// at the next Check (flush), one structure at a time, which keeps each
// structure's memory hot.
func (e *Engine) Append(values []string, null []bool) {
	width := e.beginRow()
	for i := range width {
		var v string
		code := uint32(0)
		if i < len(values) && (null == nil || !null[i]) {
			v, code = values[i], dict.NoHint
		}
		e.batchVals = append(e.batchVals, v)
		e.batchCodes = append(e.batchCodes, code)
	}
	e.endRow()
}

// AppendCoded is Append for a caller that holds its rows dictionary-coded
// (a window's columns, a DictColumn): codes[i] is the caller's code of
// column i's value, 0 for NULL (so are columns past len(codes)), and
// values[i] is that value (read only when codes[i] is not 0), the string
// the caller's dictionary holds for it. It saves hashing and comparing
// each value: per column the engine remembers the code a caller code last
// stood for and takes it again when the value given is the very string
// that code holds (the same address and length, never a copy), so a
// caller that hands over the strings of its dictionary pays for a lookup
// only when a value is new.
//
// The caller's code is only a hint; the string decides. Reusing a code
// for another value (after its last row left the caller's window, even
// while rows with its old value are still in the engine, as when a
// checker applies its jobs behind the window that made them) or handing
// over codes of different dictionaries to one column is therefore sound:
// the new value is another string, the hint misses, and the value is
// looked up by hash as Append does (see Column.holds for why a match is
// never wrong). The one assumption is Go's own: a string's bytes do not
// change (no unsafe.String over a buffer that is reused). Codes should be
// dense (indexes into a dictionary): the hints take 4 bytes per code up to
// the largest one seen.
func (e *Engine) AppendCoded(values []string, codes []uint32) {
	width := e.beginRow()
	for i := range width {
		var v string
		var code uint32
		if i < len(codes) {
			code = codes[i]
		}
		if code != 0 {
			v = values[i]
		}
		e.batchVals = append(e.batchVals, v)
		e.batchCodes = append(e.batchCodes, code)
	}
	e.endRow()
}

// beginRow makes room for a row in the ring and the batch, and returns
// the row's width (the columns so far).
func (e *Engine) beginRow() int {
	if e.n == int(e.mask)+1 {
		e.flush()
		e.grow()
	}
	seq := e.oldest + uint32(e.n)
	if seq-e.from > e.mask {
		e.flush() // the slot still holds a row that left and is not flushed
	}
	width := len(e.cols)
	if e.batchRows == 0 {
		e.batchFirst, e.batchWidth = seq, width
	}
	return width
}

// endRow counts the row beginRow began, whose values are batched.
func (e *Engine) endRow() {
	e.batchRows++
	e.n++
	if e.batchRows >= e.tune.batchRows {
		e.internBatch() // a bounded batch: a window filled at once does not hold every value twice
	}
}

// internBatch interns the values of the rows appended since the last
// flush, column by column (one column's dictionary at a time stays in the
// cache, where row by row the columns' dictionaries evicted each other),
// and writes their codes into the ring; the columns are independent, so
// they may be spread over two goroutines (phaseIntern).
func (e *Engine) internBatch() {
	if e.batchRows == 0 {
		return
	}
	// The batch's rows have every column: Column interns them first.
	if len(e.colOrder) != len(e.cols) {
		e.orderColumns() // a column came since the last flush
	}
	e.spread(phaseIntern, e.batchWidth, e.batchRows*e.batchWidth, e.tune.flushParallelMin)
	clear(e.batchVals) // do not hold the strings of rows that left
	e.batchVals, e.batchCodes, e.batchRows = e.batchVals[:0], e.batchCodes[:0], 0
}

// orderColumns lists the columns in colOrder, most values first (each
// flush does): a column costs the column phases about its dictionary's
// size (cache misses, new values), and when the largest come first the
// two goroutines end close together.
func (e *Engine) orderColumns() {
	e.colOrder = e.colOrder[:0]
	for i := range e.cols {
		e.colOrder = append(e.colOrder, i)
	}
	slices.SortStableFunc(e.colOrder, func(x, y int) int {
		return cmp.Compare(len(e.cols[y].Vals), len(e.cols[x].Vals))
	})
}

// internColumn interns column i's values of the batched rows and writes
// their codes into its ring (dict.Column.InternCodedRun, which loads
// ahead what the interns read). Rows that left since the last flush keep
// their slots (and codes) until the flush releases them.
func (e *Engine) internColumn(i int) {
	if e.batchRows > 0 {
		e.cols[i].InternCodedRun(e.batchCodes[i:], e.batchVals[i:], e.batchWidth, e.batchRows, e.batchFirst, e.mask)
	}
}

// releaseColumn lets column i's codes of the rows of rs go.
func (e *Engine) releaseColumn(i int, rs span) {
	c := e.cols[i]
	for s := rs.from; s != rs.to; s++ {
		slot := s & e.mask
		if code := c.Codes[slot]; code != 0 {
			c.Release(code)
			c.Codes[slot] = 0
		}
	}
}

// Evict removes the k oldest rows (all of them when k >= Len).
func (e *Engine) Evict(k int) {
	k = min(max(k, 0), e.n)
	e.oldest += uint32(k)
	e.n -= k
}

// flush applies the rows that left since the last flush, then the rows
// that arrived, to every structure that is not stale. The structures hold
// the rows [from, to); the ring still holds every row from from on.
//
// It runs in four phases (see checkPhase), each on two goroutines when
// its work (values, or rows times structures) reaches flushParallelMin:
// intern the batched values (by column), apply the rows that left (by
// tree: they read the codes the rows held), release their codes (by
// column), apply the rows that arrived (by tree). A structure takes the
// rows one structure at a time, which keeps its memory hot.
func (e *Engine) flush() {
	e.orderColumns()
	e.internBatch()
	left := e.oldest - e.from
	appliedLeft := min(left, e.to-e.from)
	structures := len(e.nodes) + len(e.fds) + len(e.ocs)
	if appliedLeft > 0 {
		e.sp.rows = span{e.from, e.from + appliedLeft}
		e.spread(phaseLeave, len(e.trees), int(appliedLeft)*structures, e.tune.flushParallelMin)
	}
	if left > 0 {
		e.sp.rows = span{e.from, e.oldest}
		e.spread(phaseRelease, len(e.cols), int(left)*len(e.cols), e.tune.flushParallelMin)
	}
	start := e.to
	if int32(e.to-e.oldest) < 0 {
		start = e.oldest // rows that arrived and left unflushed were never applied
	}
	end := e.oldest + uint32(e.n)
	if start != end {
		e.sp.rows = span{start, end}
		e.spread(phaseEnter, len(e.trees), int(end-start)*structures, e.tune.flushParallelMin)
	}
	e.left += int(appliedLeft)
	e.entered += int(end - start)
	e.from, e.to = e.oldest, end
}

// grow doubles the ring, moving every row to its slot under the new mask.
func (e *Engine) grow() {
	oldMask := e.mask
	e.mask = 2*e.mask + 1
	move := func(old []uint32) []uint32 {
		nw := make([]uint32, int(e.mask)+1)
		for i := 0; i < e.n; i++ {
			s := e.oldest + uint32(i)
			nw[s&e.mask] = old[s&oldMask]
		}
		return nw
	}
	for _, c := range e.cols {
		c.Codes = move(c.Codes)
	}
	for _, nd := range e.nodes {
		if nd.classOf != nil {
			nd.classOf = move(nd.classOf)
		}
	}
	// Nodes not in e.nodes are unreachable; new ones get the new size.
}

// Check brings the counts up to date and returns one result per dependency,
// in SetDependencies' order. cuts are the removal counts the caller
// compares counts with: an OC whose count cannot have crossed any of them
// since its last exact count is skipped (not with Options.Exact).
func (e *Engine) Check(cuts []int) []Result {
	e.builds = Builds{}
	e.flush()
	e.settle()
	e.recountOCs(cuts)
	out := make([]Result, len(e.deps))
	for i, d := range e.deps {
		r := Result{Dependency: d.dep, Exact: true, Present: true}
		for _, c := range d.cols {
			if e.cols[c].NonNull == 0 {
				r.Present = false
			}
		}
		if d.fd != nil {
			r.Removals = d.fd.removals
		} else {
			r.Removals = d.oc.totAsc
			if d.desc {
				r.Removals = d.oc.totDesc
			}
			if len(d.oc.dirty) > 0 {
				r.Exact = false
				p := boolIndex(d.desc)
				r.Low, r.High = max(r.Removals-d.oc.lost(p), 0), r.Removals+d.oc.misfits(p)
			}
		}
		if r.Exact {
			r.Low, r.High = r.Removals, r.Removals
		}
		out[i] = r
	}
	return out
}

// recountOCs recounts the OCs whose verdict may have changed (forced),
// then, within a credit of rows, the skippable ones closest to being
// forced (early). Without the early ones, OCs recounted at the same check
// (all of them at the first) would run out of slack at the same later
// check again and again, and that check would cost many recounts at once.
//
// An OC that can skip p checks after a recount (at the rates rows entered
// and left at this check) and reads r rows a recount costs about r/(p+1)
// rows a check. The credit grows at each check by the sum of that over the
// OCs, and a quarter more (Options.RecountBudget replaces the
// sum), less the rows of the forced recounts; the early recounts spend it,
// least waste first (the share of the checks between forced recounts an
// early recount gives up, times its rows): the recounts of a check add up
// to about the average, instead of coming in waves.
func (e *Engine) recountOCs(cuts []int) {
	sl := e.slide(cuts)
	type early struct {
		o            *ocCheck
		left, period int // checks it can still skip, of period after a recount
		rows         int // rows a recount reads
	}
	var cands []early
	rate, forced := 0, 0
	for i, o := range e.trackedOCs {
		// The OCs' stale limits spread over [MaxStale/2, MaxStale], or
		// those counted together (all at the first check) would all reach
		// it at the same later check.
		o.staleLimit = sl.maxStale - sl.maxStale/2*i/len(e.trackedOCs)
		rate += o.lastRows / (sl.period(o) + 1)
		if len(o.dirty) == 0 && !o.mustRecount {
			continue
		}
		if e.exact || o.mustRecount || o.ins+o.del > o.staleLimit {
			forced += e.recount(o, sl)
			continue
		}
		if !o.unchanged(cuts) {
			if o.mayFit(cuts) {
				e.fits = append(e.fits, o) // may be spared by the fit bound
			} else {
				forced += e.recount(o, sl)
			}
			continue
		}
		cands = append(cands, early{o: o, left: sl.checksLeft(o), period: sl.period(o), rows: o.dirtyRows()})
	}
	e.runFits()
	for _, o := range e.fits {
		if !o.unchanged(cuts) {
			forced += e.recount(o, sl)
			continue
		}
		cands = append(cands, early{o: o, left: sl.checksLeft(o), period: sl.period(o), rows: o.dirtyRows()})
	}
	clear(e.fits)
	e.fits = e.fits[:0]
	switch {
	case e.recountBudget > 0:
		rate = e.recountBudget
	case e.recountBudget < 0:
		rate, cands = 0, nil
	}
	rate += rate / 4 // headroom, or the OCs forced later than the others starve
	e.credit = max(e.credit+rate-forced, -rate)
	// Least waste first: recounting an OC that could skip k more checks of
	// the p+1 between forced recounts wastes (k+1)/(p+1) of its rows.
	waste := func(c early) float64 { return float64(c.rows) * float64(c.left+1) / float64(c.period+1) }
	slices.SortStableFunc(cands, func(x, y early) int { return cmp.Compare(waste(x), waste(y)) })
	for len(cands) > 0 && e.credit > 0 {
		e.credit -= e.recount(cands[0].o, sl)
		cands = cands[1:]
	}
	if len(cands) == 0 {
		e.credit = min(e.credit, 0) // no credit saved up for OCs not dirty yet
	}
	e.recountPrepared(sl)
	e.runRecounts()
}

// recountPrepared schedules the recounts of the prepared OCs (see
// Prepare), apart from the tracked ones' schedule and credit: once built
// (or reset), and when their changed rows pass MaxStale (which bounds
// their backlog). They record no fit or floor, which only the tracked
// OCs' bounds use.
func (e *Engine) recountPrepared(sl slide) {
	for _, o := range e.prepOCs {
		if !e.labelled(o.a) || !e.labelled(o.b) {
			continue
		}
		if o.mustRecount || len(o.dirty) > 0 && o.ins+o.del > sl.maxStale {
			e.recount(o, slide{}) // no cuts: it records no fit or floor
		}
	}
}

// slide is what a check's recounts are scheduled by: the cuts, MaxStale,
// and the rows that entered and left since the last check.
type slide struct {
	cuts          []int
	maxStale      int
	entered, left int
}

// slide returns the check's slide and starts counting the next one.
func (e *Engine) slide(cuts []int) slide {
	sl := slide{cuts: cuts, maxStale: e.maxStale, entered: max(e.entered, 1), left: max(e.left, 1)}
	if sl.maxStale <= 0 {
		sl.maxStale = min(e.n, defaultMaxStaleRows)
	}
	e.entered, e.left = 0, 0
	return sl
}

// recount recounts o and returns the rows it read.
func (e *Engine) recount(o *ocCheck, sl slide) int {
	rows := o.dirtyRows()
	o.fitCuts, o.fitLeft = sl.cuts, sl.left
	e.todo = append(e.todo, o)
	o.lastRows = rows
	o.ripe = o.ripe[:0] // the recount sorts its backlog
	return rows
}

// runRecounts recounts the OCs recountOCs chose, the longer ones first:
// on two goroutines, each with its own scratch, when there are two cores
// and parallelMin rows to read (the recounts write each its own OC's
// state; phaseRecount). A recount takes about the time per row its OC's
// last one took, times the rows it reads, plus recountChangeNs per row
// that entered or left (its pairs looked up, sorted, merged): rows alone
// tell OCs of as many rows apart by neither, and a long recount taken
// last leaves the other goroutine idle. The order changes no count.
//
// The OCs not recounted with classes ripe for presorting (see
// sortedClass) are presorted in the same phase, after the recounts (units
// len(todo) on): the labels are settled, and each unit writes its own
// OC's state.
func (e *Engine) runRecounts() {
	work := 0
	for _, o := range e.todo {
		work += o.lastRows
	}
	e.recounted = work
	took := func(o *ocCheck) float64 {
		return o.rowNs*float64(o.lastRows) + recountChangeNs*float64(o.ins+o.del)
	}
	slices.SortStableFunc(e.todo, func(x, y *ocCheck) int { return cmp.Compare(took(y), took(x)) })
	for _, o := range e.ocs {
		if len(o.ripe) > 0 {
			e.presorts = append(e.presorts, o)
			work += len(o.ripe) * e.tune.presortMin
		}
	}
	e.spread(phaseRecount, len(e.todo)+len(e.presorts), work, e.tune.parallelMin)
	clear(e.todo)
	e.todo = e.todo[:0]
	clear(e.presorts)
	e.presorts = e.presorts[:0]
}

// checksLeft is how many more checks like this one o can skip: each adds
// sl.entered and sl.left to its changed rows, the share of the rows
// entering that the fit tests do not accept (misfitsPerCheck) to its
// misfits, and the share of the rows leaving that the floor tests do not
// spare (lostPerCheck) to its lost rows.
func (sl slide) checksLeft(o *ocCheck) int {
	return sl.skippable(o, o.ins+o.del, [2]int{o.lost(0), o.lost(1)}, [2]int{o.misfits(0), o.misfits(1)})
}

// period is how many checks like this one o can skip after a recount.
func (sl slide) period(o *ocCheck) int { return sl.skippable(o, 0, [2]int{}, [2]int{}) }

// skippable is how many checks like this one o can skip with changed rows
// changed since its last recount, and its count within [tot - lost, tot +
// misfits].
func (sl slide) skippable(o *ocCheck, changed int, lost, misfits [2]int) int {
	k := (o.staleLimit - changed) / (sl.entered + sl.left)
	for p, r := range [2]int{o.totAsc, o.totDesc} {
		if !o.tracks(p) {
			continue
		}
		lo, hi := r-lost[p], r+misfits[p]
		for _, t := range sl.cuts {
			if hi <= t {
				k = min(k, (t-hi)/sl.misfitsPerCheck(o, p))
			} else {
				k = min(k, (lo-t-1)/sl.lostPerCheck(o, p))
			}
		}
	}
	return max(k, 0)
}

// lostPerCheck estimates how much a check like this one adds to o's lost
// rows of polarity p: the rows leaving that recent floor tests did not
// spare, at least fitRateFloor of them, and at least one (a heuristic for
// scheduling; the bounds themselves are exact).
func (sl slide) lostPerCheck(o *ocCheck, p int) int {
	return max(int(max(o.lostShare[p], fitRateFloor)*float64(sl.left)), 1)
}

// misfitsPerCheck estimates how much a check like this one adds to o's
// misfits of polarity p: the rows entering that recent fit tests did not
// accept, at least fitRateFloor of them, and at least one (a heuristic for
// scheduling; the bounds themselves are exact).
func (sl slide) misfitsPerCheck(o *ocCheck, p int) int {
	share := max(1-o.accShare[p], fitRateFloor)
	return max(int(share*float64(sl.entered)), 1)
}

// unchangedVerdict reports whether a count that was r, after entered rows
// came and left rows went, is still on r's side of every cut (each change
// moves it by at most one).
func unchangedVerdict(r, entered, left int, cuts []int) bool {
	lo, hi := r-left, r+entered
	for _, t := range cuts {
		if lo <= t && hi > t {
			return false
		}
	}
	return true
}

// settle brings the columns up to date (freed codes, typing, labels; by
// column, phaseSettle) and rebuilds the state that depends on what
// changed.
func (e *Engine) settle() {
	e.switched = slices.Grow(e.switched[:0], len(e.cols))[:len(e.cols)]
	e.relabelled = slices.Grow(e.relabelled[:0], len(e.cols))[:len(e.cols)]
	e.spread(phaseSettle, len(e.cols), (e.entered+e.left)*len(e.cols), e.tune.flushParallelMin)
	switched, relabelled := e.switched, e.relabelled
	for _, nd := range e.nodes {
		for _, c := range nd.cols {
			if switched[c] {
				nd.stale = true
			}
		}
	}
	e.rebuildNodes()
	for _, f := range e.fds {
		if f.stale || f.x.stale || f.xa.stale {
			f.rebuild(e.tune.fdStride)
			f.stale = false
			e.builds.FDs++
		}
	}
	for _, o := range e.ocs {
		full := o.stale || o.x.stale || switched[o.a] || switched[o.b] || relabelled[o.a] || relabelled[o.b] ||
			!e.labelled(o.a) || !e.labelled(o.b)
		fresh, restart := e.restarts[o]
		if fresh {
			o.forget()
		}
		if full || restart {
			e.startOver(o, !full)
			o.stale = false
		}
	}
	clear(e.restarts)
	for _, nd := range e.nodes {
		nd.stale = false
	}
}

// startOver makes o count every class again at this check, as a new OC
// would, whatever the history of its context's class ids: the classes in
// the order of their oldest rows (not by id: a context built at another
// time numbers them otherwise, and the fit and floor choices of a recount
// depend on the classes' order), from counts of zero. With keep, the
// sorted classes of at least sortedMin rows are kept (their pairs are
// valid: the labels of A and B did not move), which spares the sort;
// classes below sortedMin are gathered and sorted, as a new OC's are.
// Labels and classes must be settled.
func (e *Engine) startOver(o *ocCheck, keep bool) {
	var kept []*sortedClass
	if keep {
		kept = slices.Clone(o.big)
		e.builds.Restarted++
	} else {
		e.builds.Rebuilt++
	}
	o.resetAll()
	for _, c := range o.dirty {
		o.isDirty[c] = false
	}
	o.dirty = o.dirty[:0]
	clear(o.remAsc)
	clear(o.remDesc)
	o.totAsc, o.totDesc = 0, 0
	for s := e.from; s != e.to; s++ {
		o.touchClass(o.x.class(s & e.mask))
	}
	for c, sc := range kept {
		if sc != nil && c < len(o.x.size) && int(o.x.size[c]) >= e.sortedMin {
			sc.fresh = true
			o.big[c] = sc
		}
	}
}

// labelled reports whether column c's values have order labels: numbers
// always, text and instants while a tracked OC orders the column (a
// prepared OC comparing a column whose labels went, when the tracked OC
// ordering it did, starts over at every check and is not counted until
// they come back, see recountPrepared).
func (e *Engine) labelled(c int) bool {
	return e.cols[c].Mode == dict.Numeric || e.cols[c].Ordered
}

// forget gives o the history of a new OC (the recount schedule's
// estimates), so that a newly tracked OC that was prepared is scheduled
// as one built now would be.
func (o *ocCheck) forget() {
	o.lastRows, o.rowNs = 0, 0
	o.accShare, o.lostShare = [2]float64{}, [2]float64{1, 1}
}

// rebuildNodes replays the window's rows into the stale nodes (and their
// descendants), parents first, by tree (phaseRebuild).
func (e *Engine) rebuildNodes() {
	for _, nd := range e.nodes {
		if nd.parent != nil && nd.parent.stale {
			nd.stale = true
		}
		if nd.stale {
			nd.reset()
		}
	}
	stale := 0
	for i := range e.trees {
		t := &e.trees[i]
		t.stale = t.stale[:0]
		for _, nd := range t.nodes {
			if nd.stale {
				t.stale = append(t.stale, nd)
			}
		}
		stale += len(t.stale)
	}
	if stale > 0 {
		e.spread(phaseRebuild, len(e.trees), e.n*stale, e.tune.flushParallelMin)
	}
	e.builds.Nodes += stale
}

// Ring returns the window's columns as the engine holds them, for a
// caller on the engine's goroutine that reads them before the engine's
// next change and keeps none of them (an explanation, which reads every
// column at a few rows): codes by ring slot, row r (oldest first) at
// slot(r), the engine's own dictionaries, and each column's rows per code
// (Column.Counts, in buffers the next call reuses). DictColumns copies
// every code and dictionary instead.
func (e *Engine) Ring() (cols []table.DictColumn, slot func(r int) int, counts [][]uint32) {
	e.internBatch()
	e.ringCounts = slices.Grow(e.ringCounts[:0], len(e.cols))[:len(e.cols)]
	for i, c := range e.cols {
		cols = append(cols, table.DictColumn{Name: c.Name, Dict: c.Vals, Codes: c.Codes})
		e.ringCounts[i] = c.Counts(e.ringCounts[i], e.n)
	}
	counts = e.ringCounts
	oldest, mask := e.oldest, e.mask
	return cols, func(r int) int { return int((oldest + uint32(r)) & mask) }, counts
}

// DictColumns returns the window's rows as dictionary-coded columns, oldest
// row first (for Encode, e.g. to sample a removal set), in Columns' order:
// every column, or only those named (names it does not know are ignored),
// so that a caller sampling a few columns does not copy the others. Codes
// are copied; dictionaries share the strings.
func (e *Engine) DictColumns(names ...string) []table.DictColumn {
	e.internBatch()
	var out []table.DictColumn
	for _, c := range e.cols {
		if len(names) > 0 && !slices.Contains(names, c.Name) {
			continue
		}
		codes := make([]uint32, e.n)
		for k := range codes {
			codes[k] = c.Codes[(e.oldest+uint32(k))&e.mask]
		}
		out = append(out, table.DictColumn{Name: c.Name, Dict: append([]string(nil), c.Vals...), Codes: codes})
	}
	return out
}
