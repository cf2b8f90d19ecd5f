package order

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestStableIsAStableSort: on random keys with many ties, Stable followed
// by Apply puts the elements where a stable sort by (key, text) does, and
// renders the text of none but the tied ones.
func TestStableIsAStableSort(t *testing.T) {
	t.Parallel()
	type elem struct {
		key  int
		text string
		id   int
	}
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := rng.IntN(300)
		es := make([]elem, n)
		for i := range es {
			es[i] = elem{key: rng.IntN(1 + n/4), text: fmt.Sprint(rng.IntN(5)), id: i}
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(x, y elem) int { return cmp.Or(cmp.Compare(x.key, y.key), strings.Compare(x.text, y.text)) })
		keys := make([]int, n)
		count := make(map[int]int)
		for i, e := range es {
			keys[i] = e.key
			count[e.key]++
		}
		rendered := 0
		idx := Stable(keys, func(a, b int) int { return cmp.Compare(a, b) }, func(i int) string {
			if count[es[i].key] < 2 {
				t.Fatalf("seed %d: the text of element %d rendered, its key ties with none", seed, i)
			}
			rendered++
			return es[i].text
		})
		got := slices.Clone(es)
		Apply(got, idx)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: got %v, a stable sort %v", seed, got, want)
		}
		tied := 0
		for _, c := range count {
			if c > 1 {
				tied += c
			}
		}
		if rendered != tied {
			t.Fatalf("seed %d: %d texts rendered for %d tied elements", seed, rendered, tied)
		}
	}
}
