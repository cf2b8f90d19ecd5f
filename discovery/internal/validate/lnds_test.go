package validate

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUpperBoundNear checks the exponential search against the plain
// binary search on every start position and probe of random sorted tails.
func TestUpperBoundNear(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		s := make([]uint32, n)
		for i := range s {
			s[i] = uint32(rng.IntN(30))
		}
		slices.Sort(s)
		s[n-1] = 1000 // the caller guarantees x < s[len(s)-1]
		for last := range s {
			prev := s[last]
			for x := uint32(0); x < 32; x++ {
				if got, want := upperBoundNear(s, x, last, prev), upperBound(s, x); got != want {
					t.Fatalf("trial %d: upperBoundNear(%v, %d, %d, %d) = %d, want %d", trial, s, x, last, prev, got, want)
				}
			}
		}
	}
}

func TestSortKeys(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 200, 257, 5000, 1 << 16, 1<<16 + 1, 200_000} {
		for _, width := range []uint{0, 1, 7, 8, 9, 22, 33, 64} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = rng.Uint64()
				if width < 64 {
					keys[i] &= 1<<width - 1
				}
			}
			want := slices.Sorted(slices.Values(keys))
			got := sortKeys(keys, make([]uint64, n), width)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d width=%d: not sorted", n, width)
			}
		}
	}
}

// TestPairHistMatchesSmallB checks that pairHistClass returns what
// smallBClass returns for the same class, with and without stops at
// remAsc and remDesc, in either polarity or both.
func TestPairHistMatchesSmallB(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(25, 2))
	v := NewValidator()
	for trial := range 500 {
		n := 2 + rng.IntN(600)
		cardA, cardB := 1+rng.IntN(n), 2+rng.IntN(63)
		ar, br := make([]uint32, n), make([]uint32, n)
		for r := range ar {
			ar[r] = uint32(rng.IntN(cardA))
			br[r] = min(ar[r]*uint32(cardB)/uint32(cardA), uint32(cardB-1))
			if rng.IntN(4) == 0 {
				br[r] = uint32(rng.IntN(cardB))
			}
		}
		cls := make([]uint32, n)
		for i := range cls {
			cls[i] = uint32(i)
		}
		maxB := uint32(cardB - 1)
		for _, want := range [][2]bool{{true, true}, {true, false}, {false, true}} {
			rem := []int{-1, 0, rng.IntN(n), n}[rng.IntN(4)]
			cnt := make([]uint32, cardA+1)
			for _, r := range cls {
				cnt[ar[r]+1]++
			}
			for d := 1; d <= cardA; d++ {
				cnt[d] += cnt[d-1]
			}
			wa, wd := v.smallBClass(cls, ar, br, cnt, 0, maxB, want[0], want[1], rem, rem)
			ga, gd := v.pairHistClass(cls, ar, br, 0, cardA, maxB, want[0], want[1], rem, rem)
			if ga != wa || gd != wd {
				t.Fatalf("trial %d (n=%d, |A|=%d, |B|=%d, want %v, rem %d): pairHistClass (%d, %d), smallBClass (%d, %d)", trial, n, cardA, cardB, want, rem, ga, gd, wa, wd)
			}
		}
	}
}

// TestChainSortsAgree checks chainRemovals' packed radix sort of (key, row)
// pairs against the compared sort it stands in for (forced by a packedBits
// of 0): the same items in the same order per class, hence the same
// removal set, on random partitions whose classes list their rows in any
// order, with few or many distinct keys, and against the removal count of
// the same OC (minimal).
func TestChainSortsAgree(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(29, 3))
	for trial := range 300 {
		n := 1 + rng.IntN(3000)
		cardA, cardB := 1+rng.IntN(1+rng.IntN(n)), 1+rng.IntN(1+rng.IntN(n))
		a, b := randomColumn(rng, n, cardA), randomColumn(rng, n, cardB)
		p := &StrippedPartition{N: n}
		rows := rng.Perm(n)
		for lo := 0; lo < n; {
			hi := min(n, lo+2+rng.IntN(1+rng.IntN(n)))
			if hi-lo < 2 {
				break
			}
			p.Starts = append(p.Starts, uint32(len(p.Rows)))
			for _, r := range rows[lo:hi] {
				p.Rows = append(p.Rows, uint32(r))
			}
			lo = hi
		}
		p.Starts = append(p.Starts, uint32(len(p.Rows)))
		pol := Polarity(rng.IntN(2))
		bitsB := rankBits(b)
		item := func(r uint32) chainItem {
			x := b.Ranks[r]
			if pol == Desc {
				x = uint32(b.Cardinality-1) - x
			}
			return chainItem{key: uint64(a.Ranks[r])<<bitsB | uint64(x), row: r, val: x}
		}
		keyBits, rowBits := rankBits(a)+bitsB, uint(bits.Len32(uint32(n-1)))
		packed, compared := &chainScratch{packedBits: chainPackedBits}, &chainScratch{packedBits: 0}
		for i := 0; i < p.NumClasses(); i++ {
			got := slices.Clone(packed.sortChain(p.Class(i), keyBits, rowBits, item))
			want := compared.sortChain(p.Class(i), keyBits, rowBits, item)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d class %d: packed sort %v, compared %v", trial, i, got, want)
			}
		}
		got := chainRemovalsWith(p, keyBits, item, &chainScratch{packedBits: chainPackedBits})
		want := chainRemovalsWith(p, keyBits, item, &chainScratch{})
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: packed removal set %v, compared %v", trial, got, want)
		}
		if exact := NewValidator().OCRemovals(p, a, b, pol, -1); len(got) != exact {
			t.Fatalf("trial %d: %d rows removed, the exact count is %d", trial, len(got), exact)
		}
	}
}
