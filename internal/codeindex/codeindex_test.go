package codeindex

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestIndexMatchesMap drives the hash index with random inserts and
// removals (including long probe runs from a tiny hash space) and checks
// every lookup, by string and by bytes, against a Go map. Removals go by
// value (Remove) or by the hash kept since the insert (RemoveHashed).
func TestIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := New()
	var dict []string
	var free, hashes []uint32
	want := map[string]uint32{}
	for step := range 200_000 {
		v := strconv.Itoa(rng.IntN(3000))
		code, h := x.Lookup(dict, v)
		if bcode, bh := x.LookupBytes(dict, []byte(v)); bcode != code || bh != h {
			t.Fatalf("step %d: LookupBytes %q = %d, %d; Lookup = %d, %d", step, v, bcode, bh, code, h)
		}
		x.Touch(h) // changes nothing
		if hh := x.HashBytes([]byte(v)); hh != h {
			t.Fatalf("step %d: HashBytes %q = %d, Lookup's hash %d", step, v, hh, h)
		}
		if hcode := x.LookupHashed(h, func(c uint32) bool { return dict[c-1] == v }); hcode != code {
			t.Fatalf("step %d: LookupHashed %q = %d; Lookup = %d", step, v, hcode, code)
		}
		if code != want[v] {
			t.Fatalf("step %d: lookup %q = %d, want %d", step, v, code, want[v])
		}
		if code == 0 {
			if k := len(free); k > 0 {
				code = free[k-1]
				free = free[:k-1]
				dict[code-1], hashes[code-1] = v, h
			} else {
				dict = append(dict, v)
				hashes = append(hashes, h)
				code = uint32(len(dict))
			}
			x.Insert(code, h)
			want[v] = code
		} else if rng.IntN(2) == 0 {
			if rng.IntN(2) == 0 {
				x.Remove(code, v)
			} else {
				x.RemoveHashed(code, hashes[code-1])
			}
			x.Remove(code, v)                    // no longer present: ignored
			x.RemoveHashed(code, hashes[code-1]) // likewise
			dict[code-1] = ""
			free = append(free, code)
			delete(want, v)
		}
		if x.Len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, x.Len(), len(want))
		}
	}
	for v, code := range want {
		if got, _ := x.LookupBytes(dict, []byte(v)); got != code {
			t.Fatalf("final lookup %q = %d, want %d", v, got, code)
		}
	}
}

// Touch and TouchAt only start loads: they change nothing and accept an
// empty index.
func TestTouch(t *testing.T) {
	x := New()
	x.Touch(7) // no slots yet
	dict := []string{"a", "b"}
	for i, v := range dict {
		_, h := x.Lookup(dict[:i], v)
		x.Insert(uint32(i+1), h)
	}
	for _, v := range dict {
		_, h := x.Lookup(dict, v)
		x.Touch(h)
		TouchAt(&dict[0])
	}
	for i, v := range dict {
		if code, _ := x.Lookup(dict, v); code != uint32(i+1) {
			t.Fatalf("%q: code %d after Touch, want %d", v, code, i+1)
		}
	}
}
