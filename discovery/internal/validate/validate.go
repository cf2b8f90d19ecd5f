// Package validate holds discovery's measuring machinery: stripped
// partitions and their products, the validators (g3 for approximate FDs,
// the LIS-based one for order compatibility with its minimal removal sets,
// the paper's iterative baseline, list-based ODs) and the chance-corrected
// strengths. The lattice and discovery's Validate drive it; it knows
// dependencies only as columns and a polarity.
package validate

import (
	"math/bits"
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// Validator holds the reusable buffers of the validators so that a worker
// validating many candidates allocates nothing per tuple. A Validator is not
// safe for concurrent use; give each worker its own.
//
// The removal-count methods take a budget: with budget >= 0 they may stop as
// soon as the removals exceed it and then return some value > budget; with a
// negative budget they return the exact count. Columns must be consistent
// with the partition's table: every rank < Cardinality.
type Validator struct {
	part   partitionScratch
	keys   []uint64
	tmp    []uint64
	counts []uint32
	// boundCounts are OCStrengthBound's B counters, zero between calls.
	boundCounts []uint32
	// countsA are the zeroed bucket counters of lazyClass.
	countsA []uint32
	// The LNDS of each polarity of the class being validated.
	ascState, descState lndsState
	ascSmall, descSmall smallLNDS
	// bvals holds a class's B ranks bucketed by A for smallBClass.
	bvals []uint8
	// pairHist and pairOcc are pairHistClass's counters of (A, B) pairs
	// and bit sets of the B values of each A, zero between calls.
	pairHist []uint32
	pairOcc  []uint64
	it       iterScratch
	// classOrder lists orderPart's classes largest first.
	classOrder []uint32
	orderPart  *StrippedPartition
	// Buffers of OCShuffledRemovals: one class's B ranks, and the
	// shuffled B column (indexed by row).
	shuffleTails []uint32
	shuffled     []uint32
	// classOf maps a row to its class of the smaller context plus one in
	// OFDStrengthWithin, zero between calls.
	classOf []uint32
	// Pause, when set, is called between pieces of about PauseEvery rows
	// of one validation (tick), so that its caller (the lattice's worker:
	// discovery's Options.Pause) can take the CPU back in the middle of a
	// long one: one class of a large window takes milliseconds. The caller
	// sets both between validations. spent counts the rows since the last
	// call.
	Pause      func()
	PauseEvery int
	spent      int
}

// PauseRows is the Validator's default PauseEvery: a few hundred
// microseconds of work (rows read, bucketed or sorted) between two calls
// of its pause.
const PauseRows = 1 << 13

// tick counts rows of work done and calls v.Pause (when set) once
// PauseEvery of them have passed since the last call.
func (v *Validator) tick(rows int) {
	if v.Pause == nil {
		return
	}
	v.spent += rows
	if v.spent >= v.PauseEvery {
		v.spent = 0
		v.Pause()
	}
}

// largestFirst returns p's class indices by size descending (ties by
// index): the order stored with p by the lattice, else one cached for
// consecutive validations at the same context.
func (v *Validator) largestFirst(p *StrippedPartition) []uint32 {
	if p.bySize != nil {
		return p.bySize
	}
	if v.orderPart == p {
		return v.classOrder
	}
	v.classOrder, v.orderPart = ClassesBySize(p, v.classOrder), p
	return v.classOrder
}

// NewValidator returns a Validator with empty buffers; they grow on demand.
func NewValidator() *Validator { return &Validator{PauseEvery: PauseRows} }

// Product returns the stripped partition of the union of p's and q's
// contexts, using the Validator's probe table.
func (v *Validator) Product(p, q *StrippedPartition) *StrippedPartition {
	if v.Pause == nil {
		return v.part.product(p, q, nil)
	}
	return v.part.product(p, q, v.tick)
}

// rankBits is the number of bits needed for the ranks of c.
func rankBits(c *table.Column) uint {
	if c.Cardinality <= 1 {
		return 0
	}
	return uint(bits.Len32(uint32(c.Cardinality - 1)))
}

// OFDRemovals returns the g3 removals of X: [] -> A where p is X's
// partition: per class, the rows not carrying the class's most frequent
// value of A. Linear in the covered rows.
func (v *Validator) OFDRemovals(p *StrippedPartition, a *table.Column, budget int) int {
	if len(v.counts) < a.Cardinality {
		v.counts = make([]uint32, a.Cardinality)
	}
	counts := v.counts
	ranks := a.Ranks
	removals := 0
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		var best uint32
		for _, r := range cls {
			x := ranks[r]
			counts[x]++
			if counts[x] > best {
				best = counts[x]
			}
		}
		for _, r := range cls {
			counts[ranks[r]] = 0
		}
		removals += len(cls) - int(best)
		if budget >= 0 && removals > budget {
			return removals
		}
		v.tick(len(cls))
	}
	return removals
}

