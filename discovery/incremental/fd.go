package incremental

// fdCheck keeps the g3 removals of X: [] -> A exact as rows come and go: per
// class of X (node x), how many classes of X+A (node xa, whose parent is x)
// have each size (count-of-counts) and the largest size. A row entering a
// class of X+A of size k-1 moves one class from count k-1 to k; leaving,
// from k to k-1, and the largest size drops by one exactly when no other
// class had it. The removals are the sum over classes of X of size minus
// largest.
//
// The state of class cx of X is a block of stride words, blk[cx*stride:],
// so that a row reads and writes one cache line (not a slice header, an
// array elsewhere and the largest size in a third place). Word 0 is the
// largest size m; the others hold the counts in one of three layouts:
//
//   - inline, while m < stride: word k is the count of size k;
//   - pairs, when m >= stride and word 1 is 0: the counts that are not 0
//     as (size, count) in the pairs of words (2, 3), (4, 5), ... (a free
//     pair is (0, 0)); most classes of X+A in a class of X have one of a
//     few sizes (an FD that holds nearly: one large class and a few
//     small ones);
//   - dense, when m >= stride and word 1 is not 0: big[word 1 - 1] holds
//     the count of size k at k and the number of sizes whose count is not
//     0 at 0, and word 2 counts the moves since the class turned dense.
//
// A class turns from inline to pairs (or dense, with more sizes than
// pairs) when m reaches stride and back when m drops below it; from pairs
// to dense when a size needs a pair and none is free; from dense to pairs
// when fewer sizes than pairs have a count and at least m moves were made
// since it turned dense (which pays for reading its m counts).
type fdCheck struct {
	x, xa    *node
	stride   uint32
	pairs    uint32 // pairs a block holds: (stride-2)/2
	blk      []uint32
	big      [][]uint32 // by index; a free index holds nil
	freeBig  []uint32   // free indexes of big
	spare    [][]uint32 // zeroed arrays given back by dense classes
	removals int
	stale    bool
}

// spareBig bounds the zeroed arrays an FD keeps for classes turning
// dense, and spareLen their length.
const spareBig, spareLen = 64, 256

// maxFDStride bounds the stride (see inline).
const maxFDStride = 256

// reset empties the state and sets the stride (2 to maxFDStride).
func (f *fdCheck) reset(stride int) {
	f.stride = uint32(min(max(stride, 2), maxFDStride))
	f.pairs = 0
	if f.stride >= 4 {
		f.pairs = (f.stride - 2) / 2
	}
	f.blk, f.big, f.freeBig, f.spare, f.removals = f.blk[:0], nil, nil, nil, 0
}

// block returns the block of class cx, first growing blk to hold it.
func (f *fdCheck) block(cx uint32) []uint32 {
	end := int(cx+1) * int(f.stride)
	if end > len(f.blk) {
		f.blk = append(f.blk, make([]uint32, end-len(f.blk))...)
	}
	return f.blk[end-int(f.stride) : end : end]
}

// enter moves one class of X+A in class cx of X from size k-1 to k: it
// runs after both nodes took a row.
func (f *fdCheck) enter(cx, k uint32) {
	b := f.block(cx)
	if k > b[0] {
		b[0] = k
		if k == f.stride {
			f.outOfLine(b)
		}
	} else {
		f.removals++
	}
	if b[0] < f.stride {
		if k > 1 {
			b[k-1]--
		}
		b[k]++
		return
	}
	f.move(b, k-1, k)
}

// enterRows applies the rows of a chunk, which entered xa (b: their
// classes' keys and sizes, set by node.enterRows), in two passes:
// their classes of X first, which xa's keys hold (the high word, the class
// of xa's parent x), reading each one's block so that the cache misses of
// the rows overlap; then the moves.
func (f *fdCheck) enterRows(b *rowBatch) {
	if f.xa.parent == nil {
		clear(b.cx) // X is the empty list: one class
	} else {
		for i, k := range b.keys {
			b.cx[i] = uint32(k >> 32)
		}
	}
	f.readBlocks(b)
	for i, k := range b.ks {
		f.enter(b.cx[i], k)
	}
}

