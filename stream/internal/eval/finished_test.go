package eval

import (
	"slices"
	"testing"
)

// TestFinishedList: the due discovery is the newest at or before the
// check, older due ones superseded; an overdue one (an early one on its
// own window) is handed out once.
func TestFinishedList(t *testing.T) {
	l := FinishedList{{EndSeq: 999, MergeAt: 1099}, {EndSeq: 1199, MergeAt: 1299}, {EndSeq: 1099, MergeAt: 1199}}
	if !l.Has(1199) || l.Has(1299) {
		t.Fatal("Has")
	}
	if p := l.Pending(); len(p) != 3 || p[0].EndSeq != 999 || p[2].EndSeq != 1199 {
		t.Fatalf("pending %+v, want oldest window first", p)
	}
	if f := l.Overdue(1099); f == nil || f.EndSeq != 999 || !f.Found {
		t.Fatalf("overdue at 1099: %+v, want 999", f)
	}
	if f := l.Overdue(1099); f != nil {
		t.Fatalf("overdue at 1099 again: %+v, want none (handed out)", f)
	}
	if f := l.Overdue(1299); f == nil || f.EndSeq != 1199 {
		t.Fatalf("overdue at 1299: %+v, want the newest, 1199", f)
	}
	early := FinishedList{{EndSeq: 1999, MergeAt: 2099, Early: true}, {EndSeq: 2099, MergeAt: 2199}}
	if f := early.Overdue(1999); f == nil || f.EndSeq != 1999 {
		t.Fatalf("early overdue at its own window 1999: %+v, want 1999", f)
	}
	if f := early.Overdue(2099); f != nil {
		t.Fatalf("overdue at 2099: %+v, want none (2099 not early, 1999 handed out)", f)
	}
	due, superseded, ok := l.Due(1199)
	if !ok || due.EndSeq != 1099 || !slices.Equal(superseded, []uint64{999}) || len(l) != 1 || l[0].EndSeq != 1199 {
		t.Fatalf("due at 1199: %+v %v %v, left %+v", due, superseded, ok, l)
	}
	if _, _, ok := l.Due(1200); ok {
		t.Fatal("due at 1200: want none")
	}
}