// OCRemovals returns the removals of X: A ~ B with the given polarity, p
// being X's partition.
func (v *Validator) OCRemovals(p *StrippedPartition, a, b *table.Column, pol Polarity, budget int) int {
	asc, desc := v.ocRemovals(p, a, b, pol == Asc, pol == Desc, budget)
	if pol == Desc {
		return desc
	}
	return asc
}

// OCRemovalsBoth returns the removals of X: A ~ B for both polarities from
// one ordering of each class.
func (v *Validator) OCRemovalsBoth(p *StrippedPartition, a, b *table.Column, budget int) (asc, desc int) {
	return v.ocRemovals(p, a, b, true, true, budget)
}

// lazyMin is the class size from which ocRemovals buckets a class by A and
// sorts the buckets only as the LNDS reaches them. When B has at most 64
// ranks every class above smallClass goes that way, as its buckets then
// usually need no sort at all (smallBClass).
const lazyMin = 256

// ocRemovals orders each class by (rank A, rank B) and measures a longest
// non-decreasing subsequence of B (asc) and, reading each run of equal A
// backwards, a longest non-increasing one (desc). With budget 0 a linear
// scan for the first swap replaces the LNDS.
//
// A swap is symmetric in A and B (A_s < A_t with B_s > B_t is B_t < B_s
// with A_t > A_s), so the removals of A ~ B and B ~ A are the same for each
// polarity: the column with more ranks is taken as the outer key, which
// makes the runs of equal outer rank short. Classes are taken largest
// first, as they tend to need the most removals, which ends invalid
// candidates sooner; large classes are bucketed by the outer rank and each
// bucket sorted just before the LNDS reads it, so the part of a class after
// the budget runs out is never sorted.
func (v *Validator) ocRemovals(p *StrippedPartition, a, b *table.Column, wantAsc, wantDesc bool, budget int) (asc, desc int) {
	oc := newOCColumns(a, b)
	for _, i := range v.largestFirst(p) {
		if !wantAsc && !wantDesc {
			break
		}
		cls := p.Class(int(i))
		remAsc, remDesc := -1, -1
		if budget > 0 {
			remAsc, remDesc = budget-asc, budget-desc
		}
		if constantIn(cls, oc.ar) || constantIn(cls, oc.br) {
			// No swap without two values of each: 0 removals for both
			// polarities. Deep in the lattice many classes are like this,
			// and a class that is not usually shows it at its second row.
			v.tick(len(cls))
			continue
		}
		if budget != 0 && len(cls) <= smallClass {
			da, dd := smallClassRemovals(cls, oc.ar, oc.br, oc.bitsB, oc.maxB)
			asc += da
			desc += dd
			v.tick(len(cls))
		} else {
			da, dd := v.classRemovals(cls, &oc, wantAsc, wantDesc, remAsc, remDesc, budget == 0)
			asc += da
			desc += dd
		}
		if budget >= 0 && asc > budget {
			wantAsc = false
		}
		if budget >= 0 && desc > budget {
			wantDesc = false
		}
	}
	return asc, desc
}

// ocColumns are the two columns of an OC as ocRemovals reads them: the
// one with more ranks as the outer key a, with the widths of both.
type ocColumns struct {
	ar, br       []uint32
	cardA        int
	bitsA, bitsB uint
	mask         uint64 // of B's bits in a key
	maxB         uint32
}

// newOCColumns returns the ocColumns of A ~ B, swapped when B has more
// ranks (the removals are the same: see ocRemovals).
func newOCColumns(a, b *table.Column) ocColumns {
	if b.Cardinality > a.Cardinality {
		a, b = b, a
	}
	bitsB := rankBits(b)
	return ocColumns{ar: a.Ranks, br: b.Ranks, cardA: a.Cardinality, bitsA: rankBits(a), bitsB: bitsB,
		mask: uint64(1)<<bitsB - 1, maxB: uint32(max(b.Cardinality-1, 0))}
}

// classRemovals returns the removals of one class in the wanted
// polarities (0 in the others) on ocRemovals' paths for classes above
// smallClass (any class when first, the linear check for a first swap of
// budget 0): lazyClass for large classes and for B of at most 64 ranks,
// a sort of the keys otherwise. remAsc and remDesc >= 0 let it stop once
// the removals exceed them.
func (v *Validator) classRemovals(cls []uint32, oc *ocColumns, wantAsc, wantDesc bool, remAsc, remDesc int, first bool) (asc, desc int) {
	if cap(v.keys) < len(cls) {
		v.keys = make([]uint64, len(cls))
		v.tmp = make([]uint64, len(cls))
	}
	if !first && (len(cls) >= lazyMin || oc.bitsB <= 6) {
		// lazyClass ticks bucket by bucket.
		return v.lazyClass(cls, oc.ar, oc.br, oc.cardA, oc.bitsB, oc.maxB, wantAsc, wantDesc, remAsc, remDesc)
	}
	v.tick(len(cls))
	keys := v.keys[:len(cls)]
	for j, r := range cls {
		keys[j] = uint64(oc.ar[r])<<oc.bitsB | uint64(oc.br[r])
	}
	keys = sortKeys(keys, v.tmp[:len(cls)], oc.bitsA+oc.bitsB)
	if wantAsc {
		if first {
			asc = firstDecrease(keys, oc.mask)
		} else {
			v.ascState.reset()
			v.ascState.feedAsc(keys, oc.mask, remAsc)
			asc = v.ascState.removals()
		}
	}
	if wantDesc {
		if first {
			desc = firstIncreaseDesc(keys, oc.bitsB, oc.mask)
		} else {
			v.descState.reset()
			v.descState.feedDesc(keys, oc.bitsB, oc.mask, oc.maxB, remDesc)
			desc = v.descState.removals()
		}
	}
	return asc, desc
}

