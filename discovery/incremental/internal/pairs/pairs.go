// Package pairs holds the (A, B) pairs of the incremental engine's OC
// classes and the index from a counted class's pairs to their ids.
package pairs

import (
	"math/bits"

	"github.com/odwatch/odwatch/internal/codeindex"
)

// Pair is one row's pair of order positions: of A (LA) and of B (LB).
type Pair struct{ LA, LB uint64 }

// Map is a counted class's index from its pairs to their ids
// (incremental's pairCounts): open addressing with linear probing and backward-shift
// deletion, each slot holding an id+1 (0 = empty) whose pair is read from
// pairs. A row that leaves or enters a counted class looks its pair up
// once; Go's map hashed and compared the 16-byte keys out of line, and
// took most of the time of the rows that left the benchmarks' counted
// classes. The slots are 4 bytes each, so a class of a few thousand pairs
// keeps its table in the cache.
type Map struct {
	slots []uint32
	n     int
	shift uint
}

func (m *Map) home(p Pair) int {
	return int(((p.LA ^ bits.RotateLeft64(p.LB, 32)) * 0x9E3779B97F4A7C15) >> m.shift)
}

// Len is the number of pairs in the map.
func (m *Map) Len() int { return m.n }

// Get returns p's id (pairs holds the pairs by id) and whether p is present.
func (m *Map) Get(p Pair, pairs []Pair) (uint32, bool) {
	if m.n == 0 {
		return 0, false
	}
	mask := len(m.slots) - 1
	for i := m.home(p); ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return 0, false
		}
		if pairs[s-1] == p {
			return s - 1, true
		}
	}
}

// Put adds id, whose pair pairs[id] is not present.
func (m *Map) Put(id uint32, pairs []Pair) {
	if 2*(m.n+1) > len(m.slots) {
		m.grow(pairs)
	}
	mask := len(m.slots) - 1
	i := m.home(pairs[id])
	for m.slots[i] != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = id + 1
	m.n++
}

func (m *Map) grow(pairs []Pair) {
	old := m.slots
	size := max(2*len(old), 16)
	m.slots = make([]uint32, size)
	m.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := m.home(pairs[s-1])
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}

// Del removes id, which must be present with its pair pairs[id].
func (m *Map) Del(id uint32, pairs []Pair) {
	mask := len(m.slots) - 1
	i := m.home(pairs[id])
	for m.slots[i] != id+1 {
		i = (i + 1) & mask
	}
	m.n--
	for j := i; ; {
		j = (j + 1) & mask
		s := m.slots[j]
		if s == 0 {
			break
		}
		if codeindex.Stays(i, m.home(pairs[s-1]), j) {
			continue
		}
		m.slots[i] = s
		i = j
	}
	m.slots[i] = 0
}

// MergeIDs returns the ids of order (sorted by cmp) that are live, merged
// with added (sorted by cmp, all live), in order's memory (merged in buf):
// a counted class's orders of its pair ids after a settle.
func MergeIDs(order, added []uint32, cmp func(x, y uint32) int, live func(uint32) bool, buf *[]uint32) []uint32 {
	out := (*buf)[:0]
	i := 0
	for _, id := range order {
		if !live(id) {
			continue
		}
		for i < len(added) && cmp(added[i], id) < 0 {
			out = append(out, added[i])
			i++
		}
		out = append(out, id)
	}
	out = append(out, added[i:]...)
	order = append(order[:0], out...)
	*buf = out[:0]
	return order
}
