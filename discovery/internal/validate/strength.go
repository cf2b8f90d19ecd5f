package validate

import (
	"math"
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// Strength: how much better than chance a dependency holds, in [0,1]
// (docs/DESIGN.md, "Strength" and "Keys, equivalences and implied rules",
// derive the measures of OFDs, OCs and keys). Each has the form
//
//	strength = 1 - (observed error + k) / (error expected by chance + k)
//
// clamped at 0, with k = strengthPseudoRows, and each takes its chance
// model from a partition (the context's; for a key, the rest of the
// key's), so that a context with tiny classes (a near key) expects almost
// no error and earns no strength for having little, and a column that is
// almost constant expects little error and earns little for it.

// ColumnPdep returns pdep(A) = sum over the values v of A of (|A=v| / n)^2,
// NULL counting as a value (1 for an empty column).
func ColumnPdep(c *table.Column) float64 {
	n := len(c.Ranks)
	if n == 0 {
		return 1
	}
	counts := make([]uint64, c.Cardinality)
	for _, r := range c.Ranks {
		counts[r]++
	}
	var sum float64
	for _, k := range counts {
		sum += float64(k * k)
	}
	return sum / (float64(n) * float64(n))
}

// strengthPseudoRows is the chance error, in rows, added to both the
// observed and the expected error of every strength (see chanceCorrected),
// so that a few chance errors on a small table do not read as a strong
// dependency; the afd-syn test (TestAFDSyn) bounds how large it may be.
const strengthPseudoRows = 10

// chanceCorrected is 1 - (observed + k) / (expected + k), clamped to [0, 1],
// with k = strengthPseudoRows: with k = 0 it is the chance-corrected measure
// "1 - observed error / error expected by chance" (mu for an OFD); k keeps a
// dependency whose chance error is a few rows (a near-key context, a column
// that is almost constant) from being called strong on that little
// evidence.
func chanceCorrected(observed, expected float64) float64 {
	s := 1 - (observed+strengthPseudoRows)/(expected+strengthPseudoRows)
	return min(max(s, 0), 1)
}

// fdStrength is the strength of an OFD from pdepXY = pdep(X -> A), pdepA =
// pdep(A), n rows and domX classes of X (singletons included): observed and
// expected error are the impurities of mu of Piatetsky-Shapiro and Matheus,
//
//	observed = n (1 - pdepXY),  expected = n (1 - pdepA) (n - domX) / (n - 1),
//
// so that with no pseudo-rows it is mu+ = max(0, 1 - observed/expected).
// A key X (domX = n) leaves nothing for chance and gets 0; no rows gets
// NoStrength.
func fdStrength(pdepXY, pdepA float64, n, domX int) float64 {
	if n == 0 {
		return NoStrength
	}
	if domX >= n {
		return 0
	}
	observed := float64(n) * (1 - pdepXY)
	expected := float64(n) * (1 - pdepA) * float64(n-domX) / float64(n-1)
	return chanceCorrected(max(observed, 0), max(expected, 0))
}

// OFDStrength returns the strength of X: [] -> A (fdStrength), p being X's
// partition and pdepA A's ColumnPdep. pdep(X -> A) = sum over classes x of
// X of sum_a |x, A=a|^2 / |x| / n; a singleton class adds 1/n.
func (v *Validator) OFDStrength(p *StrippedPartition, a *table.Column, pdepA float64) float64 {
	s, _ := v.OFDStrengthRemovals(p, a, pdepA)
	return s
}

// OFDStrengthRemovals is OFDStrength with, from the same pass, the g3
// removals of X: [] -> A in p (OFDRemovals with no budget).
func (v *Validator) OFDStrengthRemovals(p *StrippedPartition, a *table.Column, pdepA float64) (strength float64, removals int) {
	n := p.N
	if n == 0 {
		return NoStrength, 0
	}
	if len(v.counts) < a.Cardinality {
		v.counts = make([]uint32, a.Cardinality)
	}
	counts := v.counts
	ranks := a.Ranks
	sum := float64(n - p.Covered()) // singletons
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		sq, best := valueSquares(cls, ranks, counts)
		sum += float64(sq) / float64(len(cls))
		removals += len(cls) - int(best)
		v.tick(len(cls))
	}
	domX := p.NumClasses() + n - p.Covered()
	return fdStrength(sum/float64(n), pdepA, n, domX), removals
}