// constantIn reports whether every row of cls has the same rank.
func constantIn(cls, ranks []uint32) bool {
	x := ranks[cls[0]]
	for _, r := range cls[1:] {
		if ranks[r] != x {
			return false
		}
	}
	return true
}

// smallClass is the class size up to which ocRemovals uses
// smallClassRemovals: at deep levels most classes are this small, and
// there the per-class overhead of the general path dominates.
const smallClass = 16

// smallClassRemovals returns the exact asc and desc removals of one class
// of at most smallClass rows: keys on the stack, an insertion sort, and
// LNDS tails searched linearly.
func smallClassRemovals(cls, ar, br []uint32, bitsB uint, maxB uint32) (asc, desc int) {
	if len(cls) == 2 {
		a0, a1 := ar[cls[0]], ar[cls[1]]
		b0, b1 := br[cls[0]], br[cls[1]]
		if a0 == a1 || b0 == b1 {
			return 0, 0
		}
		if (a0 < a1) == (b0 < b1) {
			return 0, 1
		}
		return 1, 0
	}
	var kb [smallClass]uint64
	keys := kb[:len(cls)]
	for j, r := range cls {
		insertKey(keys, j, uint64(ar[r])<<bitsB|uint64(br[r]))
	}
	mask := uint64(1)<<bitsB - 1
	var tb [smallClass]uint32
	tails := tb[:0]
	for _, k := range keys {
		tails = pushSmall(tails, uint32(k&mask))
	}
	asc = len(keys) - len(tails)
	tails = tb[:0]
	for i := 0; i < len(keys); {
		e := i + 1
		for e < len(keys) && keys[e]>>bitsB == keys[i]>>bitsB {
			e++
		}
		for j := e - 1; j >= i; j-- {
			tails = pushSmall(tails, maxB-uint32(keys[j]&mask))
		}
		i = e
	}
	return asc, len(keys) - len(tails)
}

// pushSmall is one patience-sorting step on short tails: x replaces the
// first tail above it, or extends the tails.
func pushSmall(tails []uint32, x uint32) []uint32 {
	for i, t := range tails {
		if t > x {
			tails[i] = x
			return tails
		}
	}
	return append(tails, x)
}

// lazyClass returns the asc and desc removals of one large class (0 for a
// polarity not wanted; possibly stopped early once above remAsc/remDesc
// when those are >= 0). The rows are bucketed by A (by A >> shift when A
// spans more ranks than the class has rows), keeping whole runs of equal A
// in a bucket, and each bucket is sorted only when the LNDS gets to it.
func (v *Validator) lazyClass(cls, ar, br []uint32, cardA int, bitsB uint, maxB uint32, wantAsc, wantDesc bool, remAsc, remDesc int) (asc, desc int) {
	// A's whole rank range makes buckets enough when it is not much wider
	// than the class; otherwise the class's own range saves counters.
	loA, span := uint32(0), cardA
	if cardA > 2*len(cls) {
		hiA := ar[cls[0]]
		loA = hiA
		for _, r := range cls[1:] {
			loA = min(loA, ar[r])
			hiA = max(hiA, ar[r])
		}
		span = int(hiA-loA) + 1
	}
	shift := uint(0)
	for span>>shift > len(cls) {
		shift++
	}
	buckets := (span-1)>>shift + 1
	if shift == 0 && bitsB <= 6 && pairHistFits(buckets, maxB, len(cls)) {
		return v.pairHistClass(cls, ar, br, loA, buckets, maxB, wantAsc, wantDesc, remAsc, remDesc)
	}
	if cap(v.countsA) < buckets+1 {
		v.countsA = make([]uint32, buckets+1)
	}
	cnt := v.countsA[:buckets+1]
	for _, r := range cls {
		cnt[(ar[r]-loA)>>shift+1]++
	}
	for d := 1; d <= buckets; d++ {
		cnt[d] += cnt[d-1]
	}
	if shift == 0 && bitsB <= 6 {
		return v.smallBClass(cls, ar, br, cnt, loA, maxB, wantAsc, wantDesc, remAsc, remDesc)
	}
	keys := v.keys[:len(cls)]
	for _, r := range cls {
		x := ar[r]
		d := (x - loA) >> shift
		keys[cnt[d]] = uint64(x)<<bitsB | uint64(br[r])
		cnt[d]++
	}
	// cnt[d] is now the end of bucket d.
	v.ascState.reset()
	v.descState.reset()
	mask := uint64(1)<<bitsB - 1
	start := uint32(0)
	for d := 0; d < buckets && (wantAsc || wantDesc); d++ {
		end := cnt[d]
		run := keys[start:end]
		start = end
		switch {
		case len(run) <= 1:
		case len(run) <= 16:
			for x := 1; x < len(run); x++ {
				for y := x; y > 0 && run[y] < run[y-1]; y-- {
					run[y], run[y-1] = run[y-1], run[y]
				}
			}
		default:
			run = sortKeys(run, v.tmp[:len(run)], 64)
		}
		if wantAsc && !v.ascState.feedAsc(run, mask, remAsc) {
			wantAsc = false
		}
		if wantDesc && shift == 0 {
			// One bucket is one run of equal A.
			if !v.descState.feedDescRun(run, mask, maxB, remDesc) {
				wantDesc = false
			}
		} else if wantDesc && !v.descState.feedDesc(run, bitsB, mask, maxB, remDesc) {
			wantDesc = false
		}
		v.tick(len(run))
	}
	clear(cnt)
	return v.ascState.removals(), v.descState.removals()
}

