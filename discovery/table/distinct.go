package table

import "sync"

// Distinct says which rows of a table are distinct records: the first row
// of each set of rows that are equal in every column. Discovery judges
// evidence on them (docs/DESIGN.md, "Strength"). It is read-only.
type Distinct struct {
	// First[r] is true when row r is the first of its identical rows; nil
	// when every row is distinct.
	First []bool
	// N is the number of distinct records.
	N int
}

// distinctCache keeps a table's Distinct once found, so that every
// discovery, validation and summary of the table shares one: finding it
// reads every cell. Its lock lets the goroutines that share a table (a
// discovery's workers, a check and its samples) ask for it at once.
type distinctCache struct {
	mu      sync.Mutex
	all     bool // MarkDistinct: every row is a distinct record
	columns int  // the columns d was found over
	d       *Distinct
}

// Distinct returns t's distinct records. A table Encode built finds them
// once and keeps them; columns appended since (a table grown column by
// column) make it find them again over all of them. A Table written as a
// literal finds them at each call. The cells of a table must not change
// once it is handed to discovery.
func (t *Table) Distinct() *Distinct {
	c := t.distinct
	if c == nil {
		return findDistinct(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all {
		return &Distinct{N: t.Rows}
	}
	if c.d == nil || c.columns != len(t.Columns) {
		c.d, c.columns = findDistinct(t), len(t.Columns)
	}
	return c.d
}

// MarkDistinct says that every row of t is a distinct record of the
// data its columns were taken from, whatever columns t holds now or is
// given later: Distinct then finds no row repeated without reading the
// cells (a window's table of a few columns, taken when a key has no
// removal on the window). A Table written as a literal has no cache and
// ignores it.
func (t *Table) MarkDistinct() {
	if c := t.distinct; c != nil {
		c.mu.Lock()
		c.all = true
		c.mu.Unlock()
	}
}

// findDistinct finds the distinct records of t by hashing each row's
// ranks into an open-addressing table of row numbers: O(rows x columns),
// an exact comparison settling every hash that matches.
func findDistinct(t *Table) *Distinct {
	n := t.Rows
	d := &Distinct{N: n}
	if n < 2 {
		return d
	}
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = 0x9e3779b97f4a7c15
	}
	for _, c := range t.Columns {
		for r, x := range c.Ranks {
			h := (hashes[r] ^ uint64(x)) * 0xbf58476d1ce4e5b9
			hashes[r] = h ^ h>>31
		}
	}
	size := 1
	for size < 2*n {
		size <<= 1
	}
	slots := make([]int32, size) // row+1 of the first row seen with a hash; 0 empty
	mask := uint64(size - 1)
	for r := 0; r < n; r++ {
		for i := hashes[r] & mask; ; i = (i + 1) & mask {
			s := slots[i]
			if s == 0 {
				slots[i] = int32(r + 1)
				break
			}
			if q := int(s - 1); hashes[q] == hashes[r] && sameRow(t, q, r) {
				if d.First == nil {
					d.First = make([]bool, n)
					for k := range d.First {
						d.First[k] = true
					}
				}
				d.First[r] = false
				d.N--
				break
			}
		}
	}
	return d
}

// sameRow reports whether rows p and q of t are equal in every column.
func sameRow(t *Table, p, q int) bool {
	for i := range t.Columns {
		if t.Columns[i].Ranks[p] != t.Columns[i].Ranks[q] {
			return false
		}
	}
	return true
}
