package dict

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestMayBeNumber checks mayBeNumber's shortcut against ParseFloat: a
// string it rules out never parses.
func TestMayBeNumber(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := "0123456789" + floatLetters + "--++eEpP :TZz/gG,%"
	fixed := []string{"1", "-0", "1e400", "0x1.8p3", "0x_1p0", "+Inf", "infinity", "NaN", ".5", "1_000",
		"2024-01-01", "2024-01-01T10:00:00Z", "", " 1", "1,5", "abc", "1e-5", "1E+5", "0x1p-2", "-Inf", "+1e-0",
		"00000000-71a5-448f-2510-90451bdd5b95", "1-2", "1e5-2"}
	for i := 0; i < 20000; i++ {
		v := ""
		if i < len(fixed) {
			v = fixed[i]
		} else {
			b := make([]byte, 1+r.IntN(8))
			for k := range b {
				b[k] = alphabet[r.IntN(len(alphabet))]
			}
			v = string(b)
		}
		_, err := strconv.ParseFloat(v, 64)
		if parses := err == nil || errors.Is(err, strconv.ErrRange); parses && !mayBeNumber(v) {
			t.Fatalf("%q parses as a number but mayBeNumber rules it out", v)
		}
	}
}

// TestIDSpaceMatchesMap drives an idSpace's open-addressing index through
// random refs and unrefs over a small key range (long probe runs, many
// deletes) against a map.
func TestIDSpaceMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	s := idSpace[uint64]{hash: func(k uint64) uint64 { return k % 7 << 32 }} // collide a lot
	model := map[uint64]uint32{}
	refs := map[uint64]int{}
	for i := 0; i < 50000; i++ {
		k := uint64(r.IntN(200))
		if refs[k] > 0 && r.IntN(2) == 0 {
			s.unref(model[k])
			if refs[k]--; refs[k] == 0 {
				delete(model, k)
			}
			continue
		}
		id := s.ref(k)
		if want, ok := model[k]; ok && id != want {
			t.Fatalf("step %d: key %d has id %d, was %d", i, k, id, want)
		}
		if s.keys[id-1] != k {
			t.Fatalf("step %d: id %d holds key %d, not %d", i, id, s.keys[id-1], k)
		}
		model[k] = id
		refs[k]++
		if s.n != len(model) {
			t.Fatalf("step %d: %d keys indexed, %d live", i, s.n, len(model))
		}
	}
}

// TestU64MapMatchesMap drives the nodes' class index through random puts
// and deletes over a small key range against a map.
func TestU64MapMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var m KeyMap
	model := map[uint64]uint32{}
	for i := 0; i < 50000; i++ {
		k := uint64(r.IntN(300)) << uint(r.IntN(2)*32) // keys like (class<<32 | id)
		if _, ok := model[k]; ok {
			m.Del(k)
			delete(model, k)
		} else {
			v := uint32(r.IntN(1000))
			m.Put(k, v)
			model[k] = v
		}
		if m.n != len(model) {
			t.Fatalf("step %d: %d keys, want %d", i, m.n, len(model))
		}
		if i%97 == 0 {
			for k, v := range model {
				if got, ok := m.Get(k); !ok || got != v {
					t.Fatalf("step %d: key %d: got %d %v, want %d", i, k, got, ok, v)
				}
			}
			if _, ok := m.Get(1 << 63); ok {
				t.Fatalf("step %d: a key never put is found", i)
			}
		}
	}
}

// TestInternCodedRunMatchesOneByOne: a run interned with InternCodedRun
// gives every value the code InternCoded one by one gives it, with caller
// codes hinted, reused for other values, above HintMax, NULL, and values
// given in other strings, releases and settles between runs.
func TestInternCodedRunMatchesOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	tune := DefaultTuning()
	tune.HintMax = 40
	run := NewColumn("x", 64, true, tune)
	one := NewColumn("x", 64, true, tune)
	pool := []string{"1", "1.0", "2", "a", "2024-01-01", "2024-01-01T00:00:00Z", "-3", "1e-2", "x-1", ""}
	callerVals := map[uint32]string{}
	for step := range 200 {
		n := 1 + r.IntN(60)
		const stride = 3
		ks := make([]uint32, n*stride)
		vs := make([]string, n*stride)
		for j := range n {
			k := uint32(r.IntN(50))
			v := pool[r.IntN(len(pool))] + strconv.Itoa(r.IntN(3))
			if old, ok := callerVals[k]; ok && r.IntN(3) > 0 {
				v = old // the caller's own string again: the hint may hit
			}
			callerVals[k] = v
			ks[j*stride], vs[j*stride] = k, v
		}
		first := uint32(r.IntN(64))
		run.InternCodedRun(ks, vs, stride, n, first, 63)
		for j := range n {
			slot := (first + uint32(j)) & 63
			want := uint32(0)
			if k := ks[j*stride]; k != 0 {
				want = one.InternCoded(k, vs[j*stride])
			}
			if got := run.Codes[slot]; got != want {
				t.Fatalf("step %d value %d (%q, caller code %d): code %d, one by one %d", step, j, vs[j*stride], ks[j*stride], got, want)
			}
			one.Codes[slot] = want
		}
		// Release some of the codes and settle, on both alike.
		for slot := range 64 {
			if code := run.Codes[slot]; code != 0 && r.IntN(3) == 0 {
				run.Release(code)
				one.Release(one.Codes[slot])
				run.Codes[slot], one.Codes[slot] = 0, 0
			}
		}
		run.Settle()
		one.Settle()
	}
}
