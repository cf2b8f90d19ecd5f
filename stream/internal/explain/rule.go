package explain

import (
	"slices"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// explainFD finds the violating rows of the FD d (context: [] -> rhs): in
// each context class, the rows whose rhs is not the class's majority (the
// most frequent value; of equally frequent ones the value of the class's
// oldest row among them, the one the class held first). They are a
// minimal removal set (g3), and the majority is what the rule expected of
// each: leaving one of them out of its class leaves the majority as it is.
func explainFD(t *table.Table, d discovery.Dependency, b *buffers) (Result, error) {
	rhs, err := column(t, d.RHS)
	if err != nil {
		return Result{}, err
	}
	class, k, err := classes(t, d.Context, b)
	if err != nil {
		return Result{}, err
	}
	// Per (class, value) pair, numbered in first-row order: its count;
	// per class its majority pair.
	b.of = resized(b.of, t.Rows)
	of := b.of
	count := make([]int32, numberPairs(class, k, rhs, of, b))
	best := make([]int32, k)
	for i := range best {
		best[i] = -1
	}
	for row := range t.Rows {
		p := int32(of[row])
		count[p]++
		// Pairs are numbered in first-row order, so the lower number wins
		// a tie: the value the class held first.
		if m := best[class[row]]; m < 0 || count[p] > count[m] || (count[p] == count[m] && p < m) {
			best[class[row]] = p
		}
	}
	var r Result
	for row := range t.Rows {
		if int32(of[row]) != best[class[row]] {
			r.Violating = append(r.Violating, row)
		}
	}
	// The majority's rank: the rank of any row of its pair.
	rank := make([]uint32, len(count))
	for row := range t.Rows {
		rank[of[row]] = rhs.Ranks[row]
	}
	r.Expected = make([]Expected, len(r.Violating))
	for i, row := range r.Violating {
		v := rank[best[class[row]]]
		r.Expected[i] = Expected{Column: rhs.Name, Value: rhs.Values[v], Null: isNull(rhs, v)}
	}
	return r, nil
}

// numberPairs numbers the (class, value of c) pairs of the rows, class
// holding each row's class of k, in first-row order, and writes each
// row's into of (which may be class itself) and returns how many there
// are: through an array over the pairs when it is small enough (dense),
// else a map.
func numberPairs(class []uint32, k int, c *table.Column, of []uint32, b *buffers) int {
	if keys, ok := b.dense(len(class), k, c.Cardinality); ok {
		b.ids = resized(b.ids, keys)
		ids := b.ids
		clear(ids)
		next := uint32(0)
		for row := range class {
			key := int(class[row])*c.Cardinality + int(c.Ranks[row])
			if ids[key] == 0 {
				next++
				ids[key] = next
			}
			of[row] = ids[key] - 1
		}
		return int(next)
	}
	pair := make(map[uint64]uint32, k)
	for row := range class {
		key := uint64(class[row])<<32 | uint64(c.Ranks[row])
		p, ok := pair[key]
		if !ok {
			p = uint32(len(pair))
			pair[key] = p
		}
		of[row] = p
	}
	return len(pair)
}

// isNull reports whether rank v of c is NULL (rank 0 of a column with
// NULLs, whose text is empty: an empty cell is NULL).
func isNull(c *table.Column, v uint32) bool { return v == 0 && c.Values[0] == "" }

// ocRow is one row of an OC's sort: its class, left rank, right rank in
// the rule's direction (reversed for desc), and row number.
type ocRow struct{ class, a, b, row uint32 }

// explainOC finds the violating rows of the OC d (context: left ~ right):
// in each context class, sorted by (left, right), the rows outside one
// longest non-decreasing subsequence of right (right reversed for desc),
// the chain; they are a minimal removal set. What the rule expected of
// each is the range of right that no chain row contradicts: at least the
// right of the chain's last row with a smaller left, at most the right of
// its first row with a larger left (equal lefts never contradict).
func explainOC(t *table.Table, d discovery.Dependency, b *buffers) (Result, error) {
	left, err := column(t, d.Left)
	if err != nil {
		return Result{}, err
	}
	right, err := column(t, d.Right)
	if err != nil {
		return Result{}, err
	}
	class, k, err := classes(t, d.Context, b)
	if err != nil {
		return Result{}, err
	}
	desc := d.Polarity == discovery.Desc
	rows := b.sortOC(class, k, left, right, desc)
	var r Result
	b.in = resized(b.in, len(rows))
	inChain := b.in
	clear(inChain)
	chain := b.chain[:0]
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].class == rows[lo].class {
			hi++
		}
		chain = longestChain(rows[lo:hi], inChain[lo:hi], slices.Grow(chain[:0], hi-lo), &b.piles)
		for i := lo; i < hi; i++ {
			if !inChain[i] {
				r.Violating = append(r.Violating, int(rows[i].row))
				r.Expected = append(r.Expected, ocExpected(chain, rows[i], left, right, desc))
			}
		}
		lo = hi
	}
	b.chain = chain
	// Back to row order, the expectations with them: the rows are
	// distinct, below t.Rows.
	b.of = resized(b.of, t.Rows)
	at := b.of
	clear(at)
	for i, row := range r.Violating {
		at[row] = uint32(i) + 1
	}
	v, e := make([]int, 0, len(r.Violating)), make([]Expected, 0, len(r.Violating))
	for row, i := range at {
		if i > 0 {
			v, e = append(v, row), append(e, r.Expected[i-1])
		}
	}
	r.Violating, r.Expected = v, e
	return r, nil
}

