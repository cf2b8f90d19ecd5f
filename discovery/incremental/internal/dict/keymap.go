package dict

// KeyMap maps uint64 keys to uint32 values: open addressing with linear
// probing and backward-shift deletion, so that a table whose keys keep
// changing (classes of a sliding window) leaves no tombstones behind and
// holds no pointers. A slot holds its key and value together, so a probe
// reads one cache line.
type KeyMap struct {
	slots []keySlot
	n     int
	shift uint
}

type keySlot struct {
	key uint64
	val uint32 // value+1; 0 = empty slot
}

func (m *KeyMap) home(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> m.shift) }

// PeekAll reads the slot where a lookup or a removal of each key in keys
// starts, in a loop of its own (a few instructions a key, so that many of
// the loads are under way at once: their cache misses overlap instead of
// coming one after another), and returns the words read, or-ed, which the
// caller must keep.
func (m *KeyMap) PeekAll(keys []uint64) uint32 {
	if len(m.slots) == 0 {
		return 0
	}
	var sink uint32
	for _, k := range keys {
		sink |= m.slots[m.home(k)].val
	}
	return sink
}

// Get returns k's value and whether k is present.
func (m *KeyMap) Get(k uint64) (uint32, bool) {
	if m.n == 0 {
		return 0, false
	}
	mask := len(m.slots) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.val == 0 {
			return 0, false
		}
		if s.key == k {
			return s.val - 1, true
		}
	}
}

// Put adds k (not present) with value v.
func (m *KeyMap) Put(k uint64, v uint32) {
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	i := m.home(k)
	for m.slots[i].val != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = keySlot{k, v + 1}
	m.n++
}

func (m *KeyMap) grow() {
	old := m.slots
	size := max(2*len(old), 16)
	m.slots = make([]keySlot, size)
	m.shift = 64
	for s := size; s > 1; s >>= 1 {
		m.shift--
	}
	mask := size - 1
	for _, s := range old {
		if s.val == 0 {
			continue
		}
		i := m.home(s.key)
		for m.slots[i].val != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}

// Del removes k, which must be present.
func (m *KeyMap) Del(k uint64) {
	mask := len(m.slots) - 1
	i := m.home(k)
	for m.slots[i].key != k || m.slots[i].val == 0 {
		i = (i + 1) & mask
	}
	m.n--
	for j := i; ; {
		j = (j + 1) & mask
		if m.slots[j].val == 0 {
			break
		}
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		h := m.home(m.slots[j].key)
		if i <= j {
			if i < h && h <= j {
				continue
			}
		} else if i < h || h <= j {
			continue
		}
		m.slots[i] = m.slots[j]
		i = j
	}
	m.slots[i].val = 0
}

// Reset empties the map and lets its slots go.
func (m *KeyMap) Reset() { *m = KeyMap{} }