// OFDStrengthWithin is the chance-corrected measure of X: [] -> A when
// chance permutes A within each class of Y rather than over the whole
// table, x and y being the partitions of X and of a subset Y of X over the
// same records (every class of x lies within one of y): the conditional
// form of fdStrength. Observed is X's impurity n (1 - pdep(X -> A)) as
// there; expected sums, over the classes c of Y,
//
//	|c| (1 - pdep_c(A)) (|c| - dom_c(X)) / (|c| - 1),
//
// pdep_c(A) being A's pdep within c and dom_c(X) the number of classes of
// X in c (singletons included): the exact expectation of X's impurity in c
// when c's A values are permuted among its rows. With Y empty (one class)
// it is fdStrength. It asks whether X's extra columns tell A apart beyond
// what Y already does: an X that splits Y's classes into pure pieces by
// chance (small pieces, or Y nearly determining A) expects little error
// and earns little. Cost: O(|covered rows of y| + |covered rows of x|).
func (v *Validator) OFDStrengthWithin(x, y *StrippedPartition, a *table.Column) float64 {
	if x.N == 0 {
		return NoStrength
	}
	observed, expected := v.ofdWithinCounts(x, y, a)
	return chanceCorrected(max(observed, 0), max(expected, 0))
}

// ofdWithinCounts returns OFDStrengthWithin's observed and expected
// impurity.
func (v *Validator) ofdWithinCounts(x, y *StrippedPartition, a *table.Column) (observed, expected float64) {
	if len(v.counts) < a.Cardinality {
		v.counts = make([]uint32, a.Cardinality)
	}
	if len(v.classOf) < len(a.Ranks) {
		v.classOf = make([]uint32, len(a.Ranks))
	}
	counts, ranks, classOf := v.counts, a.Ranks, v.classOf
	for i := 0; i < y.NumClasses(); i++ {
		for _, r := range y.Class(i) {
			classOf[r] = uint32(i) + 1
		}
	}
	// pairs[i]: |c| - dom_c(X) for Y's class i, the rows of X's classes
	// in c beyond the first of each.
	pairs := v.zeroedCounts(&v.boundCounts, y.NumClasses())
	for i := 0; i < x.NumClasses(); i++ {
		cls := x.Class(i)
		sq, _ := valueSquares(cls, ranks, counts)
		observed += float64(len(cls)) - float64(sq)/float64(len(cls))
		if c := classOf[cls[0]]; c > 0 {
			pairs[c-1] += uint32(len(cls) - 1)
		}
		v.tick(len(cls))
	}
	for i := 0; i < y.NumClasses(); i++ {
		cls := y.Class(i)
		for _, r := range cls {
			classOf[r] = 0
		}
		if pairs[i] == 0 {
			continue
		}
		sq, _ := valueSquares(cls, ranks, counts)
		m := float64(len(cls))
		expected += (m - float64(sq)/m) * float64(pairs[i]) / (m - 1)
		pairs[i] = 0
		v.tick(len(cls))
	}
	return observed, expected
}

// valueSquares counts the values (ranks) of the rows cls in counts (zero
// at every rank, and left so): sq is the sum over the values of their
// count squared, best the largest count. It is the per-class step of the
// OFD measures (pdep and g3 in one pass).
func valueSquares(cls, ranks, counts []uint32) (sq uint64, best uint32) {
	for _, r := range cls {
		x := ranks[r]
		sq += 2*uint64(counts[x]) + 1 // (k+1)^2 - k^2
		counts[x]++
		best = max(best, counts[x])
	}
	for _, r := range cls {
		counts[ranks[r]] = 0
	}
	return sq, best
}

