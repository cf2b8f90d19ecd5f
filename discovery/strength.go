package discovery

import "slices"

// Strength: how much better than chance a dependency holds, in [0,1]
// (docs/DESIGN.md, "Strength", derives both measures). Both have the form
//
//	strength = 1 - observed error / error expected by chance
//
// clamped at 0, and both take their chance model from the context's
// partition, so that a context with tiny classes (a near key) expects almost
// no error and earns no strength for having little, and a column that is
// almost constant expects little error and earns little for it.

// columnPdep returns pdep(A) = sum over the values v of A of (|A=v| / n)^2,
// NULL counting as a value (1 for an empty column).
func columnPdep(c *Column) float64 {
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

// muPlus is mu+ of Piatetsky-Shapiro and Matheus from its parts: pdepXY =
// pdep(X -> A), pdepA = pdep(A), n rows and domX classes of X (singletons
// included):
//
//	mu = 1 - (1 - pdepXY) / (1 - pdepA) * (n - 1) / (n - domX),  mu+ = max(mu, 0)
//
// A constant A (pdepA = 1) or a key X (domX = n) leaves nothing for chance to
// explain and gets 0; no rows gets NoStrength.
func muPlus(pdepXY, pdepA float64, n, domX int) float64 {
	if n == 0 {
		return NoStrength
	}
	if pdepA >= 1 || domX >= n {
		return 0
	}
	mu := 1 - (1-pdepXY)/(1-pdepA)*float64(n-1)/float64(n-domX)
	return min(max(mu, 0), 1)
}

// OFDStrength returns mu+ of X: [] -> A, p being X's partition and pdepA
// A's columnPdep. pdep(X -> A) = sum over classes x of X of
// sum_a |x, A=a|^2 / |x| / n; a singleton class adds 1/n.
func (v *Validator) OFDStrength(p *StrippedPartition, a *Column, pdepA float64) float64 {
	n := p.N
	if n == 0 {
		return NoStrength
	}
	if len(v.counts) < a.Cardinality {
		v.counts = make([]uint32, a.Cardinality)
	}
	counts := v.counts
	ranks := a.Ranks
	sum := float64(n - p.Covered()) // singletons
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		var sq uint64
		for _, r := range cls {
			x := ranks[r]
			sq += 2*uint64(counts[x]) + 1 // (k+1)^2 - k^2
			counts[x]++
		}
		for _, r := range cls {
			counts[ranks[r]] = 0
		}
		sum += float64(sq) / float64(len(cls))
	}
	domX := p.NumClasses() + n - p.Covered()
	return muPlus(sum/float64(n), pdepA, n, domX)
}

// ocStrength turns observed and expected OC removals into a strength.
// When chance expects no removal (every class constant in A or in B after
// any shuffle) the OC says nothing beyond the context, and gets 0.
func ocStrength(n, removals int, expected float64) float64 {
	if n == 0 {
		return NoStrength
	}
	if !(expected > 0) {
		return 0
	}
	return min(max(1-float64(removals)/expected, 0), 1)
}

// OCStrength returns the strength of X: A ~ B (pol) with the given exact
// removals, p being X's partition: 1 - removals / expected, where expected
// is OCShuffledRemovals.
func (v *Validator) OCStrength(p *StrippedPartition, a, b *Column, pol Polarity, removals int) float64 {
	if p.N == 0 {
		return NoStrength
	}
	return ocStrength(p.N, removals, float64(v.OCShuffledRemovals(p, a, b, pol)))
}

// shuffleKey is the key by which a class's rows are shuffled: splitmix64 of
// the row number, a fixed bijection that looks random, so that the
// estimate is deterministic.
func shuffleKey(row uint32) uint64 {
	z := uint64(row) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// OCShuffledRemovals estimates the removals of X: A ~ B (pol) expected when
// B is shuffled within each class of X: within every class, the row at the
// i-th place in row order takes the B of the row at the i-th place in
// shuffleKey order, and the removals of the shuffled table are counted as
// docs/DESIGN.md counts them (class by class, sort by (A, B), n minus the
// longest non-decreasing run of B; B reversed for desc). One deterministic
// shuffle is an unbiased estimate of the expectation; summed over the
// classes, its relative spread is small wherever the expectation is large
// enough to matter. Cost: O(|c| log |c|) per class.
func (v *Validator) OCShuffledRemovals(p *StrippedPartition, a, b *Column, pol Polarity) int {
	maxB := uint32(max(b.Cardinality-1, 0))
	removals := 0
	for i := 0; i < p.NumClasses(); i++ {
		cls := p.Class(i)
		perm := v.shufflePerm[:0]
		for _, r := range cls {
			perm = append(perm, shuffleKey(r)<<32|uint64(r))
		}
		slices.Sort(perm)
		keys := v.shuffleKeys[:0]
		for k, r := range cls {
			bRank := b.Ranks[uint32(perm[k])]
			if pol == Desc {
				bRank = maxB - bRank
			}
			keys = append(keys, uint64(a.Ranks[r])<<32|uint64(bRank))
		}
		slices.Sort(keys)
		tails := v.shuffleTails[:0]
		for _, k := range keys {
			x := uint32(k)
			if j := upperBound(tails, x); j == len(tails) {
				tails = append(tails, x)
			} else {
				tails[j] = x
			}
		}
		removals += len(cls) - len(tails)
		v.shufflePerm, v.shuffleKeys, v.shuffleTails = perm, keys, tails
	}
	return removals
}
