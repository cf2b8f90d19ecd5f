package validate

import (
	"slices"

	"github.com/odwatch/odwatch/discovery/table"
)

// StrippedPartition is the partition of a table's rows by the values of a
// set of columns (a context), with singleton classes left out (TANE): a
// singleton can never carry a violation, so validators skip it, and a
// product of two stripped partitions is again exactly the stripped partition
// of the union of their contexts.
//
// Classes are stored back to back in Rows; class i is
// Rows[Starts[i]:Starts[i+1]]. Rows inside a class are ascending.
type StrippedPartition struct {
	N      int      // rows of the table the partition is over
	Rows   []uint32 // row ids of the non-singleton classes, class after class
	Starts []uint32 // len = NumClasses()+1
	// bySize, when set, lists the class indices largest first (ties by
	// index): the order the OC validators read classes in, computed once
	// per lattice node instead of once per validation.
	bySize []uint32
}

// SortBySize records p's classes largest first (ClassesBySize), the order
// the OC validators read them in, so that they need not sort them again.
func (p *StrippedPartition) SortBySize() { p.bySize = ClassesBySize(p, nil) }

// ClassesBySize returns p's class indices by size descending, ties by
// index: a counting sort on the class sizes, O(classes + largest class).
func ClassesBySize(p *StrippedPartition, out []uint32) []uint32 {
	nc := p.NumClasses()
	out = slices.Grow(out[:0], nc)[:nc]
	maxSize := uint32(0)
	for i := 0; i < nc; i++ {
		maxSize = max(maxSize, p.Starts[i+1]-p.Starts[i])
	}
	// pos[s] counts the classes larger than s, then becomes the next slot
	// of size s.
	pos := make([]uint32, maxSize+2)
	for i := 0; i < nc; i++ {
		pos[p.Starts[i+1]-p.Starts[i]]++
	}
	var sum uint32
	for s := int(maxSize); s >= 0; s-- {
		c := pos[s]
		pos[s] = sum
		sum += c
	}
	for i := 0; i < nc; i++ {
		s := p.Starts[i+1] - p.Starts[i]
		out[pos[s]] = uint32(i)
		pos[s]++
	}
	return out
}

// NumClasses returns the number of non-singleton classes.
func (p *StrippedPartition) NumClasses() int {
	if len(p.Starts) == 0 {
		return 0
	}
	return len(p.Starts) - 1
}

// Class returns the rows of class i (do not modify).
func (p *StrippedPartition) Class(i int) []uint32 {
	return p.Rows[p.Starts[i]:p.Starts[i+1]]
}

// Covered returns the number of rows in non-singleton classes.
func (p *StrippedPartition) Covered() int { return len(p.Rows) }

// Score is the share of tuple pairs the partition constrains: the sum over
// all classes c, singletons included, of |c|^2 / n^2 (0 for an empty table).
func (p *StrippedPartition) Score() float64 {
	if p.N == 0 {
		return 0
	}
	var sum float64
	for i := 0; i < p.NumClasses(); i++ {
		c := float64(p.Starts[i+1] - p.Starts[i])
		sum += c * c
	}
	sum += float64(p.N - len(p.Rows)) // singletons contribute 1 each
	n := float64(p.N)
	return sum / (n * n)
}

// FullPartition is the partition of the empty context: one class holding
// all n rows (no class when n < 2, as singletons are stripped).
func FullPartition(n int) *StrippedPartition {
	p := &StrippedPartition{N: n}
	if n < 2 {
		return p
	}
	p.Rows = make([]uint32, n)
	for i := range p.Rows {
		p.Rows[i] = uint32(i)
	}
	p.Starts = []uint32{0, uint32(n)}
	return p
}

// ColumnPartition partitions the rows by one column's ranks with a counting
// sort: O(n + cardinality).
func ColumnPartition(c *table.Column) *StrippedPartition {
	n := len(c.Ranks)
	p := &StrippedPartition{N: n}
	card := c.Cardinality
	for _, r := range c.Ranks {
		if int(r) >= card {
			card = int(r) + 1 // tolerate an understated cardinality
		}
	}
	count := make([]uint32, card+1)
	for _, r := range c.Ranks {
		count[r+1]++
	}
	covered := 0
	for v := 1; v <= card; v++ {
		if count[v] >= 2 {
			covered += int(count[v])
		}
	}
	if covered == 0 {
		return p
	}
	// pos[v] = write position of rank v's class, or skip for singletons.
	const skip = ^uint32(0)
	p.Rows = make([]uint32, covered)
	p.Starts = make([]uint32, 0, 16)
	var off uint32
	for v := 0; v < card; v++ {
		k := count[v+1]
		if k >= 2 {
			p.Starts = append(p.Starts, off)
			count[v+1] = off
			off += k
		} else {
			count[v+1] = skip
		}
	}
	p.Starts = append(p.Starts, off)
	for i, r := range c.Ranks {
		if pos := count[r+1]; pos != skip {
			p.Rows[pos] = uint32(i)
			count[r+1] = pos + 1
		}
	}
	return p
}

