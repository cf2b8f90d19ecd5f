// Package bitset is the incremental engine's bit sets over positions
// 0..n-1, one bit per position in uint64 words: the fit bound's sets of a
// class's rows in one largest consistent subset, scanned forwards and
// backwards from a position.
package bitset

import "math/bits"

// Resize returns a bitset of n bits in buf's memory, all set or all
// clear.
func Resize(buf []uint64, n int, all bool) []uint64 {
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

// Next returns the first position from i on whose bit is set in set
// (n bits), or n.
func Next(set []uint64, i, n int) int {
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

// Prev returns the last position before i whose bit is set in set, or
// -1.
func Prev(set []uint64, i int) int {
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