// smallBClass is lazyClass when each bucket is one run of equal A and B
// has at most 64 ranks: a run's B values, sorted, are just a histogram, and
// the LNDS tails are a multiset of at most 64 values (smallLNDS), so a run
// costs one pass over its rows plus O(distinct B) steps, with no sort and no
// search. cnt holds the bucket starts shifted by one, as lazyClass builds
// them; it is left zeroed.
func (v *Validator) smallBClass(cls, ar, br []uint32, cnt []uint32, loA, maxB uint32, wantAsc, wantDesc bool, remAsc, remDesc int) (asc, desc int) {
	if cap(v.bvals) < len(cls) {
		v.bvals = make([]uint8, len(cls))
	}
	bv := v.bvals[:len(cls)]
	for _, r := range cls {
		d := ar[r] - loA
		bv[cnt[d]] = uint8(br[r])
		cnt[d]++
	}
	// cnt[d] is now the end of bucket d.
	v.ascSmall.reset()
	v.descSmall.reset()
	var hist [64]uint32
	start := uint32(0)
	buckets := len(cnt) - 1
	for d := 0; d < buckets && (wantAsc || wantDesc); d++ {
		end := cnt[d]
		run := bv[start:end]
		start = end
		if len(run) == 0 {
			continue
		}
		var occ uint64
		for _, x := range run {
			hist[x]++
			occ |= 1 << x
		}
		wantAsc, wantDesc = v.feedSmallRun(hist[:], occ, maxB, wantAsc, wantDesc, remAsc, remDesc)
		v.tick(len(run))
	}
	clear(cnt)
	return v.ascSmall.removals(), v.descSmall.removals()
}

// feedSmallRun feeds one bucket's histogram of B (hist, with occ the bit
// set of the values present) to the polarities still wanted, ascending
// values to ascSmall and descending ones to descSmall, and zeroes hist's
// counters again. It returns which polarities are still wanted: a
// polarity stops once above its removal budget (remAsc/remDesc, negative
// for none).
func (v *Validator) feedSmallRun(hist []uint32, occ uint64, maxB uint32, wantAsc, wantDesc bool, remAsc, remDesc int) (bool, bool) {
	if wantAsc {
		for m := occ; m != 0; m &= m - 1 {
			x := uint32(bits.TrailingZeros64(m))
			v.ascSmall.feed(x, hist[x])
		}
		if remAsc >= 0 && v.ascSmall.removals() > remAsc {
			wantAsc = false
		}
	}
	if wantDesc {
		for m := occ; m != 0; {
			x := uint32(63 - bits.LeadingZeros64(m))
			m &^= 1 << x
			v.descSmall.feed(maxB-x, hist[x])
		}
		if remDesc >= 0 && v.descSmall.removals() > remDesc {
			wantDesc = false
		}
	}
	for m := occ; m != 0; m &= m - 1 {
		hist[bits.TrailingZeros64(m)] = 0
	}
	return wantAsc, wantDesc
}

// pairHistMax is the number of (A, B) counters up to which lazyClass
// counts a class with one bucket per A value and B of at most 64 ranks
// as a histogram of its pairs (pairHistClass), and pairHistRows the most
// counters per row of the class: within both the counters stay in the
// cache, and one pass over the rows replaces smallBClass's three.
const (
	pairHistMax  = 1 << 14
	pairHistRows = 4
)

// pairHistFits reports whether pairHistClass takes a class of the given
// rows with buckets A values and B ranks up to maxB.
func pairHistFits(buckets int, maxB uint32, rows int) bool {
	n := buckets * (int(maxB) + 1)
	return n <= pairHistMax && n <= pairHistRows*rows
}

