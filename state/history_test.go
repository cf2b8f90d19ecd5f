package state

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestHistoryRings: each rule keeps the observations of its last ruleRing
// appends and the stream its last eventRing events, oldest first, across a
// reopen; a replayed window end is skipped; a dropped rule loses its ring;
// streams do not see each other's history.
func TestHistoryRings(t *testing.T) {
	const ruleRing, eventRing, appends = 5, 3, 12
	dir := t.TempDir()
	s := openTest(t, dir)
	for i := range appends {
		end := uint64(100 * (i + 1))
		h := &HistoryAppend{Stream: "s", WindowEnd: end, RuleRing: ruleRing, EventRing: eventRing,
			Rules: []RulePoint{{DependencyID: "a", WindowEnd: end, Time: time.Unix(int64(i), 0), Error: float64(i) / 100, Removals: i, Records: 1000, Violated: i%2 == 1}}}
		if i%3 == 0 { // b is observed in every third window only
			h.Rules = append(h.Rules, RulePoint{DependencyID: "b", WindowEnd: end, Error: 0.5})
		}
		h.Events = [][]byte{[]byte(fmt.Sprintf("e%d", i))}
		ok, err := s.AppendHistory(h)
		if err != nil || !ok {
			t.Fatalf("append %d: %v, %v", i, ok, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	defer s.Close()

	a, err := s.RuleHistory("s", "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != ruleRing {
		t.Fatalf("rule a: %d points, want %d", len(a), ruleRing)
	}
	for j, p := range a {
		i := appends - ruleRing + j
		want := RulePoint{DependencyID: "a", WindowEnd: uint64(100 * (i + 1)), Time: time.Unix(int64(i), 0), Error: float64(i) / 100, Removals: i, Records: 1000, Violated: i%2 == 1}
		if p != want {
			t.Errorf("rule a point %d = %+v, want %+v", j, p, want)
		}
	}
	b, err := s.RuleHistory("s", "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > ruleRing || len(b) == 0 || b[len(b)-1].WindowEnd != 1000 {
		t.Errorf("rule b: %+v, want at most %d points ending at window 1000", b, ruleRing)
	}
	ev, err := s.EventHistory("s")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s", ev); got != "[e9 e10 e11]" {
		t.Errorf("events = %s, want [e9 e10 e11]", got)
	}

	// A replay of an appended window changes nothing.
	ok, err := s.AppendHistory(&HistoryAppend{Stream: "s", WindowEnd: 1200, RuleRing: ruleRing, EventRing: eventRing,
		Rules: []RulePoint{{DependencyID: "a", WindowEnd: 1200, Error: 9}}, Events: [][]byte{[]byte("dup")}})
	if err != nil || ok {
		t.Fatalf("replayed append: %v, %v; want skipped", ok, err)
	}
	if a2, _ := s.RuleHistory("s", "a"); a2[len(a2)-1].Error == 9 {
		t.Error("a replayed window overwrote the history")
	}
	// More events of the last window (Again) are added, its rules left;
	// of an earlier window, skipped.
	for _, end := range []uint64{1100, 1200} {
		ok, err = s.AppendHistory(&HistoryAppend{Stream: "s", WindowEnd: end, RuleRing: ruleRing, EventRing: eventRing, Again: true,
			Rules: []RulePoint{{DependencyID: "a", WindowEnd: end, Error: 9}}, Events: [][]byte{[]byte(fmt.Sprintf("again%d", end))}})
		if err != nil || ok != (end == 1200) {
			t.Fatalf("append again at %d: %v, %v; want it only at the last window end", end, ok, err)
		}
	}
	if ev, _ := s.EventHistory("s"); fmt.Sprintf("%s", ev) != "[e10 e11 again1200]" {
		t.Errorf("events after again = %s, want [e10 e11 again1200]", ev)
	}
	if a2, _ := s.RuleHistory("s", "a"); len(a2) != ruleRing || a2[len(a2)-1].Error == 9 {
		t.Errorf("an append again changed the rules' history: %+v", a2)
	}

	// Dropping a rule deletes its ring, and only its.
	if _, err := s.AppendHistory(&HistoryAppend{Stream: "s", WindowEnd: 1300, RuleRing: ruleRing, EventRing: eventRing, Drop: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.RuleHistory("s", "b"); len(b) != 0 {
		t.Errorf("dropped rule b still has %d points", len(b))
	}
	if a, _ := s.RuleHistory("s", "a"); len(a) != ruleRing {
		t.Errorf("rule a has %d points after dropping b, want %d", len(a), ruleRing)
	}
	if o, _ := s.RuleHistory("other", "a"); len(o) != 0 {
		t.Errorf("stream other sees %d points of stream s", len(o))
	}
	if e, _ := s.EventHistory("other"); len(e) != 0 {
		t.Errorf("stream other sees %d events of stream s", len(e))
	}
}

func TestHistoryInvalid(t *testing.T) {
	s := openTest(t, t.TempDir())
	for name, h := range map[string]*HistoryAppend{
		"zero ring":   {Stream: "s", RuleRing: 0, EventRing: 1},
		"NUL in rule": {Stream: "s", RuleRing: 1, EventRing: 1, Rules: []RulePoint{{DependencyID: "x\x00"}}},
		"NUL in drop": {Stream: "s", RuleRing: 1, EventRing: 1, Drop: []string{"x\x00"}},
		"no stream":   {RuleRing: 1, EventRing: 1},
	} {
		if _, err := s.AppendHistory(h); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RuleHistory("s", "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("RuleHistory after Close: %v, want ErrClosed", err)
	}
}
