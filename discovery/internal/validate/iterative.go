package validate

import (
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// The iterative baseline of Karegar et al. (Algorithm 1): while swaps remain,
// remove the tuple involved in the most swaps. It over-estimates the minimal
// removal set that LNDS finds exactly and is kept for comparison only.
//
// Per round, the swaps of every tuple are counted with a merge sort over
// the B values in (A, B) order (an inversion is a swap), O(c log c). A tuple
// with no swap can never gain one by removing others, so after each round
// only tuples with swaps stay in play: the removals are identical to
// running the rounds on the whole class, only cheaper.

// iterScratch holds the reusable buffers of the iterative validator.
type iterScratch struct {
	val   []uint32 // B (or maxB-B) of the tuples still in play, (A,B) order
	row   []uint32 // their rows
	cnt   []int64  // swaps per tuple
	perm  []int32
	perm2 []int32
	items []chainItem
}

// countSwaps fills s.cnt[i] with the number of j such that (j < i and
// val[j] > val[i]) or (j > i and val[j] < val[i]) by a bottom-up merge sort.
func (s *iterScratch) countSwaps() {
	n := len(s.val)
	if cap(s.cnt) < n {
		s.cnt = make([]int64, n)
		s.perm = make([]int32, n)
		s.perm2 = make([]int32, n)
	}
	cnt := s.cnt[:n]
	src, dst := s.perm[:n], s.perm2[:n]
	for i := range src {
		src[i] = int32(i)
		cnt[i] = 0
	}
	val := s.val
	for width := 1; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid := min(lo+width, n)
			hi := min(lo+2*width, n)
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if val[src[i]] <= val[src[j]] {
					// every right element taken so far is strictly smaller
					cnt[src[i]] += int64(j - mid)
					dst[k] = src[i]
					i++
				} else {
					// every left element not yet taken is strictly larger
					cnt[src[j]] += int64(mid - i)
					dst[k] = src[j]
					j++
				}
				k++
			}
			for ; i < mid; i++ {
				cnt[src[i]] += int64(j - mid)
				dst[k] = src[i]
				k++
			}
			for ; j < hi; j++ {
				dst[k] = src[j]
				k++
			}
		}
		src, dst = dst, src
	}
	s.cnt = cnt
}

// iterativeClass runs Algorithm 1 on the tuples loaded in s.val/s.row and
// returns how many were removed, appending their rows to removed when it is
// non-nil. With rem >= 0 it stops once more than rem were removed.
func (s *iterScratch) iterativeClass(rem int, removed *[]int) int {
	count := 0
	for len(s.val) > 1 {
		s.countSwaps()
		best, bestAt := int64(0), -1
		for i, c := range s.cnt[:len(s.val)] {
			if c > best {
				best, bestAt = c, i
			}
		}
		if bestAt < 0 {
			break
		}
		count++
		if removed != nil {
			*removed = append(*removed, int(s.row[bestAt]))
		}
		if rem >= 0 && count > rem {
			break
		}
		k := 0
		for i := range s.val {
			if i != bestAt && s.cnt[i] > 0 {
				s.val[k], s.row[k] = s.val[i], s.row[i]
				k++
			}
		}
		s.val, s.row = s.val[:k], s.row[:k]
	}
	return count
}

// load fills s.val/s.row with the class's tuples in (A, B') order, where B'
// is B for asc and maxB-B for desc, ties by row. It runs once per class, so
// its comparison sort does not matter next to the rounds.
func (s *iterScratch) load(cls []uint32, a, b *table.Column, pol Polarity) {
	maxB := uint32(max(b.Cardinality-1, 0))
	s.items = s.items[:0]
	for _, r := range cls {
		x := b.Ranks[r]
		if pol == Desc {
			x = maxB - x
		}
		s.items = append(s.items, chainItem{key: uint64(a.Ranks[r])<<32 | uint64(x), row: r, val: x})
	}
	slices.SortFunc(s.items, compareChainItems)
	s.val = s.val[:0]
	s.row = s.row[:0]
	for _, it := range s.items {
		s.val = append(s.val, it.val)
		s.row = append(s.row, it.row)
	}
}

// OCRemovalsIterative returns the removals the iterative baseline makes for
// X: A ~ B (p is X's partition); with budget >= 0 it stops once they exceed
// it. It never reports fewer removals than OCRemovals.
func (v *Validator) OCRemovalsIterative(p *StrippedPartition, a, b *table.Column, pol Polarity, budget int) int {
	total := 0
	for i := 0; i < p.NumClasses(); i++ {
		v.it.load(p.Class(i), a, b, pol)
		rem := -1
		if budget >= 0 {
			rem = budget - total
		}
		total += v.it.iterativeClass(rem, nil)
		if budget >= 0 && total > budget {
			return total
		}
	}
	return total
}

// OCIterativeRemovalRows returns the rows (ascending) the iterative
// baseline removes for X: A ~ B.
func OCIterativeRemovalRows(p *StrippedPartition, a, b *table.Column, pol Polarity) []int {
	var s iterScratch
	var out []int
	for i := 0; i < p.NumClasses(); i++ {
		s.load(p.Class(i), a, b, pol)
		s.iterativeClass(-1, &out)
	}
	slices.Sort(out)
	return out
}
