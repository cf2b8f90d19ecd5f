package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odwatch/odwatch/discovery/internal/order"
	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// errTooManyColumns is returned by Discover for tables with more than 64
// columns: the lattice keys its nodes by 64-bit column sets (and a lattice
// that wide is out of reach anyway; Validate has no such limit).
var errTooManyColumns = errors.New("discovery: more than 64 columns")

// latNode is one context X of the lattice.
type latNode struct {
	cols    []int  // X, ascending column indices
	set     uint64 // X as a bit set
	parents []*latNode
	part    *validate.StrippedPartition
	// evid is part restricted to the distinct records (part itself when
	// every row is distinct): the evidence strengths and scores count.
	// It is built on first use (lattice.evidOf), under evidOnce: only the
	// nodes whose dependencies are measured or listed need it.
	evid     *validate.StrippedPartition
	evidOnce sync.Once
	// score is evid's Score, set with scored when a dependency of the
	// node is recorded (serially, after the level's validations).
	score  float64
	scored bool
	// ofdValid holds the A not in X with X: [] -> A valid; ofdExact those
	// known to hold with e = 0 (only these may drive exact-only pruning).
	ofdValid uint64
	ofdExact uint64
	// ofdSub holds the A with Y: [] -> A valid at a proper subset Y of X
	// (inherit): such an OFD, and every OC with A on a side (whose
	// removals are at most the OFD's g3), is valid and minimal in neither
	// set, so X makes no candidate of it.
	ofdSub uint64
	// ofdRel holds the A with Y: [] -> A valid and reliable for some Y
	// included in X (X itself once its level is validated): the OFDs the
	// reliable listing takes as implied.
	ofdRel uint64
	// ocValid has bit ocBit(A,B,pol) set when X: A ~ B (pol) is known
	// valid; it is only meaningful for ordered A and B with no reliable
	// OFD X: [] -> A or X: [] -> B.
	ocValid []uint64
	// measures caches the chance-corrected measures computed at X (key
	// measureKey), for X's own results and for the OC strength gains of its
	// supersets, which share their parents; workers fill it concurrently.
	measures measureCache
	// g3 holds, when the listing's bounds are on, an upper bound of the
	// g3 removals of X: [] -> A for each column A (g3Unknown when there
	// is none): the removals of a valid one at X, else the least of its
	// parents' (g3 only falls as the context grows).
	g3 []uint32
	// groups caches dropHopeless's ClassGroupMax of evid, per column,
	// for the OC validations of X's level.
	groups nodeGroups
}

// g3Unknown is a latNode.g3 bound not known.
const g3Unknown = ^uint32(0)

// nodeGroups is a node's cache of validate.ClassGroupMax on its evidence
// partition, by column: each OC candidate of the node reads two of them,
// so a column's is computed once for all of its pairs. The level's
// workers fill it concurrently, under mu; computeODs drops it after the
// level's OC validations.
type nodeGroups struct {
	mu   sync.Mutex
	cols [][]uint32
}

// measureCache maps measure keys to the measures computed at one node.
// The workers of a level and of the next read and write it concurrently,
// under mu; the map, allocated on the first store, holds the values
// themselves (a sync.Map boxed each one and allocated an entry per key).
type measureCache struct {
	mu sync.Mutex
	m  map[int32]float64
}

// load returns the measure stored under key, if any.
func (c *measureCache) load(key int) (float64, bool) {
	c.mu.Lock()
	m, ok := c.m[int32(key)]
	c.mu.Unlock()
	return m, ok
}

// store sets the measure under key.
func (c *measureCache) store(key int, m float64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[int32]float64)
	}
	c.m[int32(key)] = m
	c.mu.Unlock()
}

// measureKey is the key of an OFD's measure in latNode.measures; an OC's
// is its ocBit, which is never negative.
func measureKey(a int) int { return -1 - a }

func ocBit(m, a, b int, pol Polarity) int { return (a*m+b)*2 + int(pol) }

func (n *latNode) hasOC(bit int) bool { return n.ocValid[bit>>6]&(1<<(bit&63)) != 0 }

func (n *latNode) setOC(bit int) { n.ocValid[bit>>6] |= 1 << (bit & 63) }

// found is one minimal dependency, in column indices: of the paper's
// minimal set (paper), of the reliable listing (reliable), or both.
type found struct {
	node     *latNode
	kind     Kind
	a, b     int
	pol      Polarity
	paper    bool
	removals int
	strength float64
	bound    bool // strength is an upper bound (Options.BoundUnreliable)
	sample   []int
}

// The tasks of a level are its candidates, millions on a wide table:
// they keep their columns in a byte (at most 64 columns) and their
// removal samples, when asked for, behind a pointer, so that a level's
// slice is half the size to grow and to scan.

type ofdTask struct {
	node     *latNode
	sample   *[]int // nil unless a sample is taken
	removals int
	strength float64
	bound    bool // strength is an upper bound (Options.BoundUnreliable)
	a        uint8
}

type ocTask struct {
	node      *latNode
	samples   *[2][]int // nil unless a sample is taken
	removals  [2]int
	strengths [2]float64
	bounds    [2]bool // strengths[pol] is an upper bound (Options.BoundUnreliable)
	// shuffleBound is validate.OCShuffleBound at the node's evidence,
	// -1 until dropHopeless computes it.
	shuffleBound int
	a, b         uint8
	// paper: both OFDs are invalid, as the paper's minimal set wants.
	paper bool
	want  [2]bool // per polarity
}

// listingOnly reports whether the task is a candidate of the reliable
// listing alone, in both polarities: an OFD on a side holds at the
// context, and unreliably (not paper).
func (t *ocTask) listingOnly() bool { return !t.paper }

// dropListingOnly stops wanting a candidate of the listing alone; nothing
// reads its validity (see dropHopeless).
func (t *ocTask) dropListingOnly() {
	if t.listingOnly() {
		t.want = [2]bool{}
	}
}

