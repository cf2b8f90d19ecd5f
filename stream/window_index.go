package stream

import "hash/maphash"

// valueIndex maps a column's values to their dictionary codes: an
// open-addressing hash table with linear probing whose slots hold only the
// code and 32 hash bits; the value itself is read from the dictionary.
//
// Why not a Go map: over a sliding window every value is eventually deleted,
// and Go's maps keep deleted slots as tombstones that lengthen probes and
// trigger growth, so a stream of unique values made a map ever larger and
// slower. Linear probing with backward-shift deletion leaves no tombstones;
// the slots hold no pointers, so the GC does not scan them; and a slot costs
// 8 bytes instead of a map entry's ~24 plus overhead.
type valueIndex struct {
	seed  maphash.Seed
	slots []idxSlot // power-of-two length, or nil
	n     int
}

type idxSlot struct {
	code uint32 // 0 = empty
	hash uint32
}

func newValueIndex() valueIndex { return valueIndex{seed: maphash.MakeSeed()} }

func (x *valueIndex) hashOf(v []byte) uint32 { return uint32(maphash.Bytes(x.seed, v)) }

// lookup returns the code of v (0 if absent) and its hash.
func (x *valueIndex) lookup(dict []string, v []byte) (code, h uint32) {
	h = x.hashOf(v)
	if x.n == 0 {
		return 0, h
	}
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.code == 0 {
			return 0, h
		}
		if s.hash == h && dict[s.code-1] == string(v) {
			return s.code, h
		}
	}
}

// insert adds code (of a value not in the index) with hash h.
func (x *valueIndex) insert(code, h uint32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	mask := uint32(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].code != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = idxSlot{code: code, hash: h}
	x.n++
}

func (x *valueIndex) grow() {
	old := x.slots
	x.slots = make([]idxSlot, max(2*len(old), 16))
	mask := uint32(len(x.slots) - 1)
	for _, s := range old {
		if s.code == 0 {
			continue
		}
		i := s.hash & mask
		for x.slots[i].code != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// remove deletes code, whose value is v, shifting later entries of its
// probe run back so that no tombstone is left.
func (x *valueIndex) remove(code uint32, v string) {
	h := uint32(maphash.String(x.seed, v))
	mask := uint32(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].code != code {
		if x.slots[i].code == 0 {
			return // not present: nothing to do
		}
		i = (i + 1) & mask
	}
	x.n--
	for j := i; ; {
		j = (j + 1) & mask
		s := x.slots[j]
		if s.code == 0 {
			break
		}
		// s may move to the hole at i unless its home slot lies
		// cyclically in (i, j].
		k := s.hash & mask
		if i <= j {
			if i < k && k <= j {
				continue
			}
		} else if i < k || k <= j {
			continue
		}
		x.slots[i] = s
		i = j
	}
	x.slots[i] = idxSlot{}
}

func (x *valueIndex) len() int { return x.n }