// sortOC returns the rows of an OC of left ~ right whose rows' classes
// (of k) are class, as ocRows (right's rank reversed for desc) sorted by
// (class, a, b, row), in one of b's buffers: by one counting sort over
// the (class, a, b) keys when they are few enough (dense), else by
// stable counting sorts by b, a and class (not by class when there is
// one).
func (b *buffers) sortOC(class []uint32, k int, left, right *table.Column, desc bool) []ocRow {
	n := len(class)
	rank := func(i int) uint32 {
		if desc {
			return uint32(right.Cardinality-1) - right.Ranks[i]
		}
		return right.Ranks[i]
	}
	b.rows, b.spare = resized(b.rows, n), resized(b.spare, n)
	rows, spare := b.rows, b.spare
	if ka, ok := b.dense(n, k, left.Cardinality); ok {
		if keys, ok := b.dense(n, ka, right.Cardinality); ok {
			key := func(i int) int {
				return (int(class[i])*left.Cardinality+int(left.Ranks[i]))*right.Cardinality + int(rank(i))
			}
			start := b.counts(keys)
			for i := range n {
				start[key(i)+1]++
			}
			for i := 1; i <= keys; i++ {
				start[i] += start[i-1]
			}
			for i := range n {
				at := key(i)
				rows[start[at]] = ocRow{class: class[i], a: left.Ranks[i], b: rank(i), row: uint32(i)}
				start[at]++
			}
			return rows
		}
	}
	for i := range spare {
		spare[i] = ocRow{class: class[i], a: left.Ranks[i], b: rank(i), row: uint32(i)}
	}
	b.sortBy(rows, spare, right.Cardinality, func(x ocRow) uint32 { return x.b })
	b.sortBy(spare, rows, left.Cardinality, func(x ocRow) uint32 { return x.a })
	if k > 1 {
		b.sortBy(rows, spare, k, func(x ocRow) uint32 { return x.class })
		return rows
	}
	return spare
}

// counts is b's count array for a counting sort of keys keys, all 0.
func (b *buffers) counts(keys int) []int {
	b.start = resized(b.start, keys+1)
	clear(b.start)
	return b.start
}

// sortBy writes src into dst (as long) sorted stably by key, whose values
// are below k: a counting sort.
func (b *buffers) sortBy(dst, src []ocRow, k int, key func(ocRow) uint32) {
	start := b.counts(k)
	for _, x := range src {
		start[key(x)+1]++
	}
	for i := 1; i <= k; i++ {
		start[i] += start[i-1]
	}
	for _, x := range src {
		dst[start[key(x)]] = x
		start[key(x)]++
	}
}