// lattice is the state of one Discover run.
type lattice struct {
	t          *table.Table
	opts       Options
	m          int
	all        uint64
	ocWords    int // words of a node's OC bit sets (ocBit < m*m*2)
	budget     int
	workers    int
	validators []*validate.Validator
	pdep       []float64 // ColumnPdep of each column over the distinct records
	ev         *evidence
	rows       rowEvidence // all records, for the dependencies that mention every column
	unordered  uint64      // the Nominal columns, which take no part in OCs
	// measured holds the measurements (Evidence.Measurements) when the listing
	// is on: see unlisted.
	measured uint64
	found    []found
	stats    Stats
	// ofdBuf and ocBuf keep the task slices of the last level for the
	// next one: a wide level holds millions of tasks.
	ofdBuf []ofdTask
	ocBuf  []ocTask
	// ocColsBuf keeps ocCandidates' ocColumns of each node of a level.
	ocColsBuf []uint64

	progressMu   sync.Mutex
	lastProgress time.Time
	validated    atomic.Int64
	level        int
	levelCands   int64
}

// Discover returns the minimal approximate dependency set of t for
// opts.Epsilon as docs/DESIGN.md defines it: OFDs measured by g3 and OCs of both
// polarities by LNDS (or by the iterative baseline when opts.Validator asks
// for it), sorted by Score descending and then by text.
//
// The lattice is walked level by level over contexts X (FASTOD's set-based
// traversal): a candidate is validated only when no direct subset of its
// context already makes it valid — validity is monotone under growing the
// context for g3 and LNDS alike, so such a candidate is valid and not
// minimal without looking at the data. A context is dropped with all its
// supersets when every OFD X: [] -> A already holds (nothing above can be
// minimal), or when X\{C}: [] -> C holds exactly for some C (then X and
// X\{C} have the same partition); exactness is what makes the latter sound
// under approximation.
//
// Candidates of one level are validated on opts.Workers goroutines
// (GOMAXPROCS when 0). Stats.Candidates counts the dependencies decided at
// the contexts visited (by validation or by inheritance), Stats.Validations
// the validator runs, Stats.Levels the context sizes completed. Progress,
// when set, is called at most every 100 ms and at level boundaries, never
// concurrently; its Level is the context size plus one.
//
// opts.Pause, when set, is passed by every worker before each partition
// product and candidate validation, within a validation every PauseRows
// rows of work, and at each level's start.
//
// A table without rows yields no dependencies. When ctx is cancelled or its
// deadline passes (or opts.Pause returns an error), Discover returns the
// dependencies of the levels it completed, with Complete false, together
// with an error wrapping ctx.Err() (or Pause's error).
func Discover(ctx context.Context, t *table.Table, opts Options) (*Discovery, error) {
	return discover(ctx, t, opts, validate.PauseRows)
}

// discover is Discover with the workers' Validators passing opts.Pause
// every pauseEvery rows of work within a unit (Discover: PauseRows).
func discover(ctx context.Context, t *table.Table, opts Options, pauseEvery int) (*Discovery, error) {
	start := time.Now()
	if err := t.Check(); err != nil {
		return nil, err
	}
	m := len(t.Columns)
	if m > 64 {
		return nil, fmt.Errorf("%w: %d columns", errTooManyColumns, m)
	}
	d := &Discovery{Rows: t.Rows, Epsilon: opts.Epsilon, Complete: true, Dependencies: []Result{}}
	for _, c := range t.Columns {
		d.Columns = append(d.Columns, c.Name)
	}
	if t.Rows == 0 || m == 0 {
		d.Stats.Seconds = time.Since(start).Seconds()
		return d, nil
	}
	l := newLattice(t, opts)
	for _, v := range l.validators {
		v.PauseEvery = pauseEvery
	}
	err := l.run(ctx)
	if err != nil {
		d.Complete = false
		err = fmt.Errorf("discovery stopped after %d complete levels: %w", l.stats.Levels, err)
	}
	d.Dependencies = l.results()
	l.stats.Seconds = time.Since(start).Seconds()
	d.Stats = l.stats
	return d, err
}

// newLattice returns the state of a Discover run on t, a checked table
// with rows and at most 64 columns.
func newLattice(t *table.Table, opts Options) *lattice {
	m := len(t.Columns)
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	l := &lattice{
		t:       t,
		opts:    opts,
		m:       m,
		all:     uint64(1)<<m - 1,
		ocWords: (m*m*2 + 63) / 64,
		budget:  RemovalBudget(opts.Epsilon, t.Rows),
		workers: workers,
		ev:      newEvidence(t, opts.listing()),
		rows:    rowEvidence{ev: evidence{N: t.Rows, Spanning: true}},
	}
	if m == 64 {
		l.all = ^uint64(0)
	}
	for range workers {
		l.validators = append(l.validators, validate.NewValidator())
	}
	for i := range t.Columns {
		l.pdep = append(l.pdep, l.ev.Pdep(&t.Columns[i]))
		l.rows.pdep = append(l.rows.pdep, l.rows.pdepOf(l.ev, l.pdep[i], &t.Columns[i]))
		if !t.Columns[i].Type.Ordered() {
			l.unordered |= 1 << i
		}
	}
	if opts.MinStrength > 0 {
		l.measured = l.ev.Measurements(t, opts.listing().measurementShare)
	}
	return l
}

// unlisted reports whether n's context holds a measurement: Summarize
// steps back every reliable rule there (stepBackMeasurements), so no
// candidate of the listing alone is searched at n, and none above it,
// whose contexts hold the measurement too. The paper's candidates are
// searched as everywhere. It is no bound: listingTuning.unbounded leaves
// it on, and the oracle reads the listing the same way.
func (l *lattice) unlisted(n *latNode) bool { return n.set&l.measured != 0 }

