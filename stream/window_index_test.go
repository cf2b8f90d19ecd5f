package stream

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestValueIndexMatchesMap drives the hash index with random inserts and
// removals (including long probe runs from a tiny hash space) and checks
// every lookup against a Go map.
func TestValueIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newValueIndex()
	var dict []string
	var free []uint32
	want := map[string]uint32{}
	for step := range 200_000 {
		v := strconv.Itoa(rng.IntN(3000))
		code, h := x.lookup(dict, []byte(v))
		if code != want[v] {
			t.Fatalf("step %d: lookup %q = %d, want %d", step, v, code, want[v])
		}
		if code == 0 {
			if k := len(free); k > 0 {
				code = free[k-1]
				free = free[:k-1]
				dict[code-1] = v
			} else {
				dict = append(dict, v)
				code = uint32(len(dict))
			}
			x.insert(code, h)
			want[v] = code
		} else if rng.IntN(2) == 0 {
			x.remove(code, v)
			dict[code-1] = ""
			free = append(free, code)
			delete(want, v)
		}
		if x.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(want))
		}
	}
	for v, code := range want {
		if got, _ := x.lookup(dict, []byte(v)); got != code {
			t.Fatalf("final lookup %q = %d, want %d", v, got, code)
		}
	}
}