// ocStrength is the strength of an OC with the given removals, expected
// being the removals when B is shuffled within each class. When chance
// expects no removal (every class constant in A or in B) the OC says
// nothing beyond the context, and gets 0.
func ocStrength(n, removals int, expected float64) float64 {
	if n == 0 {
		return NoStrength
	}
	return chanceCorrected(float64(removals), expected)
}

// OCStrength returns the strength of X: A ~ B (pol) with the given exact
// removals, p being X's partition: chanceCorrected(removals, expected),
// where expected is OCShuffledRemovals.
func (v *Validator) OCStrength(p *StrippedPartition, a, b *table.Column, pol Polarity, removals int) float64 {
	if p.N == 0 {
		return NoStrength
	}
	return ocStrength(p.N, removals, float64(v.OCShuffledRemovals(p, a, b, pol)))
}

// shuffleRand is the generator of the shuffle: splitmix64, whose state
// starts at the class's first row number, so that the estimate is
// deterministic.
type shuffleRand uint64

func (r *shuffleRand) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// OCShuffledRemovals estimates the removals of X: A ~ B (pol) expected when
// B is shuffled within each class of X: within every class, the B values
// of its rows in row order are shuffled by Fisher-Yates (for i from the
// last place down to 1, swap place i with place next() mod (i+1), next
// being shuffleRand seeded with the class's first row), the i-th row takes
// the i-th shuffled B, and the removals of the shuffled table are counted
// as docs/DESIGN.md counts them (class by class, sort by (A, B), n minus
// the longest non-decreasing run of B; B reversed for desc). One
// deterministic shuffle is an unbiased estimate of the expectation; summed
// over the classes, its relative spread is small wherever the expectation
// is large enough to matter. Cost: that of OCMeasureCounts without the
// exact count.
func (v *Validator) OCShuffledRemovals(p *StrippedPartition, a, b *table.Column, pol Polarity) int {
	_, shuffled := v.OCMeasureCounts(p, a, b, pol, false)
	return shuffled
}

// OCMeasureCounts returns what the strength of X: A ~ B (pol) reads, p
// being X's partition: its exact removals (OCRemovals with no budget;
// 0 unless exact) and OCShuffledRemovals, both counted in one pass over
// the classes. A class constant in A or in B loses nothing in either (and
// is not shuffled: each class seeds its own generator, so the others'
// shuffles stay as they were); a class of two rows is decided by one draw
// of the generator; a class of at most smallClass rows is shuffled and
// counted in place, one polarity only; larger ones take OCRemovals' paths
// with the shuffled B written to a row-indexed column. Cost: O(|c|) for
// the shuffle and the exact count's per class, twice when exact.
func (v *Validator) OCMeasureCounts(p *StrippedPartition, a, b *table.Column, pol Polarity, exact bool) (removals, shuffled int) {
	if len(v.shuffled) < len(b.Ranks) {
		v.shuffled = make([]uint32, len(b.Ranks))
	}
	orig := newOCColumns(a, b)
	shuf := newOCColumns(a, &table.Column{Ranks: v.shuffled, Cardinality: b.Cardinality})
	desc := pol == Desc
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		v.tick(len(cls))
		if constantIn(cls, a.Ranks) || constantIn(cls, b.Ranks) {
			continue
		}
		switch {
		case len(cls) == 2:
			r, s := pairRemovals(cls, a.Ranks, b.Ranks, desc)
			shuffled += s
			if exact {
				removals += r
			}
		case len(cls) <= smallClass:
			r, s := smallShuffleRemovals(cls, a.Ranks, b.Ranks, rankBits(b), uint32(max(b.Cardinality-1, 0)), desc, exact)
			removals += r
			shuffled += s
		default:
			// One polarity is wanted, and the other counts 0.
			v.shuffleClass(cls, b.Ranks)
			sa, sd := v.classRemovals(cls, &shuf, !desc, desc, -1, -1, false)
			shuffled += sa + sd
			if exact {
				ra, rd := v.classRemovals(cls, &orig, !desc, desc, -1, -1, false)
				removals += ra + rd
			}
		}
	}
	return removals, shuffled
}

