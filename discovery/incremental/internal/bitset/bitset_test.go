package bitset

import (
	"math/rand/v2"
	"testing"
)

// TestScan checks Next and Prev against a scan of the bits.
func TestScan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(300)
		set := Resize(nil, n, false)
		dens := r.Float64() * 0.1
		for i := 0; i < n; i++ {
			if r.Float64() < dens {
				set[i>>6] |= 1 << (i & 63)
			}
		}
		has := func(i int) bool { return set[i>>6]>>(i&63)&1 == 1 }
		for i := 0; i <= n; i++ {
			next := i
			for next < n && !has(next) {
				next++
			}
			prev := i - 1
			for prev >= 0 && !has(prev) {
				prev--
			}
			if got := Next(set, i, n); got != next {
				t.Fatalf("n %d: Next(%d) = %d, want %d", n, i, got, next)
			}
			if got := Prev(set, i); got != prev {
				t.Fatalf("n %d: Prev(%d) = %d, want %d", n, i, got, prev)
			}
		}
	}
}