// leaveRows applies the rows of rs, which are leaving xa (b: their
// classes' sizes, set by node.leaveRows), in two passes as enterRows,
// their classes of X read from x.
func (f *fdCheck) leaveRows(rs span, mask uint32, b *rowBatch) {
	f.x.classes(rs, mask, b.cx)
	f.readBlocks(b)
	for i, k := range b.ks {
		f.leave(b.cx[i], k)
	}
}

// readBlocks reads the first word of the block of each class of X in
// b.cx (if it has one).
func (f *fdCheck) readBlocks(b *rowBatch) {
	var sink uint32
	blk, stride := f.blk, int(f.stride)
	for _, cx := range b.cx {
		if at := int(cx) * stride; at < len(blk) {
			sink |= blk[at]
		}
	}
	b.sink |= sink
}

// leave moves one class of X+A in class cx of X from size k to k-1: it
// runs before the nodes let a row go.
func (f *fdCheck) leave(cx, k uint32) {
	b := f.blk[cx*f.stride : (cx+1)*f.stride]
	if b[0] < f.stride {
		b[k]--
		if k > 1 {
			b[k-1]++
		}
		if k == b[0] && b[k] == 0 {
			b[0]--
		} else {
			f.removals--
		}
		return
	}
	if f.move(b, k, k-1) != 0 || k != b[0] {
		f.removals--
		return
	}
	b[0]--
	if b[0] < f.stride {
		f.inline(b)
	}
}

// move moves one class from size from to size to (either 0: none) in
// block b (pairs or dense) and returns the count of size from left.
func (f *fdCheck) move(b []uint32, from, to uint32) uint32 {
	var left uint32
	if b[1] == 0 {
		var ok bool
		if left, ok = f.movePairs(b, from, to); ok {
			return left
		}
		f.dense(b) // no pair free for size to; the move from size from is made
		from = 0
	}
	cc := f.big[b[1]-1]
	if int(to) >= len(cc) {
		cc = append(cc, make([]uint32, int(to)+1-len(cc))...)
		f.big[b[1]-1] = cc
	}
	if from > 0 {
		cc[from]--
		left = cc[from]
		if left == 0 {
			cc[0]--
		}
	}
	if to > 0 {
		if cc[to] == 0 {
			cc[0]++
		}
		cc[to]++
	}
	if f.pairs > 0 {
		b[2]++
		if cc[0] < f.pairs && b[2] >= b[0] {
			f.sparse(b)
		}
	}
	return left
}

// movePairs is move in a block of pairs; ok is false when size to needs a
// pair and none is free (the move from size from is made). One pass finds
// the pairs of both sizes and a free one; a class moving from a size no
// other class has to a size no other class has keeps its pair.
func (f *fdCheck) movePairs(b []uint32, from, to uint32) (left uint32, ok bool) {
	var fi, ti, free uint32 // pair indexes; 0: none
	for i := uint32(2); i < 2+2*f.pairs; i += 2 {
		switch k := b[i]; {
		case k == 0:
			if free == 0 {
				free = i
			}
		case k == from:
			fi = i
		case k == to:
			ti = i
		}
	}
	if fi != 0 {
		b[fi+1]--
		left = b[fi+1]
		if left == 0 {
			if to != 0 && ti == 0 {
				b[fi], b[fi+1] = to, 1
				return 0, true
			}
			b[fi] = 0
		}
	}
	switch {
	case to == 0:
	case ti != 0:
		b[ti+1]++
	case free != 0:
		b[free], b[free+1] = to, 1
	default:
		return left, false
	}
	return left, true
}

// outOfLine turns inline block b, whose largest size reached stride,
// into pairs, or dense when it has more sizes than pairs.
func (f *fdCheck) outOfLine(b []uint32) {
	var counts [maxFDStride]uint32
	copy(counts[1:], b[1:])
	sizes := uint32(0)
	for _, c := range counts[1:f.stride] {
		if c != 0 {
			sizes++
		}
	}
	clear(b[1:])
	if sizes > f.pairs {
		cc := f.array(int(f.stride) + 1)
		copy(cc[1:], counts[1:f.stride])
		f.install(b, cc, sizes)
		return
	}
	toPairs(b, counts[:f.stride])
}

// dense turns block b of pairs dense.
func (f *fdCheck) dense(b []uint32) {
	cc := f.array(int(b[0]) + 1)
	sizes := f.fromPairs(b, cc)
	clear(b[1:])
	f.install(b, cc, sizes)
}

