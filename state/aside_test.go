package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSetAside: the store directory is renamed to a sibling named after
// the time, every file kept, and a fresh store opens in its place; a second
// set-aside at the same second takes the next free name.
func TestSetAside(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	buildStore(t, dir)
	before := dirSnapshot(t, dir)
	now := time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)
	aside, err := SetAside(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := dir + ".damaged-20261130T081500Z"; aside != want {
		t.Fatalf("set aside to %s, want %s", aside, want)
	}
	if after := dirSnapshot(t, aside); len(after) != len(before) {
		t.Fatalf("set-aside copy has %d files, the store had %d", len(after), len(before))
	} else {
		for name, h := range before {
			if after[name] != h {
				t.Errorf("file %s changed or lost when set aside", name)
			}
		}
	}
	s := openTest(t, dir)
	if n, _, err := s.Position("s"); err != nil || len(n) != 0 {
		t.Fatalf("fresh store position = %v, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	aside2, err := SetAside(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if aside2 != aside+".1" {
		t.Fatalf("second set-aside to %s, want %s.1", aside2, aside)
	}
}

// TestSetAsideInside covers a store directory that cannot be renamed (a
// mounted volume): its entries move into a damaged-<time> subdirectory,
// earlier ones stay where they are, and Open then starts a fresh store.
func TestSetAsideInside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir)
	before := dirSnapshot(t, dir)
	sub, err := moveInside(dir, "damaged-1")
	if err != nil {
		t.Fatal(err)
	}
	if after := dirSnapshot(t, sub); len(after) != len(before) {
		t.Fatalf("moved %d files, the store had %d", len(after), len(before))
	}
	s := openTest(t, dir)
	if n, _, err := s.Position("s"); err != nil || len(n) != 0 {
		t.Fatalf("fresh store position = %v, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sub2, err := moveInside(dir, "damaged-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sub2, "damaged-1")); err == nil {
		t.Fatalf("an earlier set-aside store was moved into the new one")
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "damaged-1,damaged-2" {
		t.Fatalf("store dir holds %v after two set-asides", names)
	}
}
