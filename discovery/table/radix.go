package table

// radixMin is the fewest dictionary entries a column with keys is radix
// sorted from (encodeColumn): below it a comparison sort of the entries
// costs less than the radix sort's counting passes (encoding distinct
// amounts in random order, 2,048: 263 against 357 us; 4,096: 559 against
// 442). A variable so that a test can put every column on either path.
var radixMin = 4096

// radixSort sorts the dictionary indices idx by keys[i], ties in their
// order in idx: a least significant digit first radix sort of the
// (key, index) pairs by 16-bit digits, a digit that every key shares
// skipped. A numeric column of 100k distinct values was sorted by
// comparison through two closures per step, 18 ms of its encoding.
func radixSort(idx []int32, keys []uint64) {
	type keyed struct {
		key uint64
		i   int32
	}
	a, b := make([]keyed, len(idx)), make([]keyed, len(idx))
	for k, i := range idx {
		a[k] = keyed{keys[i], i}
	}
	count := make([]int, 1<<16) // 512 KiB: on the heap, not the stack
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count)
		for _, x := range a {
			count[x.key>>shift&0xffff]++
		}
		if count[a[0].key>>shift&0xffff] == len(a) {
			continue // every key has this digit
		}
		at := 0
		for d, n := range count {
			count[d] = at
			at += n
		}
		for _, x := range a {
			d := x.key >> shift & 0xffff
			b[count[d]] = x
			count[d]++
		}
		a, b = b, a
	}
	for k := range idx {
		idx[k] = a[k].i
	}
}
