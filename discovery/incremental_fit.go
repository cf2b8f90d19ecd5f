package discovery

import "math/bits"

// The fit bound: a tighter upper bound on an OC's removals between
// recounts than one per row that entered.
//
// Per class, asc polarity, a set T of the class's rows is consistent iff
// no x, y in T have x.la < y.la and x.lb > y.lb (desc: x.lb < y.lb; desc
// is asc on (la, ^lb)). lnds computes L, the size of a largest consistent
// subset, and r = n - L. Let S be one largest consistent subset at the
// class's last recount, and let rows D leave and rows I enter after it.
// For any A ⊆ I with S ∪ A consistent, T = (S ∪ A) \ D is consistent (a
// subset of a consistent set is), and it has at least L - |S ∩ D| + |A \
// D| rows, so the new count is
//
//	r' ≤ n' - |T| ≤ (n - |D ∩ old rows| + |I \ D|) - (L - |S ∩ D| + |A \ D|)
//	   ≤ r + |I \ D| - |A \ D| ≤ r + |I| - |A|,
//
// as S ∩ D ⊆ D ∩ old rows. So the upper bound grows by the rows that
// entered and were not accepted into A (the misfits), not by every row
// that entered; the lower bound stays r - |D|. Summed over the classes,
// an OC's count lies in [tot - del, tot + ins - acc], acc the rows
// accepted into the classes' A since the OC's last recount.
//
// A sorted class records S at its recount (lnds, backtrack) as a bitset
// over its sorted pairs, which do not change until its next recount; A
// keeps the accepted rows' pairs (sorted), and a row is accepted when it
// is consistent with S, A and the rows accepted before it (fitClass).
// Pairs of rows that left stay in S and A: that only constrains more.

// backtrack returns, in set (reused), the bitset over the rows 0..n-1 of a
// class sorted by (la, lb) of one largest consistent subset, of l rows:
// pos[i] is row i's place among the tails when lnds pushed it (desc: its
// complement, each run of equal la read backwards). The rows are taken in
// exactly the reverse of the order lnds pushed them: the first row met
// with place need is the tail that was at need when the row taken last
// (at need+1) was pushed, so its value is at most that row's, and the rows
// taken form a non-decreasing sequence in push order, one per place.
func backtrack(set []uint64, la, lb []uint64, pos []uint32, l int, desc bool) []uint64 {
	n := len(la)
	set = resizeBits(set, n, l == n)
	if l == n {
		return set // every row: nothing to remove
	}
	need, cur := l-1, ^uint64(0)
	take := func(i int, v uint64) {
		if int(pos[i]) == need && v <= cur {
			set[i>>6] |= 1 << (i & 63)
			cur = v
			need--
		}
	}
	if !desc {
		for i := n - 1; i >= 0 && need >= 0; i-- {
			take(i, lb[i])
		}
		return set
	}
	for j := n; j > 0 && need >= 0; {
		i := j - 1
		for i > 0 && la[i-1] == la[j-1] {
			i--
		}
		for k := i; k < j; k++ {
			take(k, ^lb[k])
		}
		j = i
	}
	return set
}

// resizeBits returns a bitset of n bits in buf's memory, all set or all
// clear.
func resizeBits(buf []uint64, n int, all bool) []uint64 {
	words := (n + 63) >> 6
	if cap(buf) < words {
		buf = make([]uint64, words)
	}
	buf = buf[:words]
	if !all {
		clear(buf)
		return buf
	}
	for i := range buf {
		buf[i] = ^uint64(0)
	}
	if r := n & 63; r != 0 {
		buf[words-1] = 1<<r - 1
	}
	return buf
}

// nextSet returns the first position from i on whose bit is set in set
// (n bits), or n.
func nextSet(set []uint64, i, n int) int {
	if i >= n {
		return n
	}
	w := i >> 6
	word := set[w] >> (i & 63)
	if word != 0 {
		return i + bits.TrailingZeros64(word)
	}
	for w++; w < len(set); w++ {
		if set[w] != 0 {
			return w<<6 + bits.TrailingZeros64(set[w])
		}
	}
	return n
}

// prevSet returns the last position before i whose bit is set in set, or
// -1.
func prevSet(set []uint64, i int) int {
	if i <= 0 {
		return -1
	}
	i--
	w := i >> 6
	word := set[w] << (63 - i&63)
	if word != 0 {
		return i - bits.LeadingZeros64(word)
	}
	for w--; w >= 0; w-- {
		if set[w] != 0 {
			return w<<6 + 63 - bits.LeadingZeros64(set[w])
		}
	}
	return -1
}