// pairRemovals is OCMeasureCounts of a class of two rows with two values
// of A and two of B: one polarity loses one row and the other none,
// and the shuffle swaps the two B values when its one draw is even.
func pairRemovals(cls, ar, br []uint32, desc bool) (removals, shuffled int) {
	concordant := (ar[cls[0]] < ar[cls[1]]) == (br[cls[0]] < br[cls[1]])
	rng := shuffleRand(cls[0])
	swapped := rng.next()%2 == 0
	lost := func(concordant bool) int {
		if concordant == desc {
			return 1
		}
		return 0
	}
	return lost(concordant), lost(concordant != swapped)
}

// smallShuffleRemovals is OCMeasureCounts of a class of at most
// smallClass rows: the B values shuffled on the stack, and the removals
// of one polarity (smallRemovals) with the shuffled B and, when exact,
// with B itself (0 otherwise).
func smallShuffleRemovals(cls, ar, br []uint32, bitsB uint, maxB uint32, desc, exact bool) (removals, shuffled int) {
	var ab, bb [smallClass]uint32
	av, bs := ab[:len(cls)], bb[:len(cls)]
	for k, r := range cls {
		av[k], bs[k] = ar[r], br[r]
	}
	if exact {
		removals = smallRemovals(av, bs, bitsB, maxB, desc)
	}
	rng := shuffleRand(cls[0])
	for k := len(bs) - 1; k > 0; k-- {
		j := rng.next() % uint64(k+1)
		bs[k], bs[j] = bs[j], bs[k]
	}
	return removals, smallRemovals(av, bs, bitsB, maxB, desc)
}

// smallRemovals is smallClassRemovals of one polarity for a class given
// as its A and B ranks, row by row (at most smallClass of them).
func smallRemovals(av, bv []uint32, bitsB uint, maxB uint32, desc bool) int {
	var kb [smallClass]uint64
	keys := kb[:len(av)]
	for j := range av {
		insertKey(keys, j, uint64(av[j])<<bitsB|uint64(bv[j]))
	}
	mask := uint64(1)<<bitsB - 1
	var tb [smallClass]uint32
	tails := tb[:0]
	if !desc {
		for _, k := range keys {
			tails = pushSmall(tails, uint32(k&mask))
		}
		return len(keys) - len(tails)
	}
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
	return len(keys) - len(tails)
}

// shuffleClass writes the class's B values, shuffled (see
// OCShuffledRemovals), to v.shuffled at the class's rows.
func (v *Validator) shuffleClass(cls, br []uint32) {
	bs := v.shuffleTails[:0]
	for _, r := range cls {
		bs = append(bs, br[r])
	}
	rng := shuffleRand(cls[0])
	for k := len(bs) - 1; k > 0; k-- {
		j := rng.next() % uint64(k+1)
		bs[k], bs[j] = bs[j], bs[k]
	}
	for k, r := range cls {
		v.shuffled[r] = bs[k]
	}
	v.shuffleTails = bs[:0]
}