// pairHistClass is smallBClass counting the class's (A - loA, B) pairs
// in one pass: a bucket's histogram of B is then its row of counters,
// fed to the LNDS as smallBClass feeds its own, bucket by bucket, with the
// same stops once above remAsc/remDesc (so it returns what smallBClass
// returns). It leaves its counters zeroed.
func (v *Validator) pairHistClass(cls, ar, br []uint32, loA uint32, buckets int, maxB uint32, wantAsc, wantDesc bool, remAsc, remDesc int) (asc, desc int) {
	w := int(maxB) + 1
	if len(v.pairHist) < buckets*w {
		v.pairHist = make([]uint32, buckets*w)
	}
	if len(v.pairOcc) < buckets {
		v.pairOcc = make([]uint64, buckets)
	}
	h, occ := v.pairHist[:buckets*w], v.pairOcc[:buckets]
	for start := 0; start < len(cls); start += PauseRows {
		for _, r := range cls[start:min(start+PauseRows, len(cls))] {
			d, x := int(ar[r]-loA), br[r]
			h[d*w+int(x)]++
			occ[d] |= 1 << x
		}
		v.tick(min(PauseRows, len(cls)-start))
	}
	v.ascSmall.reset()
	v.descSmall.reset()
	for d, m := range occ {
		if m == 0 {
			continue
		}
		row := h[d*w : d*w+w]
		wantAsc, wantDesc = v.feedSmallRun(row, m, maxB, wantAsc, wantDesc, remAsc, remDesc)
		occ[d] = 0
	}
	return v.ascSmall.removals(), v.descSmall.removals()
}

// smallLNDS is lndsState for values below 64: the tails, a sorted
// multiset, are kept as a count per value and a bit set of the values
// present, so a patience step finds the first tail above x with one bit
// scan, and c equal values are fed at once.
type smallLNDS struct {
	cnt          [64]uint32
	occ          uint64
	length, seen int
}

func (s *smallLNDS) reset() {
	for m := s.occ; m != 0; m &= m - 1 {
		s.cnt[bits.TrailingZeros64(m)] = 0
	}
	s.occ, s.length, s.seen = 0, 0, 0
}

func (s *smallLNDS) removals() int { return s.seen - s.length }

// feed is c patience steps with value x < 64: each copy replaces the
// smallest tail above x, or extends the tails when there is none.
func (s *smallLNDS) feed(x, c uint32) {
	s.seen += int(c)
	above := ^(uint64(1)<<x | (uint64(1)<<x - 1)) // bits x+1..63
	for c > 0 {
		m := s.occ & above
		if m == 0 {
			s.cnt[x] += c
			s.occ |= 1 << x
			s.length += int(c)
			return
		}
		y := bits.TrailingZeros64(m)
		t := min(c, s.cnt[y])
		s.cnt[y] -= t
		if s.cnt[y] == 0 {
			s.occ &^= 1 << y
		}
		s.cnt[x] += t
		s.occ |= 1 << x
		c -= t
	}
}

// firstDecrease returns 1 if the B parts of the (A,B)-sorted keys ever
// decrease (a swap exists), else 0: the exact check for eps = 0.
func firstDecrease(keys []uint64, mask uint64) int {
	prev := keys[0] & mask
	for _, k := range keys[1:] {
		x := k & mask
		if x < prev {
			return 1
		}
		prev = x
	}
	return 0
}

// firstIncreaseDesc is firstDecrease for the desc polarity: read as runs of
// equal A with B descending, the B sequence is non-increasing iff each
// run's smallest B is >= the next run's largest B.
func firstIncreaseDesc(keys []uint64, bitsB uint, mask uint64) int {
	runMin := keys[0] & mask
	for j := 1; j < len(keys); j++ {
		if keys[j]>>bitsB != keys[j-1]>>bitsB {
			// keys[j-1] is the largest B of the previous run; find this run's
			// largest B at its end.
			e := j
			for e+1 < len(keys) && keys[e+1]>>bitsB == keys[j]>>bitsB {
				e++
			}
			if keys[e]&mask > runMin {
				return 1
			}
			runMin = keys[j] & mask
			j = e
		}
	}
	return 0
}

// lndsState is a longest non-decreasing subsequence in the making
// (patience sorting): tails[i] is the smallest last value of such a
// subsequence of length i+1 over the values seen so far, and the last
// write was tails[last] = prev.
type lndsState struct {
	tails []uint32
	last  int
	prev  uint32
	seen  int
}

func (s *lndsState) reset() {
	s.tails = s.tails[:0]
	s.last, s.prev, s.seen = 0, 0, 0
}

// removals is the number of values seen minus the LNDS length so far: a
// lower bound on the final removals, exact once every value is fed.
func (s *lndsState) removals() int { return s.seen - len(s.tails) }