// partitionScratch holds the reusable buffers of a partition product: a
// probe table mapping a row to its class in the left operand (-1 outside
// every class) and per-class counters. The invariant between calls is that
// probe is all -1 and cnt all 0, so a product costs O(covered rows), not
// O(n).
type partitionScratch struct {
	probe   []int32
	cnt     []uint32
	pos     []uint32
	touched []int32
	classOf []int32 // probe results of the class being split
}

func (s *partitionScratch) ensure(n, classes int) {
	if len(s.probe) < n {
		s.probe = make([]int32, n)
		for i := range s.probe {
			s.probe[i] = -1
		}
	}
	if len(s.cnt) < classes {
		s.cnt = make([]uint32, classes)
		s.pos = make([]uint32, classes)
	}
}

// product returns the stripped partition of the union of p's and q's
// contexts (TANE's product). tick, when not nil, is told the rows gone
// through after probing p and after each class of q (Validator.tick).
func (s *partitionScratch) product(p, q *StrippedPartition, tick func(rows int)) *StrippedPartition {
	if q.Covered() < p.Covered() {
		p, q = q, p // probe the smaller one: fewer writes to reset
	}
	out := &StrippedPartition{N: p.N}
	if p.Covered() == 0 || q.Covered() == 0 {
		return out
	}
	s.ensure(p.N, p.NumClasses())
	for i := 0; i < p.NumClasses(); i++ {
		for _, r := range p.Class(i) {
			s.probe[r] = int32(i)
		}
	}
	if tick != nil {
		tick(p.Covered())
	}
	out.Rows = make([]uint32, 0, p.Covered())
	out.Starts = make([]uint32, 0, 16)
	for j := 0; j < q.NumClasses(); j++ {
		cls := q.Class(j)
		s.touched = s.touched[:0]
		// Look each row up once: the second pass reads the lookups
		// sequentially instead of probing the row-indexed table again.
		classOf := slices.Grow(s.classOf[:0], len(cls))[:len(cls)]
		s.classOf = classOf
		for k, r := range cls {
			i := s.probe[r]
			classOf[k] = i
			if i >= 0 {
				if s.cnt[i] == 0 {
					s.touched = append(s.touched, i)
				}
				s.cnt[i]++
			}
		}
		base := uint32(len(out.Rows))
		off := base
		for _, i := range s.touched {
			if s.cnt[i] >= 2 {
				out.Starts = append(out.Starts, off)
				s.pos[i] = off
				off += s.cnt[i]
			}
		}
		if off > base {
			out.Rows = out.Rows[:off]
			for k, r := range cls {
				if i := classOf[k]; i >= 0 && s.cnt[i] >= 2 {
					out.Rows[s.pos[i]] = r
					s.pos[i]++
				}
			}
		}
		for _, i := range s.touched {
			s.cnt[i] = 0
		}
		if tick != nil {
			tick(len(cls))
		}
	}
	if len(out.Starts) > 0 {
		out.Starts = append(out.Starts, uint32(len(out.Rows)))
	}
	for _, r := range p.Rows {
		s.probe[r] = -1
	}
	return out
}

// Product returns the stripped partition of the union of p's and q's
// contexts. Both must be over the same rows.
func (p *StrippedPartition) Product(q *StrippedPartition) *StrippedPartition {
	var s partitionScratch
	return s.product(p, q, nil)
}

// PartitionOf builds the stripped partition of t by the given columns
// (indices into t.Columns); no columns means the empty context.
func PartitionOf(t *table.Table, cols []int) *StrippedPartition {
	if len(cols) == 0 {
		return FullPartition(t.Rows)
	}
	var s partitionScratch
	p := ColumnPartition(&t.Columns[cols[0]])
	for _, c := range cols[1:] {
		p = s.product(p, ColumnPartition(&t.Columns[c]), nil)
	}
	return p
}