// OCShuffleBound is an upper bound of OCShuffledRemovals(p, a, b, pol)
// in either polarity: whatever the shuffle, within a class the rows of
// one A value (sorted by B) and the rows of one B value each keep a
// non-decreasing run, so the class loses at most its size less the larger
// of its largest A group and its largest B group. Strength grows with the
// expected removals (OCStrengthOf), so OCStrengthOf(n, removals, bound)
// bounds the OC's strength from above. Cost: O(|c|) per class, no sort.
func (v *Validator) OCShuffleBound(p *StrippedPartition, a, b *table.Column) int {
	ca := v.zeroedCounts(&v.counts, a.Cardinality)
	cb := v.zeroedCounts(&v.boundCounts, b.Cardinality)
	bound := 0
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		var top uint32
		for _, r := range cls {
			x, y := a.Ranks[r], b.Ranks[r]
			ca[x]++
			cb[y]++
			top = max(top, ca[x], cb[y])
		}
		for _, r := range cls {
			ca[a.Ranks[r]], cb[b.Ranks[r]] = 0, 0
		}
		bound += len(cls) - int(top)
		v.tick(len(cls))
	}
	return bound
}

// ClassGroupMax returns, for each class of p, the size of its largest
// group of rows with one value of c (out reused when large enough): what
// OCShuffleBoundOf reads of a column, so that a context computes it once
// per column for all of its pairs. Cost: O(|c|) per class.
func (v *Validator) ClassGroupMax(p *StrippedPartition, c *table.Column, out []uint32) []uint32 {
	counts := v.zeroedCounts(&v.counts, c.Cardinality)
	out = slices.Grow(out[:0], p.NumClasses())
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		var top uint32
		for _, r := range cls {
			x := c.Ranks[r]
			counts[x]++
			top = max(top, counts[x])
		}
		for _, r := range cls {
			counts[c.Ranks[r]] = 0
		}
		out = append(out, top)
		v.tick(len(cls))
	}
	return out
}

// OCShuffleBoundOf is OCShuffleBound(p, a, b) from the ClassGroupMax of
// A and of B in p, in O(classes).
func OCShuffleBoundOf(p *StrippedPartition, groupsA, groupsB []uint32) int {
	bound := 0
	for i := 0; i < p.NumClasses(); i++ {
		bound += int(p.Starts[i+1]-p.Starts[i]) - int(max(groupsA[i], groupsB[i]))
	}
	return bound
}

// OCStrengthOf is the strength of an OC over n rows with the given
// removals when chance expects expected (OCStrength's formula); it does
// not fall as expected grows.
func OCStrengthOf(n, removals int, expected float64) float64 {
	return ocStrength(n, removals, expected)
}

// zeroedCounts returns *buf grown to n zeroed counters; its callers leave
// every counter at zero when done.
func (v *Validator) zeroedCounts(buf *[]uint32, n int) []uint32 {
	if len(*buf) < n {
		*buf = make([]uint32, n)
	}
	return *buf
}

// KeyStrength is the strength of a key (docs/DESIGN.md, "Keys, equivalences
// and implied rules"), evp being its partition over the distinct records
// and expected KeyExpected's: the records the key fails to tell apart
// against those chance would leave together.
func KeyStrength(evp *StrippedPartition, expected float64) float64 {
	if evp.N == 0 {
		return NoStrength
	}
	return chanceCorrected(float64(evp.Covered()-evp.NumClasses()), expected)
}

// KeyExpected is the number of distinct records chance would leave
// together under a key: for each of its columns C, rests holding the
// partition of the rest of the key over the distinct records and pdeps C's
// pdep there, C's values drawn at random from the column's distribution
// within each class of the rest of the key; the column that earns the
// least decides.
func KeyExpected(rests []*StrippedPartition, pdeps []float64) float64 {
	expected := math.Inf(1)
	for i, rest := range rests {
		expected = min(expected, chanceCollisions(rest, pdeps[i]))
	}
	return expected
}

// chanceCollisions is the number of records expected to share their class
// of p with an earlier one when a column of the given pdep is drawn at
// random within each class: per class of m records, about the pairs that
// agree, m(m-1)/2 pdep, and never more than m-1.
func chanceCollisions(p *StrippedPartition, pdep float64) float64 {
	var sum float64
	for i := 0; i < p.NumClasses(); i++ {
		m := float64(len(p.Class(i)))
		sum += min(m-1, m*(m-1)/2*pdep)
	}
	return sum
}