// feedAsc extends the LNDS by the B parts of keys (O(log) per value).
// With rem >= 0 it stops once the removals exceed rem and returns false.
func (s *lndsState) feedAsc(keys []uint64, mask uint64, rem int) bool {
	tails, last, prev, seen := s.tails, s.last, s.prev, s.seen
	ok := true
	for _, k := range keys {
		x := uint32(k & mask)
		seen++
		n := len(tails)
		if n == 0 || tails[n-1] <= x {
			tails = append(tails, x)
			last, prev = n, x
			continue
		}
		// tails[n-1] > x >= prev = tails[last] puts last+1 in range.
		if x >= prev && tails[last+1] > x {
			last++
		} else {
			last = upperBoundNear(tails, x, last, prev)
		}
		prev = x
		tails[last] = x
		if rem >= 0 && seen-n > rem {
			ok = false
			break
		}
	}
	s.tails, s.last, s.prev, s.seen = tails, last, prev, seen
	return ok
}

// feedDesc is feedAsc for the desc polarity: it walks each run of equal A
// in keys (runs must not straddle calls) backwards, B descending, and
// extends a longest non-decreasing subsequence of maxB - B, i.e. a longest
// non-increasing one of B. Its inner loop repeats feedDescRun's on purpose:
// calling feedDescRun per run would reload the state for every run, in the
// validators' hottest loop.
func (s *lndsState) feedDesc(keys []uint64, bitsB uint, mask uint64, maxB uint32, rem int) bool {
	tails, last, prev, seen := s.tails, s.last, s.prev, s.seen
	ok := true
run:
	for i := 0; i < len(keys); {
		e := i + 1
		for e < len(keys) && keys[e]>>bitsB == keys[i]>>bitsB {
			e++
		}
		for j := e - 1; j >= i; j-- {
			seen++
			x := maxB - uint32(keys[j]&mask)
			n := len(tails)
			if n == 0 || tails[n-1] <= x {
				tails = append(tails, x)
				last, prev = n, x
				continue
			}
			if x >= prev && tails[last+1] > x {
				last++
			} else {
				last = upperBoundNear(tails, x, last, prev)
			}
			prev = x
			tails[last] = x
			if rem >= 0 && seen-n > rem {
				ok = false
				break run
			}
		}
		i = e
	}
	s.tails, s.last, s.prev, s.seen = tails, last, prev, seen
	return ok
}

// feedDescRun is feedDesc for keys that all share their A: it walks them
// backwards without looking for run boundaries.
func (s *lndsState) feedDescRun(keys []uint64, mask uint64, maxB uint32, rem int) bool {
	tails, last, prev, seen := s.tails, s.last, s.prev, s.seen
	ok := true
	for j := len(keys) - 1; j >= 0; j-- {
		seen++
		x := maxB - uint32(keys[j]&mask)
		n := len(tails)
		if n == 0 || tails[n-1] <= x {
			tails = append(tails, x)
			last, prev = n, x
			continue
		}
		if x >= prev && tails[last+1] > x {
			last++
		} else {
			last = upperBoundNear(tails, x, last, prev)
		}
		prev = x
		tails[last] = x
		if rem >= 0 && seen-n > rem {
			ok = false
			break
		}
	}
	s.tails, s.last, s.prev, s.seen = tails, last, prev, seen
	return ok
}