// install makes block b (words 1.. zero) dense with the counts in cc,
// sizes of them not 0.
func (f *fdCheck) install(b []uint32, cc []uint32, sizes uint32) {
	cc[0] = sizes
	var i uint32
	if n := len(f.freeBig); n > 0 {
		i, f.freeBig = f.freeBig[n-1], f.freeBig[:n-1]
		f.big[i] = cc
	} else {
		i = uint32(len(f.big))
		f.big = append(f.big, cc)
	}
	b[1] = i + 1
}

// array returns a zeroed array of at least n counts.
func (f *fdCheck) array(n int) []uint32 {
	if k := len(f.spare); k > 0 && n <= cap(f.spare[k-1]) {
		cc := f.spare[k-1]
		f.spare = f.spare[:k-1]
		return cc[:n]
	}
	return make([]uint32, n, max(n, 2*int(f.stride)))
}

// sparse turns dense block b, whose sizes fit in the pairs, into pairs.
func (f *fdCheck) sparse(b []uint32) {
	cc := f.release(b)
	toPairs(b, cc[:b[0]+1])
	f.give(cc, b[0])
}

// toPairs writes the counts of sizes 1.. that are not 0 (counts[k] is
// the count of size k) into the pairs of block b, whose words 1.. are 0
// and whose pairs hold them.
func toPairs(b, counts []uint32) {
	i := 2
	for k := 1; k < len(counts); k++ {
		if counts[k] != 0 {
			b[i], b[i+1] = uint32(k), counts[k]
			i += 2
		}
	}
}

// fromPairs sets counts[k] to the count of size k held in the pairs of
// block b, for the sizes that have a count, and returns how many do.
func (f *fdCheck) fromPairs(b, counts []uint32) uint32 {
	sizes := uint32(0)
	for i := uint32(2); i < 2+2*f.pairs; i += 2 {
		if b[i+1] != 0 {
			counts[b[i]] = b[i+1]
			sizes++
		}
	}
	return sizes
}

// inline turns block b (pairs or dense), whose largest size dropped below
// stride, inline.
func (f *fdCheck) inline(b []uint32) {
	var counts [maxFDStride]uint32 // sizes 0..stride-1
	if b[1] != 0 {
		cc := f.release(b)
		copy(counts[1:f.stride], cc[1:])
		f.give(cc, f.stride-1)
	} else {
		f.fromPairs(b, counts[:])
	}
	copy(b[1:], counts[1:f.stride])
}

// release detaches dense block b's array, clearing words 1.., and returns
// it.
func (f *fdCheck) release(b []uint32) []uint32 {
	i := b[1] - 1
	cc := f.big[i]
	f.big[i] = nil
	f.freeBig = append(f.freeBig, i)
	clear(b[1:])
	return cc
}

// give keeps a released array, whose counts beyond m are 0, as spare.
func (f *fdCheck) give(cc []uint32, m uint32) {
	if len(f.spare) >= spareBig || cap(cc) > spareLen {
		return
	}
	clear(cc[:min(int(m)+1, len(cc))])
	f.spare = append(f.spare, cc[:cap(cc)])
}

// rebuild recomputes the FD's counts from its nodes' classes, with blocks
// of stride words: the largest size of each class of X first (a block of
// largest size stride or more starts as empty pairs), then the counts.
func (f *fdCheck) rebuild(stride int) {
	f.reset(stride)
	classX := func(r int) uint32 { // the class of X: 0 for the empty context
		if f.xa.parent == nil {
			return 0
		}
		return uint32(f.xa.keys[r] >> 32)
	}
	for r, k := range f.xa.size {
		if k > 0 {
			b := f.block(classX(r))
			b[0] = max(b[0], k)
		}
	}
	for r, k := range f.xa.size {
		if k == 0 {
			continue
		}
		b := f.block(classX(r))
		if b[0] < f.stride {
			b[k]++
		} else {
			f.move(b, 0, k)
		}
	}
	for cx := 0; cx < len(f.blk)/int(f.stride); cx++ {
		if cx < len(f.x.size) {
			f.removals += int(f.x.size[cx]) - int(f.blk[cx*int(f.stride)])
		}
	}
}
