package validate

import (
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