// parallel runs fn(validator, i) for i in [0, n) on the worker pool,
// each worker passing opts.Pause before each i and, through its
// Validator's pause, every pauseEvery rows of work within one (a long
// validation). A worker takes the i in runs of parallelRun(n) (a level's
// millions of candidates took a shared counter's cache line from one
// core to the other at every one), and, when validations says the i are
// validations, counts each run in the progress and reports it. It
// returns ctx's error, or the first error Pause returned (which stops
// every worker).
func (l *lattice) parallel(ctx context.Context, n int, validations bool, fn func(v *validate.Validator, i int)) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	run := parallelRun(n, l.workers)
	for w := range min(l.workers, n) {
		v := l.validators[w]
		wg.Go(func() {
			if l.opts.Pause != nil {
				v.Pause = func() { l.pauseWithin(ctx, stop) }
				defer func() { v.Pause = nil }()
			}
			for ctx.Err() == nil {
				from := int(next.Add(int64(run)) - int64(run))
				if from >= n {
					return
				}
				to := min(from+run, n)
				for i := from; i < to && ctx.Err() == nil; i++ {
					if err := l.pause(ctx); err != nil {
						stop(err)
						return
					}
					fn(v, i)
				}
				if validations {
					l.validated.Add(int64(to - from))
					l.progress(false)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// parallelRun is how many of n units a worker of parallel takes at once:
// enough that taking them costs nothing beside their work, few enough
// that the workers end a level together (a run is at most a 256th of a
// worker's share; the units come largest first).
func parallelRun(n, workers int) int {
	return min(max(n/(256*max(workers, 1)), 1), 64)
}

// pauseWithin is opts.Pause passed within a unit of work (the
// Validator's pause): its error stops every worker through stop, and once
// ctx is done the unit runs to its end without pausing, its result unused.
func (l *lattice) pauseWithin(ctx context.Context, stop context.CancelCauseFunc) {
	if ctx.Err() != nil {
		return
	}
	if err := l.opts.Pause(ctx); err != nil {
		stop(err)
	}
}

// pause waits as opts.Pause says (nil without one).
func (l *lattice) pause(ctx context.Context) error {
	if l.opts.Pause == nil {
		return nil
	}
	return l.opts.Pause(ctx)
}

// progress reports to the callback at most every 100 ms, from one
// goroutine at a time.
func (l *lattice) progress(force bool) {
	if l.opts.Progress == nil {
		return
	}
	l.progressMu.Lock()
	defer l.progressMu.Unlock()
	now := time.Now()
	if !force && now.Sub(l.lastProgress) < 100*time.Millisecond {
		return
	}
	l.lastProgress = now
	l.opts.Progress(Progress{
		Level:      l.level,
		Candidates: l.levelCands,
		Validated:  l.validated.Load(),
		Found:      len(l.found),
	})
}

func (l *lattice) withinMaxLevel(depLevel int) bool {
	return l.opts.MaxLevel <= 0 || depLevel <= l.opts.MaxLevel
}

// run walks the lattice level by level, level k holding the contexts of
// size k, in FASTOD's steps: inherit the direct subsets' validity, build
// the partitions, compute the dependencies, prune, generate the next level.
func (l *lattice) run(ctx context.Context) error {
	level := []*latNode{l.newNode(nil, validate.FullPartition(l.t.Rows))}
	var prev []*latNode
	for k := 0; len(level) > 0 && l.withinMaxLevel(k+1); k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.pause(ctx); err != nil {
			return err
		}
		level = l.inherit(level)
		if k > 0 {
			if err := l.buildPartitions(ctx, level, k); err != nil {
				return err
			}
			level = dropExactlyDetermined(level)
		}
		levelFound, err := l.computeODs(ctx, level, k)
		if err != nil {
			return err
		}
		retire(prev)
		l.found = append(l.found, levelFound...)
		l.stats.Levels = k + 1
		l.progress(true)
		prev = level
		level = l.nextLevel(l.prune(level, k), k)
	}
	return nil
}

// newNode returns the context cols, with its OC bit sets allocated.
func (l *lattice) newNode(cols []int, part *validate.StrippedPartition) *latNode {
	n := &latNode{cols: cols, part: part, ocValid: make([]uint64, l.ocWords)}
	if l.bounded() {
		n.g3 = make([]uint32, l.m)
		for a := range n.g3 {
			n.g3[a] = g3Unknown
		}
	}
	for _, c := range cols {
		n.set |= 1 << c
	}
	return n
}

// inherit ORs into each node of level the OFD validity of its direct
// subsets (valid, exact and reliable, less the node's own columns) and
// their OC bits, all monotone under growing the context, and drops the nodes where every
// OFD already holds: they have no minimal dependency and no alive superset,
// so they go before their partition is built. An OC bit it sets for a
// pair the node does not consider (a side in X, or with a reliable OFD) is
// read by no superset, which does not consider the pair either. It reads
// the parents' bits and writes the nodes'.
func (l *lattice) inherit(level []*latNode) []*latNode {
	for _, n := range level {
		for _, p := range n.parents {
			n.ofdValid |= p.ofdValid &^ n.set
			n.ofdSub |= p.ofdValid &^ n.set
			n.ofdExact |= p.ofdExact &^ n.set
			n.ofdRel |= p.ofdRel &^ n.set
			for w := range n.ocValid {
				n.ocValid[w] |= p.ocValid[w]
			}
			for a, g := range p.g3 {
				n.g3[a] = min(n.g3[a], g)
			}
		}
	}
	return slices.DeleteFunc(level, func(n *latNode) bool { return n.ofdValid|n.set == l.all })
}

// buildPartitions sets the partition of each node of level k >= 1: a
// column's own at level 1, the product of two direct subsets' above (any
// two span X; the two with the fewest covered rows make the cheapest
// product). It reads the parents' partitions and writes the nodes'.
func (l *lattice) buildPartitions(ctx context.Context, level []*latNode, k int) error {
	return l.parallel(ctx, len(level), false, func(v *validate.Validator, i int) {
		n := level[i]
		if k == 1 {
			n.part = validate.ColumnPartition(&l.t.Columns[n.cols[0]])
		} else {
			p, q := smallestTwo(n.parents)
			n.part = v.Product(p.part, q.part)
		}
		n.part.SortBySize()
	})
}

// dropExactlyDetermined drops the nodes X with X\{C}: [] -> C exactly for
// some C, which holds iff both have the same stripped partition (a
// refinement that keeps the covered rows and the number of classes splits
// nothing): then nothing at X or above is minimal. It reads the nodes' and
// parents' partitions only: the parents' level was inherited from before
// this step, so nothing would read a mark left on them.
func dropExactlyDetermined(level []*latNode) []*latNode {
	return slices.DeleteFunc(level, func(n *latNode) bool {
		for _, p := range n.parents {
			if p.part.Covered() == n.part.Covered() && p.part.NumClasses() == n.part.NumClasses() {
				return true
			}
		}
		return false
	})
}

// computeODs decides every candidate dependency whose context is a node of
// level k (FASTOD's computeODs): the OFDs first, since a context's OC
// candidates depend on which of its OFDs hold reliably, then the OCs. It
// reads the nodes' partitions and inherited validity and the parents'
// measures; it writes the nodes' scores and validity bits, the Stats and
// the progress counters, and returns the dependencies found, which count
// only once the whole level is done.
func (l *lattice) computeODs(ctx context.Context, level []*latNode, k int) ([]found, error) {
	l.level = k + 1
	l.validated.Store(0)
	// Tasks are generated node by node, the nodes with the most covered
	// rows first, so that no worker is left with a big task at the end
	// of the level while the others idle.
	byWork := slices.Clone(level)
	slices.SortStableFunc(byWork, func(x, y *latNode) int { return y.part.Covered() - x.part.Covered() })
	ofds := l.ofdCandidates(byWork)
	l.levelCands = int64(len(ofds))
	l.progress(true)
	if err := l.validateOFDs(ctx, ofds); err != nil {
		return nil, err
	}
	levelFound := l.recordOFDs(ofds, nil)
	var ocs []ocTask
	if l.withinMaxLevel(k + 2) {
		ocs = l.ocCandidates(byWork)
	}
	l.levelCands += int64(len(ocs))
	err := l.validateOCs(ctx, ocs)
	for _, n := range level {
		n.groups.cols = nil
	}
	if err != nil {
		return nil, err
	}
	return l.recordOCs(ocs, levelFound), nil
}

// ofdCandidates returns the OFDs X: [] -> A of level to validate: those no
// direct subset holds, candidates of the paper's minimal set and of the
// reliable listing alike. The OFDs a subset holds are decided without
// validation: valid, and minimal in neither set. It counts every OFD in
// Stats.Candidates.
func (l *lattice) ofdCandidates(level []*latNode) []ofdTask {
	ofds := l.ofdBuf[:0]
	for _, n := range level {
		for a := 0; a < l.m; a++ {
			if n.set&(1<<a) != 0 {
				continue
			}
			l.stats.Candidates++
			if n.ofdValid&(1<<a) == 0 {
				ofds = append(ofds, ofdTask{node: n, a: uint8(a)})
			}
		}
	}
	l.ofdBuf = ofds
	return ofds
}

// validateOFDs runs validateOFD on every task on the worker pool, in
// their order (computeODs: largest partitions first).
func (l *lattice) validateOFDs(ctx context.Context, ofds []ofdTask) error {
	return l.parallel(ctx, len(ofds), true, func(v *validate.Validator, i int) {
		l.validateOFD(v, &ofds[i])
	})
}

// validateOFD sets the task's removals (above the budget when invalid) and,
// when valid, its strength and, when it is a result, its removal sample.
func (l *lattice) validateOFD(v *validate.Validator, task *ofdTask) {
	col := &l.t.Columns[task.a]
	task.removals = v.OFDRemovals(task.node.part, col, l.budget)
	if task.removals > l.budget {
		return
	}
	task.strength, task.bound = l.ofdStrength(v, task.node, int(task.a))
	if l.opts.RemovalSample != 0 {
		sample := sampleOf(validate.OFDRemovalRows(task.node.part, col), l.opts.RemovalSample)
		task.sample = &sample
	}
}

// recordOFDs counts the validations of ofds, sets the ofd bits of the
// valid ones' nodes and appends them to levelFound: each is of the
// paper's minimal set, and of the reliable listing when reliable.
func (l *lattice) recordOFDs(ofds []ofdTask, levelFound []found) []found {
	l.stats.Validations += int64(len(ofds))
	for _, task := range ofds {
		if task.removals > l.budget {
			continue
		}
		n := task.node
		n.ofdValid |= 1 << task.a
		if n.g3 != nil {
			n.g3[task.a] = min(n.g3[task.a], uint32(task.removals))
		}
		if task.removals == 0 {
			n.ofdExact |= 1 << task.a
		}
		reliable := task.strength >= l.opts.MinStrength
		if reliable {
			n.ofdRel |= 1 << task.a
		}
		l.setScore(n)
		f := found{node: n, kind: KindOFD, a: int(task.a), paper: true, removals: task.removals, strength: task.strength, bound: task.bound}
		if task.sample != nil {
			f.sample = *task.sample
		}
		levelFound = append(levelFound, f)
	}
	return levelFound
}

// ocCandidates returns the OCs X: A ~ B of level to validate, between
// ordered columns where no reliable OFD X: [] -> A or X: [] -> B makes them
// trivial, one task per pair for both polarities (see ocCandidate). It
// reads the nodes' OFD bits after recordOFDs. Without the listing the
// slice is grown once to the pairs that may make a task: a wide level
// makes millions.
func (l *lattice) ocCandidates(level []*latNode) []ocTask {
	ocs := l.ocBuf[:0]
	colsOf := l.ocColsBuf[:0]
	pairs := 0
	for _, n := range level {
		cols := l.ocColumns(n)
		colsOf = append(colsOf, cols)
		pairs += pairsOf(cols)
	}
	l.ocColsBuf = colsOf
	if l.opts.MinStrength <= 0 {
		// Without the listing nearly every pair makes a task; with it
		// most are decided by inheritance or dropped by a bound, and
		// the slice grows by appending rather than to the pairs.
		ocs = slices.Grow(ocs, pairs)
	}
	for i, n := range level {
		for rest := colsOf[i]; rest != 0; rest &= rest - 1 {
			a := bits.TrailingZeros64(rest)
			for more := rest &^ (1 << a); more != 0; more &= more - 1 {
				b := bits.TrailingZeros64(more)
				task := l.ocCandidate(n, a, b)
				l.dropUnlisted(&task)
				l.dropBeyondG3(&task)
				if task.want[Asc] || task.want[Desc] {
					ocs = append(ocs, task)
				}
			}
		}
	}
	l.ocBuf = ocs
	return ocs
}

// ocColumns returns the columns of n's OC candidates that are worth a
// task: the ordered columns outside X with no reliable OFD at X and no OFD
// valid at a proper subset (ofdSub), less,
// when no candidate of the listing alone at n is listed (unlisted) or can
// be reliable (listingHopeless, when the pairs do not mention every
// column), those with an OFD valid at X, whose candidates are all of the listing alone: it
// counts both polarities of every pair of the ordered columns outside X
// with no reliable OFD in Stats.Candidates, the skipped ones included.
// A pair can mention every column only when X lacks two columns, and
// then it is the node's only pair.
func (l *lattice) ocColumns(n *latNode) uint64 {
	cols := l.all &^ (n.set | n.ofdRel | l.unordered)
	l.stats.Candidates += 2 * int64(pairsOf(cols))
	cols &^= n.ofdSub
	if l.unlisted(n) || l.listingHopeless(n) && bits.OnesCount64(l.all&^n.set) > 2 {
		cols &^= n.ofdValid
	}
	l.stats.Candidates -= 2 * int64(pairsOf(cols)) // ocCandidate counts these
	return cols
}

// pairsOf is the number of pairs of columns in cols.
func pairsOf(cols uint64) int {
	k := bits.OnesCount64(cols)
	return k * (k - 1) / 2
}

// ocCandidate decides by inheritance what it can of X: A ~ B, X being n,
// in each polarity, and says in the task which polarities want validating:
// those no direct subset holds. A candidate of the paper's minimal set has
// both OFDs invalid; one with an OFD on a side valid at X, unreliably (the
// columns held at a subset are not asked: ocColumns), is a candidate of
// the reliable listing alone. An OC a subset holds is valid (its bits
// inherited, reliable when a subset's is) and minimal in neither set. It
// reads n's OC bits (the parents' ORed by inherit) and counts both
// polarities in Stats.Candidates.
func (l *lattice) ocCandidate(n *latNode, a, b int) ocTask {
	task := ocTask{node: n, a: uint8(a), b: uint8(b), paper: n.ofdValid&(1<<a|1<<b) == 0, shuffleBound: -1}
	for pol := Asc; pol <= Desc; pol++ {
		l.stats.Candidates++
		bit := ocBit(l.m, a, b, pol)
		// inherit ORed the parents' bits into n's.
		task.want[pol] = !n.hasOC(bit)
	}
	return task
}

// validateOCs runs validateOC on every task on the worker pool, in their
// order (computeODs: largest partitions first).
func (l *lattice) validateOCs(ctx context.Context, ocs []ocTask) error {
	return l.parallel(ctx, len(ocs), true, func(v *validate.Validator, i int) {
		l.validateOC(v, &ocs[i])
	})
}

// validateOC sets the task's removals in each wanted polarity (above the
// budget when invalid or not wanted), and for the valid ones their
// strength and, when they are results, their removal sample.
func (l *lattice) validateOC(v *validate.Validator, task *ocTask) {
	l.dropHopeless(v, task)
	l.ocRemovals(v, task)
	for pol := Asc; pol <= Desc; pol++ {
		if !task.want[pol] || task.removals[pol] > l.budget {
			continue
		}
		if bound, below := l.belowBound(v, task, pol); below {
			task.strengths[pol], task.bounds[pol] = bound, true
			continue
		}
		task.strengths[pol], task.bounds[pol] = l.ocStrength(v, task.node, int(task.a), int(task.b), pol, task.removals[pol], task.listingOnly())
	}
	if l.opts.RemovalSample == 0 {
		return
	}
	a, b, p := &l.t.Columns[task.a], &l.t.Columns[task.b], task.node.part
	for pol := Asc; pol <= Desc; pol++ {
		if task.want[pol] && task.removals[pol] <= l.budget && l.wanted(task.listingOnly(), task.strengths[pol]) {
			var rows []int
			if l.opts.Validator == ValidatorIterative {
				rows = validate.OCIterativeRemovalRows(p, a, b, pol)
			} else {
				rows = validate.OCRemovalRows(p, a, b, pol)
			}
			if task.samples == nil {
				task.samples = new([2][]int)
			}
			task.samples[pol] = sampleOf(rows, l.opts.RemovalSample)
		}
	}
}

// listingHopeless reports whether no candidate of the listing alone at n
// can be reliable, on the distinct records (a dependency on every column
// is judged on all records, and asks dropHopeless): the context lacks
// repeated support, or even a shuffle that keeps one row of each class
// and no removals earn less than MinStrength. Both hold for every
// superset too, whose partitions refine n's.
func (l *lattice) listingHopeless(n *latNode) bool {
	if l.opts.MinStrength <= 0 || l.opts.listing().unbounded {
		return false
	}
	ev := l.evidOf(n)
	return !l.ev.Supported(ev) || validate.OCStrengthOf(ev.N, 0, float64(ev.Covered()-ev.NumClasses())) < l.opts.MinStrength
}

// dropHopeless stops wanting the polarities of task that are candidates
// of the reliable listing alone (docs/DESIGN.md, "Performance model")
// and cannot be reliable: their context lacks repeated support, or even
// with no removals their strength bound (validate.OCShuffleBound) is below
// MinStrength. Such a candidate is no result, and nothing reads its
// validity: with an unreliable OFD X: [] -> A or X: [] -> B, every
// superset has that OFD valid at a subset and makes no candidate of the
// pair (ocColumns). It sets task.shuffleBound when it computes it.
func (l *lattice) dropHopeless(v *validate.Validator, task *ocTask) {
	if l.opts.MinStrength <= 0 || l.opts.listing().unbounded {
		return
	}
	if !l.listingOnlyWanted(task) {
		return
	}
	ev, part, _ := l.evidenceFor(task.node, 1<<task.a|1<<task.b)
	// Each class keeps at least one row of a shuffle: a bound in O(1)
	// before the one that reads the classes.
	if ev.Supported(part) && validate.OCStrengthOf(part.N, 0, float64(part.Covered()-part.NumClasses())) >= l.opts.MinStrength {
		task.shuffleBound = l.shuffleBound(v, task, part)
		if validate.OCStrengthOf(part.N, 0, float64(task.shuffleBound)) >= l.opts.MinStrength {
			return
		}
	}
	task.dropListingOnly()
}

// dropUnlisted stops wanting the polarities of task that are candidates
// of the listing alone when its context holds a measurement (unlisted).
// As in dropHopeless, nothing reads their validity.
func (l *lattice) dropUnlisted(task *ocTask) {
	if l.unlisted(task.node) {
		task.dropListingOnly()
	}
}

// bounded reports whether the bounds that skip the candidates of the
// listing alone that cannot be reliable are on.
func (l *lattice) bounded() bool {
	return l.opts.MinStrength > 0 && !l.opts.listing().unbounded
}

// dropBeyondG3 stops wanting the polarities of task that are candidates
// of the listing alone and cannot be reliable by a bound in O(1): within
// a class a shuffle keeps at least the largest group of one A value, so
// OCShuffleBound is at most the g3 removals of X: [] -> A and of
// X: [] -> B on the evidence, which are at most those on all records,
// bounded by the node's g3. It drops what dropHopeless would (see there),
// before a task is made of it.
func (l *lattice) dropBeyondG3(task *ocTask) {
	if !l.bounded() || l.opts.listing().noG3Bound {
		return
	}
	n := task.node
	ub := min(n.g3[task.a], n.g3[task.b])
	if ub == g3Unknown {
		return
	}
	rows := l.ev.N
	if n.set|1<<task.a|1<<task.b == l.all {
		rows = l.t.Rows
	}
	if validate.OCStrengthOf(rows, 0, float64(ub)) >= l.opts.MinStrength {
		return
	}
	task.dropListingOnly()
}

// shuffleBound is validate.OCShuffleBound of task's columns in part, its
// evidence: from the node's cached ClassGroupMax of each column when part
// is the node's evidence partition, in O(classes).
func (l *lattice) shuffleBound(v *validate.Validator, task *ocTask, part *validate.StrippedPartition) int {
	n := task.node
	a, b := &l.t.Columns[task.a], &l.t.Columns[task.b]
	if part != l.evidOf(n) {
		return v.OCShuffleBound(part, a, b)
	}
	return validate.OCShuffleBoundOf(part, l.groupMax(v, n, int(task.a)), l.groupMax(v, n, int(task.b)))
}

// groupMax returns validate.ClassGroupMax of column c in n's evidence
// partition, computed on its first use at n's level. It computes outside
// the lock, which a worker passing its pause must not hold; two workers
// may then both compute it, to the same result.
func (l *lattice) groupMax(v *validate.Validator, n *latNode, c int) []uint32 {
	g := &n.groups
	g.mu.Lock()
	if g.cols == nil {
		g.cols = make([][]uint32, l.m)
	}
	groups := g.cols[c]
	g.mu.Unlock()
	if groups != nil {
		return groups
	}
	groups = v.ClassGroupMax(l.evidOf(n), &l.t.Columns[c], nil)
	g.mu.Lock()
	g.cols[c] = groups
	g.mu.Unlock()
	return groups
}

// belowBound returns an upper bound of the strength of the valid task in
// polarity pol and whether it is below MinStrength, in which case the
// strength is not computed: for a candidate of the listing alone, then no
// result, and, with Options.BoundUnreliable, for one of the paper's set,
// then a result carrying the bound (StrengthBound). The bound is the
// measure of the task's removals against the shuffle bound
// (validate.OCShuffleBound), taken only where those removals are the ones
// its strength is measured on: its evidence is the node's partition (no
// repeated records, or a dependency on every column).
func (l *lattice) belowBound(v *validate.Validator, task *ocTask, pol Polarity) (float64, bool) {
	switch {
	case task.listingOnly() && task.shuffleBound < 0: // dropHopeless left it unbounded
		return 0, false
	case !task.listingOnly() && !l.boundsUnreliable(): // its strength is printed
		return 0, false
	}
	_, part, _ := l.evidenceFor(task.node, 1<<task.a|1<<task.b)
	if part != task.node.part {
		return 0, false
	}
	if task.shuffleBound < 0 {
		task.shuffleBound = l.shuffleBound(v, task, part)
	}
	bound := validate.OCStrengthOf(part.N, task.removals[pol], float64(task.shuffleBound))
	return bound, bound < l.opts.MinStrength
}

// boundsUnreliable reports whether results that cannot be reliable may
// carry a bound of their strength (Options.BoundUnreliable).
func (l *lattice) boundsUnreliable() bool {
	return l.opts.BoundUnreliable && l.opts.MinStrength > 0
}

// ocRemovals sets the task's removals in the wanted polarities with the
// chosen validator, both polarities in one pass when both are wanted, and
// budget+1 in the others.
func (l *lattice) ocRemovals(v *validate.Validator, task *ocTask) {
	a, b, p := &l.t.Columns[task.a], &l.t.Columns[task.b], task.node.part
	for pol := Asc; pol <= Desc; pol++ {
		task.removals[pol] = l.budget + 1
	}
	l.screenOnEvidence(v, task)
	budget := l.reliableBudget(task)
	defer func() {
		for pol := Asc; pol <= Desc; pol++ {
			if task.removals[pol] > budget {
				task.removals[pol] = l.budget + 1
			}
		}
	}()
	switch {
	case !task.want[Asc] && !task.want[Desc]:
	case l.opts.Validator == ValidatorIterative:
		for pol := Asc; pol <= Desc; pol++ {
			if task.want[pol] {
				task.removals[pol] = v.OCRemovalsIterative(p, a, b, pol, budget)
			}
		}
	case task.want[Asc] && task.want[Desc]:
		task.removals[Asc], task.removals[Desc] = v.OCRemovalsBoth(p, a, b, budget)
	default:
		pol := Asc
		if task.want[Desc] {
			pol = Desc
		}
		task.removals[pol] = v.OCRemovals(p, a, b, pol, budget)
	}
}

// screenOnEvidence stops wanting the polarities of task, every wanted
// one a candidate of the listing alone, that cannot be reliable by their
// removals on the distinct records when those are not all records (the
// case reliableBudget leaves to the eps budget): strength is measured on
// the distinct records, whose removals are at most those of all records,
// so a validation of the evidence partition with the most removals the
// shuffle bound lets a reliable one have decides it, and only the
// survivors are validated on all records for their removals. As in
// dropHopeless, nothing reads a dropped one's validity. The iterative
// baseline is not screened: its removals need not be at most all
// records' on a subset of them. listingTuning.noEvidenceScreen turns it
// off.
func (l *lattice) screenOnEvidence(v *validate.Validator, task *ocTask) {
	if task.shuffleBound < 0 || l.opts.Validator == ValidatorIterative || l.opts.listing().noEvidenceScreen || !l.listingOnlyWanted(task) {
		return
	}
	_, part, _ := l.evidenceFor(task.node, 1<<task.a|1<<task.b)
	if part == task.node.part {
		return
	}
	budget := l.reliableRemovals(part.N, task.shuffleBound)
	a, b := &l.t.Columns[task.a], &l.t.Columns[task.b]
	var removals [2]int
	switch {
	case task.want[Asc] && task.want[Desc]:
		removals[Asc], removals[Desc] = v.OCRemovalsBoth(part, a, b, budget)
	default:
		pol := Asc
		if task.want[Desc] {
			pol = Desc
		}
		removals[pol] = v.OCRemovals(part, a, b, pol, budget)
	}
	for pol := Asc; pol <= Desc; pol++ {
		if removals[pol] > budget {
			task.want[pol] = false
		}
	}
}

// listingOnlyWanted reports whether task, a candidate of the reliable
// listing alone, wants some polarity.
func (l *lattice) listingOnlyWanted(task *ocTask) bool {
	return task.listingOnly() && (task.want[Asc] || task.want[Desc])
}

// reliableRemovals is the most removals, at most the eps budget, with
// which an OC over n rows whose shuffle bound is bound can still be
// reliable: its strength is 1 - (r + k) / (bound + k), so the search
// starts near where that crosses MinStrength and steps to the exact
// crossing.
func (l *lattice) reliableRemovals(n, bound int) int {
	reliable := func(r int) bool {
		return validate.OCStrengthOf(n, r, float64(bound)) >= l.opts.MinStrength
	}
	r := min(l.budget, max(int((1-l.opts.MinStrength)*float64(bound)), 0))
	for r > 0 && !reliable(r) {
		r--
	}
	for r < l.budget && reliable(r+1) {
		r++
	}
	return r
}

// reliableBudget is the removal budget of the task's validation: the
// eps budget, or, when every polarity it wants is a candidate of the
// listing alone whose removals are those its strength is measured on (see
// belowBound), the most removals with which the shuffle bound still lets
// it be reliable, when that is fewer. Above it a polarity is no result,
// and, as in dropHopeless, nothing reads its validity.
func (l *lattice) reliableBudget(task *ocTask) int {
	if task.shuffleBound < 0 || !l.listingOnlyWanted(task) {
		return l.budget
	}
	_, part, _ := l.evidenceFor(task.node, 1<<task.a|1<<task.b)
	if part != task.node.part {
		return l.budget
	}
	return l.reliableRemovals(part.N, task.shuffleBound)
}

// recordOCs counts the validations of ocs, sets the OC bits of the valid
// ones' nodes and appends to levelFound those that are results (as
// recordOFDs).
func (l *lattice) recordOCs(ocs []ocTask, levelFound []found) []found {
	for _, task := range ocs {
		for pol := Asc; pol <= Desc; pol++ {
			if !task.want[pol] {
				continue
			}
			l.stats.Validations++
			if task.removals[pol] > l.budget {
				continue
			}
			bit := ocBit(l.m, int(task.a), int(task.b), pol)
			task.node.setOC(bit)
			reliable := task.strengths[pol] >= l.opts.MinStrength
			paper := task.paper
			if paper || reliable {
				l.setScore(task.node)
				f := found{node: task.node, kind: KindOC, a: int(task.a), b: int(task.b), pol: pol, paper: paper,
					removals: task.removals[pol], strength: task.strengths[pol], bound: task.bounds[pol]}
				if task.samples != nil {
					f.sample = task.samples[pol]
				}
				levelFound = append(levelFound, f)
			}
		}
	}
	return levelFound
}

// evidOf returns n's evidence partition, built on its first use; the
// workers may call it concurrently, until n is retired.
func (l *lattice) evidOf(n *latNode) *validate.StrippedPartition {
	n.evidOnce.Do(func() { n.evid = l.ev.Of(n.part) })
	return n.evid
}

// setScore sets n's score from its evidence once one of its dependencies
// is a result; recordOFDs and recordOCs call it, one at a time.
func (l *lattice) setScore(n *latNode) {
	if !n.scored {
		n.score, n.scored = l.evidOf(n).Score(), true
	}
}

// retire lets go what the previous level held once the current one is
// computed: its partitions served the strength gains of its children (only
// two levels of partitions live at a time), its parents links their
// inheritance.
func retire(level []*latNode) {
	for _, n := range level {
		n.part, n.evid = nil, nil
		n.parents = nil
	}
}

// prune returns the nodes of level k that may have minimal dependencies
// in their supersets (FASTOD's prune): those where some OFD X: [] -> A
// still fails once computeODs has run; none when level k+2 is beyond
// MaxLevel (the next level's dependencies would be beyond it too). It
// reads the nodes' ofdValid.
func (l *lattice) prune(level []*latNode, k int) []*latNode {
	if !l.withinMaxLevel(k + 2) {
		return nil
	}
	var alive []*latNode
	for _, n := range level {
		if n.ofdValid|n.set != l.all {
			alive = append(alive, n)
		}
	}
	return alive
}

// ofdMeasure is the chance-corrected measure of X: [] -> A, X being n,
// computed once per node.
func (l *lattice) ofdMeasure(v *validate.Validator, n *latNode, a int) float64 {
	if m, ok := n.measures.load(measureKey(a)); ok {
		return m
	}
	ev, part, pdep := l.evidenceFor(n, 1<<a)
	m := ev.OFDMeasure(v, part, &l.t.Columns[a], pdep[a])
	n.measures.store(measureKey(a), m)
	return m
}

// ocMeasure is the chance-corrected measure of X: A ~ B (pol), X being n,
// computed once per node; removals < 0 means they are not known yet and
// are counted exactly.
func (l *lattice) ocMeasure(v *validate.Validator, n *latNode, a, b int, pol Polarity, removals int) float64 {
	key := ocBit(l.m, a, b, pol)
	if m, ok := n.measures.load(key); ok {
		return m
	}
	ev, part, _ := l.evidenceFor(n, 1<<a|1<<b)
	m := ev.OCMeasure(part, removals, ocCounts(v, &l.t.Columns[a], &l.t.Columns[b], pol, l.opts.Validator))
	n.measures.store(key, m)
	return m
}

// ofdStrength is the Strength of the valid X: [] -> A, X being n: the
// least of its measure and of its measures when chance permutes A within
// the classes of each direct subset of X (validate.OFDStrengthWithin, on
// the same records as the measure: docs/DESIGN.md, "Strength"). With
// Options.BoundUnreliable a measure below MinStrength is returned as the
// strength's bound, the second result true.
func (l *lattice) ofdStrength(v *validate.Validator, n *latNode, a int) (float64, bool) {
	s := l.ofdMeasure(v, n, a)
	if s <= 0 || len(n.cols) < 2 {
		return s, false // with one column the parent is {}, the model s already took
	}
	if l.boundsUnreliable() && s < l.opts.MinStrength {
		return s, true
	}
	ev, part, _ := l.evidenceFor(n, 1<<a)
	for _, p := range n.parents {
		within := p.part
		if ev == l.ev {
			within = l.evidOf(p)
		}
		if s = min(s, v.OFDStrengthWithin(part, within, &l.t.Columns[a])); s <= 0 {
			return 0, false
		}
	}
	return s, false
}

// ocStrength is ofdStrength for the valid X: A ~ B (pol) with the given
// removals; a measure below MinStrength is the strength's bound for a
// candidate of the listing alone too (reliableOnly: it is then no result).
func (l *lattice) ocStrength(v *validate.Validator, n *latNode, a, b int, pol Polarity, removals int, reliableOnly bool) (float64, bool) {
	s := l.ocMeasure(v, n, a, b, pol, removals)
	if s <= 0 {
		return s, false
	}
	if s < l.opts.MinStrength && (reliableOnly || l.boundsUnreliable()) {
		return s, len(n.parents) > 0 // the gain over no parent is s
	}
	return gainOver(n, s, ocBit(l.m, a, b, pol), func(p *latNode) float64 { return l.ocMeasure(v, p, a, b, pol, -1) }), false
}

// gainOver is the strength gain of a dependency of measure s > 0 at n:
// s less the largest measure of it at a parent (measure, key being its
// key in the parents' measures), at least 0. The parents that hold their
// measure already come first, and once one of them has s or more the gain
// is 0 whatever the others hold, so they are not measured.
func gainOver(n *latNode, s float64, key int, measure func(p *latNode) float64) float64 {
	gain := s
	var held uint64 // the parents read in the first pass (at most 64)
	for i, p := range n.parents {
		if m, ok := p.measures.load(key); ok {
			held |= 1 << i
			if gain = min(gain, s-m); gain <= 0 {
				return 0
			}
		}
	}
	for i, p := range n.parents {
		if held&(1<<i) == 0 {
			if gain = min(gain, s-measure(p)); gain <= 0 {
				return 0
			}
		}
	}
	return gain
}

// wanted reports whether a valid candidate becomes a result: one of the
// paper's minimal set candidates always does, one of the reliable listing's
// alone only when reliable.
func (l *lattice) wanted(reliableOnly bool, strength float64) bool {
	return !reliableOnly || strength >= l.opts.MinStrength
}

// smallestTwo returns the two nodes with the fewest covered rows.
func smallestTwo(nodes []*latNode) (*latNode, *latNode) {
	p, q := nodes[0], nodes[1]
	if q.part.Covered() < p.part.Covered() {
		p, q = q, p
	}
	for _, n := range nodes[2:] {
		switch c := n.part.Covered(); {
		case c < p.part.Covered():
			p, q = n, p
		case c < q.part.Covered():
			q = n
		}
	}
	return p, q
}

// nextLevel generates the contexts of size k+1 from the alive ones of size
// k (FASTOD's calculateNextLevel; apriori: every direct subset must be
// alive), skipping those with a parent X\{C} where X\{C}: [] -> C is known
// to hold exactly. alive must be in lexicographic order of cols, as the
// levels it generates are: joins happen within the blocks sharing the
// first k-1 columns.
func (l *lattice) nextLevel(alive []*latNode, k int) []*latNode {
	if len(alive) == 0 {
		return nil
	}
	bySet := make(map[uint64]*latNode, len(alive))
	for _, n := range alive {
		bySet[n.set] = n
	}
	var next []*latNode
	add := func(cols []int) {
		var set uint64
		for _, c := range cols {
			set |= 1 << c
		}
		var parents []*latNode
		for _, c := range cols {
			p, ok := bySet[set&^(1<<c)]
			if !ok || p.ofdExact&(1<<c) != 0 {
				return
			}
			parents = append(parents, p)
		}
		y := l.newNode(cols, nil)
		y.parents = parents
		next = append(next, y)
	}
	if k == 0 {
		for c := 0; c < l.m; c++ {
			add([]int{c})
		}
		return next
	}
	for i := 0; i < len(alive); i++ {
		for j := i + 1; j < len(alive) && slices.Equal(alive[i].cols[:k-1], alive[j].cols[:k-1]); j++ {
			cols := make([]int, k+1)
			copy(cols, alive[i].cols)
			cols[k] = alive[j].cols[k-1]
			add(cols)
		}
	}
	return next
}

// results converts the found dependencies to Results in sortResults' order.
func (l *lattice) results() []Result {
	out, names := make([]Result, 0, len(l.found)), 0
	for _, f := range l.found {
		names += len(f.node.cols)
	}
	all := make([]string, 0, names) // every result's context, one allocation
	for _, f := range l.found {
		start := len(all)
		for _, c := range f.node.cols {
			all = append(all, l.t.Columns[c].Name)
		}
		ctxNames := all[start:len(all):len(all)] // full: an append copies
		r := Result{
			Removals:      f.removals,
			Error:         float64(f.removals) / float64(l.t.Rows),
			Score:         f.node.score,
			Strength:      f.strength,
			StrengthBound: f.bound,
			Reliable:      f.strength >= l.opts.MinStrength,
			RemovalSample: f.sample,
		}
		r.Kind = f.kind
		r.Context = ctxNames
		if f.kind == KindOFD {
			r.RHS = l.t.Columns[f.a].Name
		} else {
			r.Left, r.Right, r.Polarity = l.t.Columns[f.a].Name, l.t.Columns[f.b].Name, f.pol
		}
		out = append(out, r)
	}
	sortResults(out)
	return out
}

// sortResults puts the reliable results first, by Strength descending, and
// then the others by Score descending; ties go by Score, then by text,
// then by their order in rs (order.Stable: a text is rendered only where
// the rest ties).
func sortResults(rs []Result) {
	keys := make([]rankKey, len(rs))
	for i := range rs {
		keys[i] = rankKey{rs[i].Reliable, rs[i].Strength, rs[i].Score}
	}
	order.Apply(rs, order.Stable(keys, compareRank, func(i int) string { return rs[i].String() }))
}

// rankKey is what sortResults orders a result by before its text.
type rankKey struct {
	reliable        bool
	strength, score float64
}

// compareRank orders reliable results first, by strength descending, then
// by score descending.
func compareRank(x, y rankKey) int {
	if x.reliable != y.reliable {
		if x.reliable {
			return -1
		}
		return 1
	}
	if x.reliable {
		if c := cmp.Compare(y.strength, x.strength); c != 0 {
			return c
		}
	}
	return cmp.Compare(y.score, x.score)
}

// sampleOf returns up to k of rows (all when k < 0).
func sampleOf(rows []int, k int) []int {
	if k >= 0 && len(rows) > k {
		rows = rows[:k]
	}
	return rows
}
