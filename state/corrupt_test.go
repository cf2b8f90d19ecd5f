package state

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/internal/testkit"
)

// buildStore makes a store in dir whose records are in an sstable (a flush
// of the first commit) and in the write-ahead log (a second commit), and
// closes it.
func buildStore(t *testing.T, dir string) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 3000, 0), NextSeq: 3000, NextOffset: map[int32]int64{0: 3000}})
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 3000, 3100, 3000), NextSeq: 3100, NextOffset: map[int32]int64{0: 3100}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// closeAndReopen closes s, which must succeed after what happened to it,
// and checks that the store at dir opens again.
func closeAndReopen(t *testing.T, s *Store, dir, after string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close after %s: %v", after, err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	_ = s2.Close()
}

// checkCorruptError checks the error of a damaged store: ErrCorrupt, one
// line, naming the directory.
func checkCorruptError(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error = %v, want ErrCorrupt", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, dir) {
		t.Fatalf("error %q is not one line naming %s", msg, dir)
	}
}

// TestOpenDamagedFiles: damage to an sstable or a missing file of a store
// that holds data is found by Open (the read-only vetting reads every
// block), reported as ErrCorrupt in one line naming the directory, and
// leaves the files as they were.
func TestOpenDamagedFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"64 zeroed bytes in an sstable", func(t *testing.T, dir string) { testkit.ZeroBytes(t, glob1(t, dir, "*.sst"), 64, 3) }},
		{"truncated sstable", func(t *testing.T, dir string) {
			f := glob1(t, dir, "*.sst")
			fi, _ := os.Stat(f)
			if err := os.Truncate(f, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing sstable", func(t *testing.T, dir string) {
			if err := os.Remove(glob1(t, dir, "*.sst")); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing MANIFEST", func(t *testing.T, dir string) {
			if err := os.Remove(glob1(t, dir, "MANIFEST-*")); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated write-ahead log", func(t *testing.T, dir string) {
			f := currentLog(t, dir)
			fi, _ := os.Stat(f)
			if err := os.Truncate(f, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"write-ahead log cut inside its last commit", func(t *testing.T, dir string) {
			// The log grows past the mark at Close (an end-of-log
			// trailer), which holds nothing synced.
			b, err := os.ReadFile(filepath.Join(dir, walMarkName))
			if err != nil {
				t.Fatal(err)
			}
			name, size, ok := decodeWALMark(b)
			if !ok {
				t.Fatal("no valid mark")
			}
			if err := os.Truncate(filepath.Join(dir, name), size-1); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing write-ahead log", func(t *testing.T, dir string) {
			if err := os.Remove(currentLog(t, dir)); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing manifest marker", func(t *testing.T, dir string) {
			if err := os.Remove(glob1(t, dir, "marker.manifest.*")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			buildStore(t, dir)
			tc.damage(t, dir)
			before := dirSnapshot(t, dir)
			_, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			checkCorruptError(t, err, dir)
			after := dirSnapshot(t, dir)
			for name, h := range before {
				if after[name] != h {
					t.Errorf("file %s was removed or changed by the failed Open", name)
				}
			}
			// The lock was released: the directory can be set aside and a
			// fresh store opened in its place.
			if _, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("second Open = %v", err)
			}
		})
	}
}

// TestCorruptionFoundByRead: a block damaged after Open is found by the
// read that meets it; the store returns ErrCorrupt from then on (Failed
// closes), without a panic, and Close still releases the lock.
func TestCorruptionFoundByRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	buildStore(t, dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Reopen once so that the write-ahead log is flushed to sstables and
	// no compaction is pending when the damage is done below.
	s, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A cache too small to keep the blocks the vetting read, so the scan
	// reads a damaged one from disk.
	s, err = Open(dir, Options{Logger: quiet, CacheSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no sstables: %v", err)
	}
	for _, f := range ssts {
		testkit.ZeroBytes(t, f, 64, 3)
	}
	err = s.ScanWindow(context.Background(), "s", func(Record) error { return nil })
	checkCorruptError(t, err, dir)
	select {
	case <-s.Failed():
	default:
		t.Fatal("Failed not closed after a corrupt read")
	}
	if !errors.Is(s.Err(), ErrCorrupt) {
		t.Fatalf("Err = %v", s.Err())
	}
	err = s.Apply(&Commit{Stream: "s", Records: mkRecords("s", 0, 3100, 3101, 3100), NextSeq: 3101})
	checkCorruptError(t, err, dir)
	if err := s.Close(); err != nil {
		t.Fatalf("Close after corruption: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = Open(dir, Options{Logger: quiet})
	checkCorruptError(t, err, dir)
}

// TestFatalfIsAnError: Pebble's Fatalf (an invariant violation, a failed
// WAL write) does not panic; the store fails with ErrFailed, every method
// (a write that Pebble let through included) returns it, and Close works.
func TestFatalfIsAnError(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 10, 0), NextSeq: 10})
	lg := pebbleLogger{log: slog.New(slog.NewTextHandler(io.Discard, nil)), dir: dir, fail: s.fail}
	lg.Fatalf("pebble: fatal commit error: %v", errors.New("disk on fire"))
	lg.Fatalf("a second fatal condition is not recorded")
	if err := s.Apply(&Commit{Stream: "s", NextSeq: 11}); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Apply after Fatalf = %v", err)
	}
	if _, _, err := s.Position("s"); !errors.Is(err, ErrFailed) {
		t.Fatalf("Position after Fatalf = %v", err)
	}
	closeAndReopen(t, s, dir, "Fatalf")
}

