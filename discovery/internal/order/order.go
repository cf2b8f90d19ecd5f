// Package order sorts a discovery's results, hundreds of thousands on a
// wide table, by index and then moves them once. The obvious sort, a
// stable sort of the results themselves with each one's text rendered for
// the comparison, costs a tenth of hepatitis' discovery, serially at its
// end: a stable sort of structs that large merges in O(n log² n) moves
// with write barriers, and rendering every text allocates a string per
// result where only the results whose keys tie are told apart by it.
package order

import (
	"cmp"
	"slices"
	"strings"
)

// Stable returns the permutation that sorts the elements whose keys are
// keys stably by compare (a strict weak order) and, where their keys
// tie, by text: element idx[i] goes to place i. The keys are sorted where
// they lie, not through the elements, and text is called only for the
// elements whose keys tie with another's, once each.
func Stable[K any](keys []K, compare func(a, b K) int, text func(i int) string) []int {
	type entry struct {
		key K
		i   int
	}
	es := make([]entry, len(keys))
	for i := range keys {
		es[i] = entry{keys[i], i}
	}
	// The index breaks every tie: an unstable sort then sorts stably.
	slices.SortFunc(es, func(x, y entry) int { return cmp.Or(compare(x.key, y.key), cmp.Compare(x.i, y.i)) })
	idx := make([]int, len(es))
	for i, e := range es {
		idx[i] = e.i
	}
	var texts []string // by element, rendered for the ties only
	for lo := 0; lo < len(es); {
		hi := lo + 1
		for hi < len(es) && compare(es[lo].key, es[hi].key) == 0 {
			hi++
		}
		if run := idx[lo:hi]; len(run) > 1 {
			if texts == nil {
				texts = make([]string, len(es))
			}
			for _, i := range run {
				texts[i] = text(i)
			}
			slices.SortFunc(run, func(x, y int) int { return cmp.Or(strings.Compare(texts[x], texts[y]), cmp.Compare(x, y)) })
		}
		lo = hi
	}
	return idx
}

// Apply moves the elements of s in place so that s[i] becomes the old
// s[idx[i]], following the permutation's cycles: each element moves once,
// and nothing of s's size is allocated. It overwrites idx.
func Apply[T any](s []T, idx []int) {
	for i := range s {
		if idx[i] == i {
			continue
		}
		held, j := s[i], i
		for {
			k := idx[j]
			idx[j] = j
			if k == i {
				s[j] = held
				break
			}
			s[j] = s[k]
			j = k
		}
	}
}
