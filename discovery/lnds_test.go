package discovery

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
