package incremental

import "github.com/odwatch/odwatch/discovery/incremental/internal/dict"

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

// node is the partition of the window's rows by a list of columns (a
// context, or a context followed by an FD's right-hand side), kept up to
// date as rows come and go. Classes have dense ids, reused once empty:
//
//   - the empty list: one class, 0;
//   - one column: the class is the column's equality id (no lookup);
//   - more: the class of (the class of the list without its last column,
//     the last column's equality id), looked up in index, as TANE's product
//     of the parent partition with the column's.
type node struct {
	key     string
	cols    []int
	parent  *node
	last    int // cols[len-1], -1 for the empty list
	lastCol *dict.Column
	index   dict.KeyMap
	// classOf is the class of each ring slot's row, for lists of two
	// columns or more; the class of one column's row is its equality id.
	classOf []uint32
	size    []uint32 // by class
	keys    []uint64 // by class, for index
	free    []uint32
	// members lists each class's rows, when an OC sorts them.
	members     []classQueue
	withMembers bool
	fds         []*fdCheck // the FDs whose refined node (xa) this is
	stale       bool       // rebuilt from the window at the next check
}

func (nd *node) reset() {
	nd.index.Reset()
	nd.size, nd.keys, nd.free, nd.members = nd.size[:0], nd.keys[:0], nd.free[:0], nil
}

// class is the class of the row in slot (which the node holds).
func (nd *node) class(slot uint32) uint32 {
	switch {
	case nd.last < 0:
		return 0
	case nd.parent == nil:
		return nd.lastCol.Eq(nd.lastCol.Codes[slot])
	}
	return nd.classOf[slot]
}

// classOfKey returns the class of key k (the parent's class, then the last
// column's equality id) of a list of two columns or more, creating it if
// needed.
func (nd *node) classOfKey(k uint64) uint32 {
	if got, ok := nd.index.Get(k); ok {
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
	nd.index.Put(k, c)
	return c
}

// rowBatch is a tree's scratch for applying a chunk of rows to one node
// and its FDs (enterRows, leaveRows, fdCheck.enterRows, fdCheck.leaveRows): per
// row of the chunk, its class and the class's size just after it entered
// or just before it left (cls, ks), its key in the node's index (keys: set
// by enterRows for a list of two columns or more, read by fdCheck.enterRows;
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
func (nd *node) enterRows(rs span, mask uint32, b *rowBatch) {
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
func (nd *node) classesFor(rs span, mask uint32, b *rowBatch) {
	col, p := nd.lastCol, nd.parent
	keys := b.keys
	for i := range keys {
		slot := (rs.from + uint32(i)) & mask
		keys[i] = uint64(p.class(slot))<<32 | uint64(col.Eq(col.Codes[slot]))
	}
	b.sink |= nd.index.PeekAll(keys)
	for i, k := range keys {
		c := nd.classOfKey(k)
		nd.classOf[(rs.from+uint32(i))&mask] = c
		b.cls[i] = c
	}
}

// classes sets cls to the classes of the rows of rs, which the node
// holds (or, for the empty list or one column, any rows).
func (nd *node) classes(rs span, mask uint32, cls []uint32) {
	switch {
	case nd.last < 0:
		clear(cls)
	case nd.parent == nil:
		col := nd.lastCol
		for i := range cls {
			cls[i] = col.Eq(col.Codes[(rs.from+uint32(i))&mask])
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
func (nd *node) leaveRows(rs span, mask uint32, b *rowBatch) {
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
func (nd *node) dropRows(b *rowBatch) {
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
	b.sink |= nd.index.PeekAll(keys)
	for _, k := range keys {
		nd.index.Del(k)
	}
}
