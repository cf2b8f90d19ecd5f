package pairs

import (
	"math/rand/v2"
	"testing"
)

// TestMapMatchesMap drives a counted class's pair index through random
// puts and deletes against a map, over pairs that share their halves (so
// that probes collide and deletions shift entries back), ids reused as
// pairCounts reuses them.
func TestMapMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var m Map
	var pairs []Pair
	var free []uint32
	model := map[Pair]uint32{}
	for i := 0; i < 50000; i++ {
		p := Pair{uint64(r.IntN(20)) << uint(r.IntN(2)*40), uint64(r.IntN(20))}
		if id, ok := model[p]; ok {
			m.Del(id, pairs)
			delete(model, p)
			free = append(free, id)
		} else {
			var id uint32
			if k := len(free); k > 0 {
				id, free = free[k-1], free[:k-1]
				pairs[id] = p
			} else {
				id = uint32(len(pairs))
				pairs = append(pairs, p)
			}
			m.Put(id, pairs)
			model[p] = id
		}
		if m.Len() != len(model) {
			t.Fatalf("step %d: %d pairs, want %d", i, m.Len(), len(model))
		}
		if i%97 == 0 {
			for p, id := range model {
				if got, ok := m.Get(p, pairs); !ok || got != id {
					t.Fatalf("step %d: pair %v: got %d %v, want %d", i, p, got, ok, id)
				}
			}
			if _, ok := m.Get(Pair{1 << 63, 1}, pairs); ok {
				t.Fatalf("step %d: a pair never put is found", i)
			}
		}
	}
}
