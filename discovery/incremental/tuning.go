package incremental

import "github.com/odwatch/odwatch/discovery/incremental/internal/dict"

// tuning holds the engine's knobs: sizes and thresholds that trade memory
// for work, and the work from which a phase runs on two goroutines. They
// change no count. Production takes defaultTuning; tests force other
// values through Engine.tune to reach the paths a small window would not.
type tuning struct {
	// batchRows is the rows whose values Append keeps before interning
	// them (see internBatch).
	batchRows int
	// parallelMin is the rows a check's recounts must read together for
	// them to run on two goroutines: below it, they cost less than
	// starting a goroutine for them.
	parallelMin int
	// flushParallelMin is the units of work (values interned,
	// row-structure updates; see flush) below which a phase of flush or
	// settle costs less than waking a second goroutine for it.
	flushParallelMin int
	// presortMin is the backlog of a sorted class sorted at once at a
	// check that does not recount it (see sortedClass), so that a recount
	// after many skipped checks merges sorted runs instead of sorting its
	// whole backlog.
	presortMin int
	// countedRatio: a class is kept counted when its rows are at least
	// this many times its distinct pairs (0: never; see counted.go).
	// Below it, a recount of D pairs costs about what a sorted class's
	// merge does, and the sorted class's bounds are tighter.
	countedRatio int
	// fitMax is the pairs a sorted class keeps in A per polarity at most
	// (16 bytes each; see ocCheck.fit). A row tested once A is full is a
	// misfit, which is sound: A may be any subset of the rows that entered
	// that is consistent with S.
	fitMax int
	// floorMax is the pairs a sorted class keeps in its floor per
	// polarity at most (24 bytes each; see classFloor); a class with more
	// keeps none, and every row that leaves it costs one.
	floorMax int
	// scratchSlack is how much larger than twice the merged pairs the
	// recount scratch may be and still become a class's.
	scratchSlack int
	// nodeChunk is the rows whose index slots a node reads side by side
	// before it looks them up (see node.classesFor); their slots and
	// classes stay in the L1 cache.
	nodeChunk int
	// fdStride is the words of an FD's block per class of X (see
	// fdCheck), taken when the FD is rebuilt. Eight, two blocks a cache
	// line, hold classes of X+A up to 7 rows inline, and three sizes as
	// pairs.
	fdStride int
	// column is the knobs of every column (the hints, the labels' gap).
	column dict.Tuning
}

func defaultTuning() tuning {
	return tuning{
		batchRows:        4096,
		parallelMin:      20_000,
		flushParallelMin: 4096,
		presortMin:       2048,
		countedRatio:     8,
		fitMax:           1 << 16,
		floorMax:         1 << 16,
		scratchSlack:     64,
		nodeChunk:        256,
		fdStride:         8,
		column:           dict.DefaultTuning(),
	}
}
