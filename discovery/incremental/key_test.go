package incremental

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/odwatch/odwatch/discovery"
)

// checkKeys compares KeyRemovals of a few keys drawn with r (one to three
// of the model's columns) with the model's full recomputation, after a
// Check (incRun).
func checkKeys(t testing.TB, e *Engine, m *incModel, r *rand.Rand) {
	t.Helper()
	var keys []discovery.Dependency
	for k := 1 + r.IntN(3); k > 0; k-- {
		perm := r.Perm(len(m.names))
		var set []string
		for _, i := range perm[:1+r.IntN(min(3, len(perm)))] {
			set = append(set, m.names[i])
		}
		keys = append(keys, discovery.Dependency{Kind: discovery.KindKey, Set: set})
	}
	want := m.removals(t, keys)
	for i, d := range keys {
		got, ok := e.KeyRemovals(d.Set)
		if !ok || got != want[i] {
			t.Fatalf("%s on %d rows: KeyRemovals %d (ok %v), full recomputation %d", d, len(m.rows), got, ok, want[i])
		}
	}
}

// TestKeyRemovalsAfterCheckOnly: rows that came or left since the last
// Check, and a column the engine does not have, give no count.
func TestKeyRemovalsAfterCheckOnly(t *testing.T) {
	e, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Column("a")
	for _, v := range []string{"x", "1", "1.0", "2"} {
		e.Append([]string{v}, nil)
	}
	if _, ok := e.KeyRemovals([]string{"a"}); ok {
		t.Fatal("counted before a Check")
	}
	e.Check(nil)
	if got, ok := e.KeyRemovals([]string{"a"}); !ok || got != 0 {
		t.Fatalf("text column: %d removals (ok %v), want 0", got, ok)
	}
	if _, ok := e.KeyRemovals([]string{"a", "b"}); ok {
		t.Fatal("counted a column the engine does not have")
	}
	e.Evict(1)
	if _, ok := e.KeyRemovals([]string{"a"}); ok {
		t.Fatal("counted after an Evict")
	}
	e.Check(nil) // "1", "1.0", "2": numeric now, "1" and "1.0" one value
	if got, ok := e.KeyRemovals([]string{"a"}); !ok || got != 1 {
		t.Fatalf("numeric column: %d removals (ok %v), want 1", got, ok)
	}
}

// checkRing compares Ring, the columns read in place, with DictColumns'
// copy: the same value at every row's slot, and each value's count in
// the window (NULL's too) that of the copy's codes.
func checkRing(t testing.TB, e *Engine) {
	t.Helper()
	cols, slot, counts := e.Ring()
	want := e.DictColumns()
	for i, c := range want {
		got := make([]uint32, len(cols[i].Dict)+1)
		for r, code := range c.Codes {
			ring := cols[i].Codes[slot(r)]
			if (code == 0) != (ring == 0) || code != 0 && c.Dict[code-1] != cols[i].Dict[ring-1] {
				t.Fatalf("column %s row %d: ring code %d, copy code %d", c.Name, r, ring, code)
			}
			got[ring]++
		}
		if !slices.Equal(got, counts[i]) {
			t.Fatalf("column %s: ring counts %v, counted %v", c.Name, counts[i], got)
		}
	}
}
