package state

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/odwatch/odwatch/internal/testkit"
)

// fifoRecords is the FIFO churn of TestWindowChurnBounded: a window of
// fifoWindow records of about 200 bytes, fifoBatch records a commit, with
// fifoMemTable-byte memtables, so that a short run flushes and compacts
// many times over.
const (
	fifoRecords  = 200_000
	fifoWindow   = 5_000
	fifoBatch    = 500
	fifoMemTable = 1 << 20
)

// storeFiles returns the bytes of the store's sstables and of all its files.
func storeFiles(t testing.TB, dir string) (tables, all int64) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile by Pebble
		}
		all += info.Size()
		if strings.HasSuffix(e.Name(), ".sst") {
			tables += info.Size()
		}
	}
	return tables, all
}

// TestWindowChurnBounded: a window sliding over many times its size (the
// window is a FIFO: records written with increasing offsets, evicted
// oldest first by range deletion) keeps the store's size on disk bounded
// by the window, not by what went through it; and the window holds exactly
// its records.
func TestWindowChurnBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var log testkit.SyncBuffer
	s, err := Open(dir, Options{memTableSize: fifoMemTable,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := make([]Record, fifoBatch)
	c := &Commit{Stream: "fifo", Records: recs, NextOffset: map[int32]int64{}, EvictBelow: map[int32]int64{}}
	var maxTables, maxAll int64
	var windowBytes int64
	for next := int64(0); next < fifoRecords; {
		for i := range recs {
			off := next + int64(i)
			recs[i].Offset, recs[i].Seq = off, uint64(off)
			recs[i].Time = time.UnixMilli(1_700_000_000_000 + off)
			recs[i].Value = fmt.Appendf(recs[i].Value[:0], `{"id":%d,"name":"n%07d","group":"g%d","amount":%d.%02d,"note":"%0120d"}`,
				off, off*7919%1_000_003, off%13, off*31%100_000, off%100, off*104729)
			if off < fifoWindow {
				windowBytes += int64(len(recs[i].Value))
			}
		}
		next += fifoBatch
		c.NextOffset[0], c.NextSeq = next, uint64(next)
		c.EvictBelow[0] = next - fifoWindow
		if err := s.Apply(c); err != nil {
			t.Fatal(err)
		}
		if next%(20*fifoBatch) == 0 {
			tables, all := storeFiles(t, dir)
			maxTables, maxAll = max(maxTables, tables), max(maxAll, all)
		}
	}
	if n, err := s.WindowCount("fifo"); err != nil || n != fifoWindow {
		t.Fatalf("window holds %d records (%v), want %d", n, err, fifoWindow)
	}
	m := s.db.Metrics()
	t.Logf("%d records through a %d-record window (%d KiB): %d flushes, %d compactions; at most %d KiB of tables, %d KiB in all",
		fifoRecords, fifoWindow, windowBytes>>10, m.Flush.Count, m.Compact.Count, maxTables>>10, maxAll>>10)
	if m.Flush.Count < 10 {
		t.Fatalf("only %d flushes: the run does not churn the store", m.Flush.Count)
	}
	if got := log.String(); !strings.Contains(got, "flushed 1 memtable") || !strings.Contains(got, "compacted(") {
		t.Errorf("flushes and compactions not logged at debug level; log:\n%.2000s", got)
	}
	// What went through is 40 windows; the tables hold the window, the
	// memtables' worth flushed since the last compaction, and deletions.
	if limit := 8*windowBytes + 8*fifoMemTable; maxTables > limit {
		t.Errorf("tables reached %d KiB, want at most %d KiB (window %d KiB)", maxTables>>10, limit>>10, windowBytes>>10)
	}
}

// TestOpenCompressedTables: a store whose tables an older build wrote
// compressed (Pebble's default, Snappy) opens and reads back, and its
// tables are rewritten by later compactions.
func TestOpenCompressedTables(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	if err := b.Set(keySchema, []byte(SchemaVersion), nil); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < 1000; off++ {
		r := Record{Offset: off, Seq: uint64(off), Value: []byte(strings.Repeat(fmt.Sprintf("value %d ", off), 8))}
		if err := b.Set(appendWindowKey(nil, "old", 0, off), appendRecordValue(nil, &r), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := db.Metrics().String(); !strings.Contains(got, "snappy") {
		t.Fatalf("the old store's tables are not compressed:\n%s", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openTest(t, dir)
	if n, err := s.WindowCount("old"); err != nil || n != 1000 {
		t.Fatalf("window holds %d records (%v), want 1000", n, err)
	}
	if err := s.Apply(&Commit{Stream: "old", NextOffset: map[int32]int64{0: 1000}, NextSeq: 1000, EvictBelow: map[int32]int64{0: 500}}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(t.Context(), []byte("a"), []byte("z"), true); err != nil {
		t.Fatal(err)
	}
	var seen int
	err = s.ScanWindow(t.Context(), "old", func(r Record) error {
		if want := strings.Repeat(fmt.Sprintf("value %d ", r.Offset), 8); string(r.Value) != want {
			return fmt.Errorf("record %d: %q", r.Offset, r.Value)
		}
		seen++
		return nil
	})
	if err != nil || seen != 500 {
		t.Fatalf("scan: %d records, %v; want 500", seen, err)
	}
	if got := s.db.Metrics().String(); strings.Contains(got, "snappy") {
		t.Errorf("tables still compressed after a full compaction:\n%s", got)
	}
}