// upperBound returns the first index i with s[i] > x (len(s) if none).
func upperBound(s []uint32, x uint32) int {
	lo, hi := 0, len(s)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// upperBoundNear is upperBound(s, x) for an LNDS that last wrote
// s[last] = prev, with x < s[len(s)-1]: the answer lies after last when x >= prev and at or
// before it otherwise, so an exponential search from last finds it in
// O(log distance). Within a run of equal A the values are sorted and the
// answer is usually last+1.
func upperBoundNear(s []uint32, x uint32, last int, prev uint32) int {
	if x >= prev {
		lo, step := last+1, 1
		hi := lo
		for hi < len(s) && s[hi] <= x {
			lo = hi + 1
			hi = lo + step
			step <<= 1
		}
		return lo + upperBound(s[lo:min(hi, len(s))], x)
	}
	hi, step := last, 1 // s[hi] > x
	lo := hi - 1
	for lo >= 0 && s[lo] > x {
		hi = lo
		lo = hi - step
		step <<= 1
	}
	lo = max(lo, -1) + 1 // s[lo-1] <= x, or lo == 0
	return lo + upperBound(s[lo:hi], x)
}

// sortKeys sorts keys whose values fit in width bits and returns the sorted
// slice (keys or tmp). Tiny inputs use pdqsort; larger ones an LSD radix
// sort of the keys' offsets from their minimum (a class usually spans a
// small part of the key space, so fewer digits), with 6-bit digits up to
// 256 keys, 8-bit digits up to 64k keys and 11-bit digits above (fewer
// passes once the counters are cheap next to the keys), skipping digits
// that are the same everywhere.
func sortKeys(keys, tmp []uint64, width uint) []uint64 {
	n := len(keys)
	if n <= 48 {
		slices.Sort(keys)
		return keys
	}
	lo, hi := keys[0], keys[0]
	for _, k := range keys[1:] {
		lo = min(lo, k)
		hi = max(hi, k)
	}
	width = min(width, uint(bits.Len64(hi-lo)))
	switch {
	case n <= 256:
		var hist [11 << 6]uint32
		return radixSort(keys, tmp, lo, width, 6, hist[:])
	case n <= 1<<16:
		var hist [8 << 8]uint32
		return radixSort(keys, tmp, lo, width, 8, hist[:])
	default:
		var hist [6 << 11]uint32
		return radixSort(keys, tmp, lo, width, 11, hist[:])
	}
}

// radixSort is the LSD radix sort of sortKeys on k - lo with digits of db
// bits; hist holds zeroed counters, 1<<db per digit.
func radixSort(keys, tmp []uint64, lo uint64, width, db uint, hist []uint32) []uint64 {
	n := len(keys)
	passes := int((width + db - 1) / db)
	if passes == 0 {
		return keys
	}
	mask := uint64(1)<<db - 1
	for _, k := range keys {
		k -= lo
		for p := 0; p < passes; p++ {
			hist[p<<db+int((k>>(db*uint(p)))&mask)]++
		}
	}
	src, dst := keys, tmp
	for p := 0; p < passes; p++ {
		h := hist[p<<db : (p+1)<<db]
		shift := db * uint(p)
		if h[((src[0]-lo)>>shift)&mask] == uint32(n) {
			continue // every key has the same digit here
		}
		var sum uint32
		for d := range h {
			c := h[d]
			h[d] = sum
			sum += c
		}
		for _, k := range src {
			d := ((k - lo) >> shift) & mask
			dst[h[d]] = k
			h[d]++
		}
		src, dst = dst, src
	}
	return src
}

// chainScratch holds chainRemovals' buffers across the classes of one
// removal set, so that a partition of many small classes allocates once.
type chainScratch struct {
	items      []chainItem
	keys, tmp  []uint64
	vals       []uint32
	keep       []bool
	tails      []uint32
	tailIdx    []int32
	prev       []int32
	packedBits uint // chainPackedBits, unless a test forces another
}

// lndsKeep marks in s.keep (len(vals)) the members of one longest
// non-decreasing subsequence of vals: patience sorting with predecessor
// links, the chain ending at the last pile's top. It serves the
// removal-set reports, not the hot path.
func (s *chainScratch) lndsKeep(vals []uint32) []bool {
	tails, tailIdx := slices.Grow(s.tails[:0], len(vals)), slices.Grow(s.tailIdx[:0], len(vals))
	s.prev = slices.Grow(s.prev[:0], len(vals))[:len(vals)]
	prev := s.prev
	last, prevX := 0, uint32(0) // the pile written last and its value
	for i, x := range vals {
		// upperBound(tails, x), found as lndsState.feedAsc finds it
		var j int
		switch n := len(tails); {
		case n == 0 || tails[n-1] <= x:
			j = n
		case x >= prevX && tails[last+1] > x:
			j = last + 1
		default:
			j = upperBoundNear(tails, x, last, prevX)
		}
		last, prevX = j, x
		if j > 0 {
			prev[i] = tailIdx[j-1]
		} else {
			prev[i] = -1
		}
		if j == len(tails) {
			tails = append(tails, x)
			tailIdx = append(tailIdx, int32(i))
		} else {
			tails[j] = x
			tailIdx[j] = int32(i)
		}
	}
	s.tails, s.tailIdx = tails, tailIdx
	s.keep = slices.Grow(s.keep[:0], len(vals))[:len(vals)]
	keep := s.keep
	clear(keep)
	if len(tails) > 0 {
		for i := tailIdx[len(tailIdx)-1]; i >= 0; i = prev[i] {
			keep[i] = true
		}
	}
	return keep
}

// chainItem is one row of a class prepared for a removal-set computation:
// rows are ordered by (key, row) and a longest non-decreasing subsequence
// of val is kept.
type chainItem struct {
	key uint64
	row uint32
	val uint32
}

func compareChainItems(x, y chainItem) int {
	if x.key != y.key {
		if x.key < y.key {
			return -1
		}
		return 1
	}
	return int(x.row) - int(y.row)
}

// chainPackedBits is the widest (key, row) pair chainRemovals sorts packed
// into one uint64 by sortKeys' radix sort; wider pairs (keys of more than
// 64 bits with the row) are sorted by compareChainItems.
const chainPackedBits = 64

// sortChain fills s.items with the items of the rows of cls (item(r) for
// each), ordered by (key, row). Keys of keyBits bits, with the rows' rowBits,
// are packed into one word each and radix sorted when they fit in
// s.packedBits, the item rebuilt from the row after; else compared.
func (s *chainScratch) sortChain(cls []uint32, keyBits, rowBits uint, item func(r uint32) chainItem) []chainItem {
	items := slices.Grow(s.items[:0], len(cls))
	if keyBits+rowBits > s.packedBits {
		for _, r := range cls {
			items = append(items, item(r))
		}
		slices.SortFunc(items, compareChainItems)
		s.items = items
		return items
	}
	keys := slices.Grow(s.keys[:0], len(cls))
	for _, r := range cls {
		keys = append(keys, item(r).key<<rowBits|uint64(r))
	}
	s.tmp = slices.Grow(s.tmp[:0], len(keys))[:len(keys)]
	sorted := sortKeys(keys, s.tmp, keyBits+rowBits)
	mask := uint64(1)<<rowBits - 1
	for _, k := range sorted {
		items = append(items, item(uint32(k&mask)))
	}
	s.keys, s.items = keys, items
	return items
}

// chainRemovals returns the rows (ascending) of one minimal removal set of
// the classes of p, given how to build each row's item, whose keys have at
// most keyBits bits: per class, the rows off one longest non-decreasing
// subsequence of val in (key, row) order (lndsKeep).
func chainRemovals(p *StrippedPartition, keyBits uint, item func(r uint32) chainItem) []int {
	return chainRemovalsWith(p, keyBits, item, &chainScratch{packedBits: chainPackedBits})
}

func chainRemovalsWith(p *StrippedPartition, keyBits uint, item func(r uint32) chainItem, s *chainScratch) []int {
	var out []int
	rowBits := uint(bits.Len32(uint32(max(p.N-1, 0))))
	for i := 0; i < p.NumClasses(); i++ {
		items := s.sortChain(p.Class(i), keyBits, rowBits, item)
		vals := slices.Grow(s.vals[:0], len(items))
		for _, it := range items {
			vals = append(vals, it.val)
		}
		s.vals = vals
		for j, kept := range s.lndsKeep(vals) {
			if !kept {
				out = append(out, int(items[j].row))
			}
		}
	}
	slices.Sort(out)
	return out
}

// OCRemovalRows returns the rows (ascending) of one minimal removal set of
// X: A ~ B with the given polarity, p being X's partition.
func OCRemovalRows(p *StrippedPartition, a, b *table.Column, pol Polarity) []int {
	bitsB := rankBits(b)
	maxB := uint32(max(b.Cardinality-1, 0))
	return chainRemovals(p, rankBits(a)+bitsB, func(r uint32) chainItem {
		x := b.Ranks[r]
		if pol == Desc {
			x = maxB - x
		}
		return chainItem{key: uint64(a.Ranks[r])<<bitsB | uint64(x), row: r, val: x}
	})
}

// OFDRemovalRows returns the rows (ascending) of one minimal removal set of
// X: [] -> A: per class, the rows not carrying its most frequent value
// (the smallest such value on ties).
func OFDRemovalRows(p *StrippedPartition, a *table.Column) []int {
	counts := make([]uint32, a.Cardinality)
	var out []int
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		var best uint32
		var bestRank uint32
		for _, r := range cls {
			x := a.Ranks[r]
			counts[x]++
			if counts[x] > best || (counts[x] == best && x < bestRank) {
				best, bestRank = counts[x], x
			}
		}
		for _, r := range cls {
			counts[a.Ranks[r]] = 0
			if a.Ranks[r] != bestRank {
				out = append(out, int(r))
			}
		}
	}
	slices.Sort(out)
	return out
}