// longestChain marks in in the rows (one class, sorted by (a, b)) of one
// longest non-decreasing subsequence of b, by patience sorting with
// predecessor links, and returns them in order (appended to chain).
func longestChain(rows []ocRow, in []bool, chain []ocRow, sc *[]int32) []ocRow {
	// Index of each pile's top row, and each row's predecessor, in
	// buffers kept across the classes: a class whose rule holds has
	// nearly as many piles as rows.
	buf := slices.Grow((*sc)[:0], 2*len(rows))
	*sc = buf
	tops, prev := buf[:0:len(rows)], buf[len(rows):2*len(rows)]
	for i, x := range rows {
		// the first pile whose top is greater than x.b: past the last
		// one when x.b is at least its top (a holding rule's rows
		// mostly), else found by bisection below it
		p, hi := len(tops), len(tops)-1
		if p > 0 && rows[tops[hi]].b > x.b {
			p = 0
		}
		for p < hi {
			if m := int(uint(p+hi) >> 1); rows[tops[m]].b <= x.b {
				p = m + 1
			} else {
				hi = m
			}
		}
		prev[i] = -1
		if p > 0 {
			prev[i] = tops[p-1]
		}
		if p == len(tops) {
			tops = append(tops, int32(i))
		} else {
			tops[p] = int32(i)
		}
	}
	start := len(chain)
	if len(tops) > 0 {
		for i := tops[len(tops)-1]; i >= 0; i = prev[i] {
			in[i] = true
			chain = append(chain, rows[i])
		}
	}
	slices.Reverse(chain[start:])
	return chain
}

// ocExpected is what the chain (one class's, sorted by (a, b), hence by
// b too) expects of row x: the range of one side that no chain row
// contradicts, the other side staying x's. For right: b at least that of
// the chain's last row with a smaller a, at most that of its first row
// with a larger a (desc: reversed, so the bounds swap); for left, the same
// with the sides exchanged. Of the two, the one the chain pins down better
// is what the rule expected: a range bounded on both sides before an open
// one, then the narrower share of its column's values; right on a tie.
// Which side a fault changed is not known (the demo's perc ~ salary breaks
// in perc, flights' distance rules in distance), and the side a fault
// changed is the one the chain bounds on both sides: a changed value has
// neighbours on both sides of the other, unchanged column.
func ocExpected(chain []ocRow, x ocRow, left, right *table.Column, desc bool) Expected {
	rb := chainSpan(chain, x.a, true)
	if desc {
		top := uint32(right.Cardinality - 1)
		rb = span{low: top - rb.high, high: top - rb.low, lowSet: rb.highSet, highSet: rb.lowSet}
	}
	la := chainSpan(chain, x.b, false)
	if la.better(rb, left.Cardinality, right.Cardinality) {
		return la.expected(left)
	}
	return rb.expected(right)
}

// chainSpan is the range of one side that no chain row contradicts for
// a row whose other side is at: at least the side of the chain's last row
// with the other side below at, at most that of its first row with it
// above at. The other side is a when byA, else b (the side the other).
// The chain is sorted by both sides.
func chainSpan(chain []ocRow, at uint32, byA bool) span {
	i := firstAtLeast(chain, at, byA)
	j := i + firstAtLeast(chain[i:], at+1, byA)
	sp := span{lowSet: i > 0, highSet: j < len(chain)}
	side := func(c ocRow) uint32 {
		if byA {
			return c.b
		}
		return c.a
	}
	if sp.lowSet {
		sp.low = side(chain[i-1])
	}
	if sp.highSet {
		sp.high = side(chain[j])
	}
	return sp
}

// firstAtLeast is the index of the first row of chain (sorted by both
// sides) whose a (byA) or b is at least v, len(chain) when none is.
func firstAtLeast(chain []ocRow, v uint32, byA bool) int {
	lo, hi := 0, len(chain)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		k := chain[m].b
		if byA {
			k = chain[m].a
		}
		if k < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// span is a range of ranks of one column, each side possibly open.
type span struct {
	low, high       uint32
	lowSet, highSet bool
}

// better reports whether s (of a column of n ranks) pins its column down
// better than o (of m ranks): bounded on both sides where o is not, or
// both bounded and narrower as a share of the column's ranks.
func (s span) better(o span, n, m int) bool {
	sb, ob := s.lowSet && s.highSet, o.lowSet && o.highSet
	if sb != ob {
		return sb
	}
	if !sb {
		return false
	}
	return float64(s.high-s.low)*float64(m) < float64(o.high-o.low)*float64(n)
}

func (s span) expected(c *table.Column) Expected {
	e := Expected{Column: c.Name, Range: true}
	if s.lowSet {
		e.Low, e.HasLow = c.Values[s.low], true
	}
	if s.highSet {
		e.High, e.HasHigh = c.Values[s.high], true
	}
	return e
}