// currentLog returns the highest-numbered write-ahead log of dir.
func currentLog(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	best, bestNum := "", uint64(0)
	for _, e := range ents {
		if n, ok := logNumber(e.Name()); ok && (best == "" || n > bestNum) {
			best, bestNum = e.Name(), n
		}
	}
	if best == "" {
		t.Fatalf("no write-ahead log in %s", dir)
	}
	return filepath.Join(dir, best)
}

// TestWALMark: a mark torn by a crash (bad checksum) or absent (a store of
// an older build) does not refuse the store; a log rotated away with a
// newer one present is not reported missing.
func TestWALMark(t *testing.T) {
	t.Parallel()
	if name, size, ok := decodeWALMark(encodeWALMark("000012.log", 4096)); !ok || name != "000012.log" || size != 4096 {
		t.Fatalf("round trip = %q %d %v", name, size, ok)
	}
	torn := encodeWALMark("000012.log", 4096)
	torn[3] ^= 1
	if _, _, ok := decodeWALMark(torn); ok {
		t.Fatal("a torn mark decoded")
	}
	for _, tc := range []struct {
		name string
		mark func(t *testing.T, dir string)
	}{
		{"torn mark", func(t *testing.T, dir string) {
			b := encodeWALMark(filepath.Base(currentLog(t, dir)), 1<<40)
			b[len(b)-1] ^= 1
			if err := os.WriteFile(filepath.Join(dir, walMarkName), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"no mark", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, walMarkName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"log rotated away", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, walMarkName), encodeWALMark("000001.log", 1<<40), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			buildStore(t, dir)
			tc.mark(t, dir)
			s := openTest(t, dir)
			if recs := scanAll(t, s, "s"); len(recs) != 3100 {
				t.Fatalf("store holds %d records, want 3100", len(recs))
			}
		})
	}
}

// TestScanPanicClosesIterator: a callback that panics does not leave an
// iterator open, so Close still succeeds and releases the lock.
func TestScanPanicClosesIterator(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 10, 0), NextSeq: 10})
	func() {
		defer func() { _ = recover() }()
		_ = s.ScanWindow(context.Background(), "s", func(Record) error { panic("callback bug") })
	}()
	closeAndReopen(t, s, dir, "a panicking scan")
}