// ListODRemovalRows returns the rows (ascending) of one minimal removal set
// of the list-based OD lhs -> rhs within the classes of p: each class is
// sorted by the lhs list ascending, ties broken by the rhs list descending,
// and a longest non-decreasing subsequence over the rhs list is kept (paper,
// Sec. 3.3). Lists compare lexicographically by rank.
func ListODRemovalRows(p *StrippedPartition, lhs, rhs []*table.Column) []int {
	n := p.N
	l, cardL := tupleRanks(lhs, n)
	r, cardR := tupleRanks(rhs, n)
	bitsR := uint(bits.Len32(uint32(max(cardR-1, 0))))
	maxR := uint32(max(cardR-1, 0))
	bitsL := uint(bits.Len32(uint32(max(cardL-1, 0))))
	return chainRemovals(p, bitsL+bitsR, func(row uint32) chainItem {
		return chainItem{key: uint64(l[row])<<bitsR | uint64(maxR-r[row]), row: row, val: r[row]}
	})
}

// tupleRanks gives every row the dense rank of its tuple of ranks over cols
// in lexicographic order, and the number of distinct tuples.
func tupleRanks(cols []*table.Column, n int) ([]uint32, int) {
	out := make([]uint32, n)
	if len(cols) == 0 || n == 0 {
		return out, min(n, 1)
	}
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	cmp := func(x, y uint32) int {
		for _, c := range cols {
			if a, b := c.Ranks[x], c.Ranks[y]; a != b {
				if a < b {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	slices.SortFunc(order, cmp)
	var rank uint32
	for i, row := range order {
		if i > 0 && cmp(order[i-1], row) != 0 {
			rank++
		}
		out[row] = rank
	}
	return out, int(rank) + 1
}

// insertKey places k among keys[:j], kept sorted, by insertion: the sort of
// a class of at most smallClass rows.
func insertKey(keys []uint64, j int, k uint64) {
	y := j
	for ; y > 0 && keys[y-1] > k; y-- {
		keys[y] = keys[y-1]
	}
	keys[y] = k
}
