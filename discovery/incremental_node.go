package discovery

// u64map maps uint64 keys to uint32 values: open addressing with linear
// probing and backward-shift deletion, so that a table whose keys keep
// changing (classes of a sliding window) leaves no tombstones behind and
// holds no pointers. A slot holds its key and value together, so a probe
// reads one cache line.
type u64map struct {
	slots []u64slot
	n     int
	shift uint
}

type u64slot struct {
	key uint64
	val uint32 // value+1; 0 = empty slot
}

func (m *u64map) home(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> m.shift) }

// peekAll reads the slot where a lookup or a removal of each key in keys
// starts, in a loop of its own (a few instructions a key, so that many of
// the loads are under way at once: their cache misses overlap instead of
// coming one after another), and returns the words read, or-ed, which the
// caller must keep.
func (m *u64map) peekAll(keys []uint64) uint32 {
	if len(m.slots) == 0 {
		return 0
	}
	var sink uint32
	for _, k := range keys {
		sink |= m.slots[m.home(k)].val
	}
	return sink
}

func (m *u64map) get(k uint64) (uint32, bool) {
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

// put adds k (not present) with value v.
func (m *u64map) put(k uint64, v uint32) {
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	i := m.home(k)
	for m.slots[i].val != 0 {
		i = (i + 1) & mask
	}
	m.slots[i] = u64slot{k, v + 1}
	m.n++
}

func (m *u64map) grow() {
	old := m.slots
	size := max(2*len(old), 16)
	m.slots = make([]u64slot, size)
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

// del removes k, which must be present.
func (m *u64map) del(k uint64) {
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

func (m *u64map) reset() { *m = u64map{} }

// classQueue holds the rows (sequence numbers mod 2^32) of one class in
// arrival order. Rows leave a window oldest first, so they leave a class
// from the front too.
type classQueue struct {
	rows []uint32
	head int
}

func (q *classQueue) push(seq uint32) { q.rows = append(q.rows, seq) }

func (q *classQueue) pop() {
	q.head++
	switch {
	case q.head == len(q.rows):
		q.rows, q.head = q.rows[:0], 0
		if cap(q.rows) > 256 {
			q.rows = nil
		}
	case q.head >= 64 && 2*q.head >= len(q.rows):
		k := copy(q.rows, q.rows[q.head:])
		q.rows, q.head = q.rows[:k], 0
	}
}

func (q *classQueue) live() []uint32 { return q.rows[q.head:] }

// incNode is the partition of the window's rows by a list of columns (a
// context, or a context followed by an FD's right-hand side), kept up to
// date as rows come and go. Classes have dense ids, reused once empty:
//
//   - the empty list: one class, 0;
//   - one column: the class is the column's equality id (no lookup);
//   - more: the class of (the class of the list without its last column,
//     the last column's equality id), looked up in index, as TANE's product
//     of the parent partition with the column's.
type incNode struct {
	key     string
	cols    []int
	parent  *incNode
	last    int // cols[len-1], -1 for the empty list
	lastCol *incColumn
	index   u64map
	// classOf is the class of each ring slot's row, for lists of two
	// columns or more; the class of one column's row is its equality id.
	classOf []uint32
	size    []uint32 // by class
	keys    []uint64 // by class, for index
	free    []uint32
	// members lists each class's rows, when an OC sorts them.
	members     []classQueue
	withMembers bool
	fds         []*incFD // the FDs whose refined node (xa) this is
	stale       bool     // rebuilt from the window at the next check
}

func (nd *incNode) reset() {
	nd.index.reset()
	nd.size, nd.keys, nd.free, nd.members = nd.size[:0], nd.keys[:0], nd.free[:0], nil
}

// class is the class of the row in slot (which the node holds).
func (nd *incNode) class(slot uint32) uint32 {
	switch {
	case nd.last < 0:
		return 0
	case nd.parent == nil:
		return nd.lastCol.eq(nd.lastCol.codes[slot])
	}
	return nd.classOf[slot]
}

// classOfKey returns the class of key k (the parent's class, then the last
// column's equality id) of a list of two columns or more, creating it if
// needed.
func (nd *incNode) classOfKey(k uint64) uint32 {
	if got, ok := nd.index.get(k); ok {
		return got
	}
	var c uint32
	if n := len(nd.free); n > 0 {
		c = nd.free[n-1]
		nd.free = nd.free[:n-1]
	} else {
		c = uint32(len(nd.keys))
		nd.keys = append(nd.keys, 0)
	}
	nd.keys[c] = k
	nd.index.put(k, c)
	return c
}

// rowBatch is a tree's scratch for applying a chunk of rows to one node
// and its FDs (enterRows, leaveRows, incFD.enterRows, incFD.leaveRows): per
// row of the chunk, its class and the class's size just after it entered
// or just before it left (cls, ks), its key in the node's index (keys: set
// by enterRows for a list of two columns or more, read by incFD.enterRows;
// scratch of dropRows), and its class of an FD's X (cx). sink keeps what
// the loads that only warm the cache read, so that the compiler keeps
// them.
type rowBatch struct {
	cls, ks, cx []uint32
	keys        []uint64
	sink        uint32
}

// size makes the buffers hold n rows.
func (b *rowBatch) size(n int) {
	if cap(b.cls) < n {
		b.cls, b.ks, b.cx, b.keys = make([]uint32, n), make([]uint32, n), make([]uint32, n), make([]uint64, n)
	}
	b.cls, b.ks, b.cx, b.keys = b.cls[:n], b.ks[:n], b.cx[:n], b.keys[:n]
}

// enterRows adds the rows of rs (at most b's rows; mask maps a sequence
// number to its ring slot) and sets b.cls and b.ks (and b.keys, for a
// list of two columns or more).
func (nd *incNode) enterRows(rs span, mask uint32, b *rowBatch) {
	b.size(int(rs.to - rs.from))
	cls, ks := b.cls, b.ks
	if nd.parent != nil {
		nd.classesFor(rs, mask, b)
	} else {
		nd.classes(rs, mask, cls) // no lookup
	}
	for i, c := range cls {
		for int(c) >= len(nd.size) {
			nd.size = append(nd.size, 0)
		}
		nd.size[c]++
		ks[i] = nd.size[c]
	}
	if nd.withMembers {
		for i, c := range cls {
			for int(c) >= len(nd.members) {
				nd.members = append(nd.members, classQueue{})
			}
			nd.members[c].push(rs.from + uint32(i))
		}
	}
}

// classesFor sets b.cls to the classes of the rows of rs (a list of two
// columns or more), creating them if needed, in two passes: the keys
// first, reading each one's index slot, so that the cache misses of the
// rows overlap; then the lookups, which find their slots in the cache.
func (nd *incNode) classesFor(rs span, mask uint32, b *rowBatch) {
	col, p := nd.lastCol, nd.parent
	keys := b.keys
	for i := range keys {
		slot := (rs.from + uint32(i)) & mask
		keys[i] = uint64(p.class(slot))<<32 | uint64(col.eq(col.codes[slot]))
	}
	b.sink |= nd.index.peekAll(keys)
	for i, k := range keys {
		c := nd.classOfKey(k)
		nd.classOf[(rs.from+uint32(i))&mask] = c
		b.cls[i] = c
	}
}

// classes sets cls to the classes of the rows of rs, which the node
// holds (or, for the empty list or one column, any rows).
func (nd *incNode) classes(rs span, mask uint32, cls []uint32) {
	switch {
	case nd.last < 0:
		clear(cls)
	case nd.parent == nil:
		col := nd.lastCol
		for i := range cls {
			cls[i] = col.eq(col.codes[(rs.from+uint32(i))&mask])
		}
	default:
		for i := range cls {
			cls[i] = nd.classOf[(rs.from+uint32(i))&mask]
		}
	}
}

// leaveRows takes the rows of rs (at most b's rows), which are leaving,
// off the classes' sizes and sets b.cls and b.ks; dropRows then lets them
// go (after the FDs read b).
func (nd *incNode) leaveRows(rs span, mask uint32, b *rowBatch) {
	b.size(int(rs.to - rs.from))
	cls, ks := b.cls, b.ks
	nd.classes(rs, mask, cls)
	size := nd.size
	for i, c := range cls {
		ks[i] = size[c]
		size[c]--
	}
}

// dropRows ends leaveRows: the rows leave the members, and the classes
// they emptied the index, in two passes (the keys, reading each one's
// index slot, then the removals).
func (nd *incNode) dropRows(b *rowBatch) {
	if nd.withMembers {
		for _, c := range b.cls {
			nd.members[c].pop()
		}
	}
	if nd.parent == nil {
		return
	}
	keys := b.keys[:0]
	for i, c := range b.cls {
		if b.ks[i] == 1 {
			keys = append(keys, nd.keys[c])
			nd.free = append(nd.free, c)
		}
	}
	b.sink |= nd.index.peekAll(keys)
	for _, k := range keys {
		nd.index.del(k)
	}
}
