package state

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

func openTest(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mkRecords(stream string, p int32, from, to int64, seq0 uint64) []Record {
	var out []Record
	for o := from; o < to; o++ {
		out = append(out, Record{Stream: stream, Partition: p, Offset: o, Seq: seq0 + uint64(o-from),
			Time: time.UnixMilli(1_700_000_000_000 + o), Value: []byte(fmt.Sprintf("v-%d-%d", p, o))})
	}
	return out
}

func scanAll(t testing.TB, s *Store, stream string) []Record {
	t.Helper()
	var out []Record
	err := s.ScanWindow(context.Background(), stream, func(r Record) error {
		r.Value = append([]byte(nil), r.Value...)
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatalf("ScanWindow: %v", err)
	}
	return out
}

// key is a record's identity for comparisons.
type key struct {
	p int32
	o int64
}

func keysOf(rs []Record) []key {
	out := make([]key, len(rs))
	for i, r := range rs {
		out[i] = key{r.Partition, r.Offset}
	}
	return out
}

func mustApply(t testing.TB, s *Store, c *Commit) {
	t.Helper()
	if err := s.Apply(c); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func TestApplyScanPosition(t *testing.T) {
	s := openTest(t, t.TempDir())
	recs := append(mkRecords("s", 1, 0, 5, 0), mkRecords("s", 0, 10, 13, 5)...)
	recs[2].Time = time.Time{} // records without a timestamp survive too
	recs[3].Value = nil
	mustApply(t, s, &Commit{Stream: "s", Records: recs, NextOffset: map[int32]int64{0: 13, 1: 5}, NextSeq: 8})
	// Another stream sharing the store must stay invisible to "s", including
	// one whose name has "s" as a prefix.
	mustApply(t, s, &Commit{Stream: "s2", Records: mkRecords("", 0, 0, 4, 0), NextOffset: map[int32]int64{0: 4}, NextSeq: 4})

	got := scanAll(t, s, "s")
	want := []key{{0, 10}, {0, 11}, {0, 12}, {1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}}
	if !reflect.DeepEqual(keysOf(got), want) {
		t.Fatalf("scan order %v, want %v", keysOf(got), want)
	}
	byKey := map[key]Record{}
	for _, r := range recs {
		byKey[key{r.Partition, r.Offset}] = r
	}
	for _, g := range got {
		w := byKey[key{g.Partition, g.Offset}]
		if g.Stream != "s" || g.Seq != w.Seq || !g.Time.Equal(w.Time) || string(g.Value) != string(w.Value) {
			t.Errorf("record %d/%d = %+v, want %+v", g.Partition, g.Offset, g, w)
		}
	}
	tests := []struct {
		stream string
		next   map[int32]int64
		seq    uint64
		count  int
	}{
		{"s", map[int32]int64{0: 13, 1: 5}, 8, 8},
		{"s2", map[int32]int64{0: 4}, 4, 4},
		{"unknown", map[int32]int64{}, 0, 0},
	}
	for _, tc := range tests {
		next, seq, err := s.Position(tc.stream)
		if err != nil || seq != tc.seq || !reflect.DeepEqual(next, tc.next) {
			t.Errorf("Position(%s) = %v, %d, %v; want %v, %d", tc.stream, next, seq, err, tc.next, tc.seq)
		}
		n, err := s.WindowCount(tc.stream)
		if err != nil || n != tc.count {
			t.Errorf("WindowCount(%s) = %d, %v; want %d", tc.stream, n, err, tc.count)
		}
	}
	// A later commit naming only partition 1 keeps partition 0's position.
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 1, 5, 6, 8), NextOffset: map[int32]int64{1: 6}, NextSeq: 9})
	next, seq, err := s.Position("s")
	if err != nil || seq != 9 || !reflect.DeepEqual(next, map[int32]int64{0: 13, 1: 6}) {
		t.Fatalf("Position after partial commit = %v, %d, %v", next, seq, err)
	}
	// ForgetPositions deletes the stored positions first (of this stream
	// only), then writes the commit's own.
	for _, tc := range []struct {
		name string
		next map[int32]int64
	}{
		{"none written", map[int32]int64{}},
		{"one written", map[int32]int64{1: 7}},
	} {
		mustApply(t, s, &Commit{Stream: "s", NextOffset: map[int32]int64{0: 13, 1: 6}, NextSeq: 9})
		mustApply(t, s, &Commit{Stream: "s", NextOffset: tc.next, NextSeq: 9, ForgetPositions: true})
		if next, seq, err := s.Position("s"); err != nil || seq != 9 || !reflect.DeepEqual(next, tc.next) {
			t.Errorf("%s: Position after ForgetPositions = %v, %d, %v; want %v, 9", tc.name, next, seq, err, tc.next)
		}
	}
	if next, _, err := s.Position("s2"); err != nil || !reflect.DeepEqual(next, map[int32]int64{0: 4}) {
		t.Errorf("Position(s2) after s forgot its positions = %v, %v", next, err)
	}
}

func TestRedeliveryOverwrites(t *testing.T) {
	s := openTest(t, t.TempDir())
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 10, 0), NextOffset: map[int32]int64{0: 10}, NextSeq: 10})
	// Kafka redelivers offsets 5..14 after a crash before its commit; the
	// stream assigns them new sequence numbers.
	redo := mkRecords("s", 0, 5, 15, 100)
	mustApply(t, s, &Commit{Stream: "s", Records: redo, NextOffset: map[int32]int64{0: 15}, NextSeq: 110})
	// The same record twice in one commit also counts once.
	mustApply(t, s, &Commit{Stream: "s", Records: append(mkRecords("s", 0, 15, 16, 110), mkRecords("s", 0, 15, 16, 111)...),
		NextOffset: map[int32]int64{0: 16}, NextSeq: 112})
	got := scanAll(t, s, "s")
	if len(got) != 16 {
		t.Fatalf("window holds %d records, want 16 (no double count)", len(got))
	}
	if got[5].Seq != 100 || got[15].Seq != 111 {
		t.Fatalf("redelivered records keep old seq: %d, %d", got[5].Seq, got[15].Seq)
	}
	if n, _ := s.WindowCount("s"); n != 16 {
		t.Fatalf("WindowCount = %d", n)
	}
}

func TestEviction(t *testing.T) {
	tests := []struct {
		name  string
		evict map[int32]int64
		want  map[int32][2]int64 // per partition: [first, end) offsets kept
	}{
		{"none", nil, map[int32][2]int64{0: {0, 20}, 1: {0, 20}}},
		{"one partition", map[int32]int64{0: 12}, map[int32][2]int64{0: {12, 20}, 1: {0, 20}}},
		{"both", map[int32]int64{0: 5, 1: 19}, map[int32][2]int64{0: {5, 20}, 1: {19, 20}}},
		// Evicting past the records of this very commit removes them too.
		{"all", map[int32]int64{0: 100, 1: 20}, map[int32][2]int64{}},
		{"zero and unknown partition are no-ops", map[int32]int64{0: 0, 7: 50}, map[int32][2]int64{0: {0, 20}, 1: {0, 20}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, t.TempDir())
			mustApply(t, s, &Commit{Stream: "s", Records: append(mkRecords("s", 0, 0, 10, 0), mkRecords("s", 1, 0, 10, 10)...), NextSeq: 20})
			mustApply(t, s, &Commit{Stream: "s", Records: append(mkRecords("s", 0, 10, 20, 20), mkRecords("s", 1, 10, 20, 30)...),
				NextSeq: 40, EvictBelow: tc.evict})
			var want []key
			for _, p := range []int32{0, 1} {
				if r, ok := tc.want[p]; ok {
					for o := r[0]; o < r[1]; o++ {
						want = append(want, key{p, o})
					}
				}
			}
			if got := keysOf(scanAll(t, s, "s")); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("window %v, want %v", got, want)
			}
			if n, _ := s.WindowCount("s"); n != len(want) {
				t.Fatalf("WindowCount = %d, want %d", n, len(want))
			}
		})
	}
}

func TestReopenResumes(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 50, 0), NextOffset: map[int32]int64{0: 50}, NextSeq: 50, EvictBelow: map[int32]int64{0: 10}})
	if err := s.SaveEvaluation(&Evaluation{Stream: "s", WindowEnd: 49, TrackerState: []byte(`{"k":1}`),
		Events: []OutboxEvent{{"a", []byte("A")}, {"b", []byte("B")}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDelivered("s", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	before := scanAll(t, s, "s")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Apply(&Commit{Stream: "s"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close = %v, want ErrClosed", err)
	}

	s = openTest(t, dir)
	if after := scanAll(t, s, "s"); !reflect.DeepEqual(after, before) || len(after) != 40 {
		t.Fatalf("window after reopen: %d records, differs=%v", len(after), !reflect.DeepEqual(after, before))
	}
	next, seq, err := s.Position("s")
	if err != nil || seq != 50 || next[0] != 50 {
		t.Fatalf("Position = %v %d %v", next, seq, err)
	}
	st, we, err := s.LoadTracker("s")
	if err != nil || we != 49 || string(st) != `{"k":1}` {
		t.Fatalf("LoadTracker = %q %d %v", st, we, err)
	}
	pend, err := s.PendingEvents("s")
	if err != nil || len(pend) != 1 || pend[0].ID != "b" || string(pend[0].Payload) != "B" {
		t.Fatalf("PendingEvents = %+v %v", pend, err)
	}
	if ok, err := s.Delivered("s", "a"); err != nil || !ok {
		t.Fatalf("Delivered(a) = %v %v", ok, err)
	}
}

func TestOutbox(t *testing.T) {
	s := openTest(t, t.TempDir())
	save := func(windowEnd uint64, ids ...string) {
		t.Helper()
		var evs []OutboxEvent
		for _, id := range ids {
			evs = append(evs, OutboxEvent{ID: id, Payload: []byte("payload-" + id)})
		}
		if err := s.SaveEvaluation(&Evaluation{Stream: "s", WindowEnd: windowEnd, TrackerState: []byte("t"), Events: evs}); err != nil {
			t.Fatalf("SaveEvaluation: %v", err)
		}
	}
	pending := func() []string {
		t.Helper()
		evs, err := s.PendingEvents("s")
		if err != nil {
			t.Fatalf("PendingEvents: %v", err)
		}
		ids := []string{}
		for _, e := range evs {
			if string(e.Payload) != "payload-"+e.ID {
				t.Fatalf("payload of %s = %q", e.ID, e.Payload)
			}
			ids = append(ids, e.ID)
		}
		return ids
	}
	if st, we, err := s.LoadTracker("s"); st != nil || we != 0 || err != nil {
		t.Fatalf("LoadTracker of fresh store = %q %d %v", st, we, err)
	}
	steps := []struct {
		name    string
		do      func()
		pending []string
	}{
		{"save keeps order", func() { save(10, "z", "a", "m") }, []string{"z", "a", "m"}},
		{"duplicate id in one save counts once", func() { save(11, "q", "q") }, []string{"z", "a", "m", "q"}},
		{"re-save of pending id is a no-op", func() { save(12, "a", "n") }, []string{"z", "a", "m", "q", "n"}},
		{"mark delivered", func() {
			if err := s.MarkDelivered("s", []string{"a", "q", "never-saved"}); err != nil {
				t.Fatal(err)
			}
		}, []string{"z", "m", "n"}},
		{"re-save of delivered id stays delivered", func() { save(13, "a", "q", "b") }, []string{"z", "m", "n", "b"}},
		{"deliver all, then new events sort after", func() {
			if err := s.MarkDelivered("s", []string{"z", "m", "n", "b"}); err != nil {
				t.Fatal(err)
			}
			save(14, "c", "d")
		}, []string{"c", "d"}},
	}
	for _, st := range steps {
		st.do()
		if got := pending(); !reflect.DeepEqual(got, st.pending) {
			t.Fatalf("%s: pending %v, want %v", st.name, got, st.pending)
		}
	}
	for id, want := range map[string]bool{"a": true, "q": true, "never-saved": true, "c": false, "zz": false} {
		if got, err := s.Delivered("s", id); err != nil || got != want {
			t.Errorf("Delivered(%s) = %v %v, want %v", id, got, err, want)
		}
	}
	if got, _ := s.Delivered("other", "a"); got {
		t.Errorf("delivered marker leaked to another stream")
	}
	if _, we, _ := s.LoadTracker("s"); we != 14 {
		t.Errorf("tracker window end %d, want 14", we)
	}
	// Pruning markers older than now+1h forgets them; pruning older than an
	// hour ago keeps them.
	if err := s.PruneDelivered("s", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Delivered("s", "a"); !ok {
		t.Errorf("recent marker pruned")
	}
	if err := s.PruneDelivered("s", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Delivered("s", "a"); ok {
		t.Errorf("old marker kept")
	}
}

// TestDropLegacyHistory: the per-dependency history older versions wrote
// (h/ keys) is deleted for one stream, leaving other streams' keys and
// other kinds alone; with none, nothing is written.
func TestDropLegacyHistory(t *testing.T) {
	s := openTest(t, t.TempDir())
	if err := s.SaveEvaluation(&Evaluation{Stream: "s", WindowEnd: 9, TrackerState: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	legacy := func(stream, dep string, end uint64) []byte {
		k := append(streamPrefix(pfxHistory, stream), dep...)
		return binary.BigEndian.AppendUint64(append(k, 0), end)
	}
	for _, k := range [][]byte{legacy("s", "a", 1), legacy("s", "a:b", 2), legacy("s2", "a", 1)} {
		if err := s.db.Set(k, make([]byte, 16), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	count := func(stream string) int {
		t.Helper()
		lower := streamPrefix(pfxHistory, stream)
		n := 0
		if err := s.scanPrefix(context.Background(), lower, prefixEnd(lower), func(k, v []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.DropLegacyHistory("s"); err != nil {
		t.Fatal(err)
	}
	if got, other := count("s"), count("s2"); got != 0 || other != 1 {
		t.Fatalf("after the drop: %d legacy keys of s (want 0), %d of s2 (want 1)", got, other)
	}
	if _, end, err := s.LoadTracker("s"); err != nil || end != 9 {
		t.Fatalf("tracker after the drop: end %d, %v", end, err)
	}
	if err := s.DropLegacyHistory("s"); err != nil { // none left: nothing written
		t.Fatal(err)
	}
}

func TestInvalidArguments(t *testing.T) {
	s := openTest(t, t.TempDir())
	tests := []struct {
		name string
		err  error
	}{
		{"empty stream", s.Apply(&Commit{})},
		{"NUL in stream", s.Apply(&Commit{Stream: "a\x00b"})},
		{"negative offset", s.Apply(&Commit{Stream: "s", Records: []Record{{Offset: -1}}})},
		{"negative partition", s.Apply(&Commit{Stream: "s", Records: []Record{{Partition: -1}}})},
		{"foreign record", s.Apply(&Commit{Stream: "s", Records: []Record{{Stream: "t"}}})},
		{"negative next offset", s.Apply(&Commit{Stream: "s", NextOffset: map[int32]int64{0: -5}})},
		{"empty event id", s.SaveEvaluation(&Evaluation{Stream: "s", Events: []OutboxEvent{{}}})},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, tc.err)
		}
	}
	// A rejected commit wrote nothing.
	if n, _ := s.WindowCount("s"); n != 0 {
		t.Fatalf("rejected commits left %d records", n)
	}
	if _, seq, _ := s.Position("s"); seq != 0 {
		t.Fatalf("rejected commit moved next seq to %d", seq)
	}
}

func TestScanStops(t *testing.T) {
	s := openTest(t, t.TempDir())
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 3000, 0), NextSeq: 3000})
	stop := errors.New("stop")
	n := 0
	err := s.ScanWindow(context.Background(), "s", func(Record) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Fatalf("scan stopped with %v after %d", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ScanWindow(ctx, "s", func(Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("scan with cancelled ctx = %v", err)
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(f string, a ...any) {
	panic(fmt.Sprintf(f, a...))
}

// dirSnapshot maps every file of dir to a hash of its content.
func dirSnapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

func glob1(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("glob %s: %v %v", pattern, m, err)
	}
	return m[0]
}

func TestOpenFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   error
	}{
		{"truncated MANIFEST", func(t *testing.T, dir string) {
			m := glob1(t, dir, "MANIFEST-*")
			fi, _ := os.Stat(m)
			if err := os.Truncate(m, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"overwritten MANIFEST", func(t *testing.T, dir string) {
			if err := os.WriteFile(glob1(t, dir, "MANIFEST-*"), []byte(strings.Repeat("garbage!", 16)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"MANIFEST marker names a missing manifest", func(t *testing.T, dir string) {
			m := glob1(t, dir, "marker.manifest.*")
			if err := os.Rename(m, filepath.Join(dir, "marker.manifest.000001.MANIFEST-000077")); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"write-ahead log destroyed", func(t *testing.T, dir string) {
			w := glob1(t, dir, "*.log")
			if err := os.WriteFile(w, make([]byte, 64), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"unknown pebble format", func(t *testing.T, dir string) {
			m := glob1(t, dir, "marker.format-version.*")
			if err := os.Rename(m, filepath.Join(dir, "marker.format-version.000099.999")); err != nil {
				t.Fatal(err)
			}
		}, ErrVersion},
		{"other schema version", func(t *testing.T, dir string) {
			db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Set(keySchema, []byte("2"), pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}, ErrVersion},
		{"data without schema key", func(t *testing.T, dir string) {
			db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Delete(keySchema, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}, ErrVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 10, 0), NextSeq: 10})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			before := dirSnapshot(t, dir)
			s, err = Open(dir, Options{})
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open of damaged store succeeded")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the path %s", err, dir)
			}
			after := dirSnapshot(t, dir)
			for name, h := range before {
				if after[name] != h {
					t.Errorf("file %s was removed or changed by the failed Open", name)
				}
			}
			// A second attempt fails the same way: nothing was "repaired".
			if _, err2 := Open(dir, Options{}); !errors.Is(err2, tc.want) {
				t.Fatalf("second Open = %v", err2)
			}
		})
	}
}

// TestOpenAfterCrashDuringCreation: a store whose first Open a crash (kill
// -9) interrupted opens as a fresh one, wherever the crash fell: before
// Pebble wrote anything, after it created its files, or after the schema
// key was written but before the write-ahead log mark. The same empty store
// without a mark file (an older build's, or one whose log was lost) is
// still refused.
func TestOpenAfterCrashDuringCreation(t *testing.T) {
	pebbleOpts := func() *pebble.Options {
		return &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}}
	}
	// created stands for the crash after Pebble created its files, with
	// the schema key written or not.
	created := func(schema bool) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			db, err := pebble.Open(dir, pebbleOpts())
			if err != nil {
				t.Fatal(err)
			}
			if schema {
				if err := db.Set(keySchema, []byte(SchemaVersion), pebble.Sync); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		begun bool // beginCreation ran (this build's Open)
		crash func(t *testing.T, dir string)
		want  error
	}{
		{"before Pebble's files", true, func(*testing.T, string) {}, nil},
		{"after Pebble's files", true, created(false), nil},
		{"after the schema key", true, created(true), nil},
		{"no mark file", false, created(false), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.begun {
				if err := beginCreation(dir); err != nil {
					t.Fatal(err)
				}
			}
			tc.crash(t, dir)
			s, err := Open(dir, Options{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 3, 0), NextOffset: map[int32]int64{0: 3}, NextSeq: 3})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openTest(t, dir)
			if next, seq, err := s.Position("s"); err != nil || seq != 3 || next[0] != 3 {
				t.Errorf("Position after reopening = %v, %d, %v; want map[0:3], 3", next, seq, err)
			}
		})
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v, want ErrLocked naming %s", err, dir)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Once closed, the lock is released.
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	_ = s2.Close()
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	dir := t.TempDir()
	s, err := Open(dir, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, &Commit{Stream: "s", Records: mkRecords("s", 0, 0, 10, 0), NextSeq: 10})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, name := range []string{"odwatch_pebble_disk_usage_bytes", "odwatch_pebble_l0_files", "odwatch_pebble_l0_sublevels",
		"odwatch_pebble_read_amplification", "odwatch_pebble_memtable_size_bytes", "odwatch_pebble_compactions_total",
		"odwatch_pebble_flushes_total", "odwatch_pebble_block_cache_size_bytes", "odwatch_pebble_block_cache_hits_total",
		"odwatch_pebble_block_cache_misses_total", "odwatch_state_commit_duration_seconds"} {
		if !got[name] {
			t.Errorf("metric %s not exported", name)
		}
	}
	// A second store on the same registry is refused (and leaves no lock).
	if _, err := Open(t.TempDir(), Options{Registerer: reg}); err == nil {
		t.Errorf("second store on one registry registered twice")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close unregisters, so a reopen in the same process registers again.
	s, err = Open(dir, Options{Registerer: reg})
	if err != nil {
		t.Fatalf("reopen with the same registry: %v", err)
	}
	_ = s.Close()
}

// TestApplyNoSyncWait: a commit applied without waiting is readable at
// once, durable after wait (kept across a reopen), and one applied after it
// in the same way follows it; an invalid commit applies nothing.
func TestApplyNoSyncWait(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	wait1, err := s.ApplyNoSyncWait(&Commit{Stream: "s", Records: mkRecords("s", 0, 0, 3, 0), NextOffset: map[int32]int64{0: 3}, NextSeq: 3})
	if err != nil {
		t.Fatal(err)
	}
	wait2, err := s.ApplyNoSyncWait(&Commit{Stream: "s", Records: mkRecords("s", 0, 3, 5, 3), NextOffset: map[int32]int64{0: 5}, NextSeq: 5,
		EvictBelow: map[int32]int64{0: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(scanAll(t, s, "s")); !reflect.DeepEqual(got, []key{{0, 1}, {0, 2}, {0, 3}, {0, 4}}) {
		t.Errorf("before the waits: %v", got)
	}
	if _, err := s.ApplyNoSyncWait(&Commit{Stream: "s", Records: []Record{{Partition: -1}}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid commit: %v, want ErrInvalid", err)
	}
	if err := wait2(); err != nil {
		t.Fatal(err)
	}
	if err := wait1(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	next, seq, err := s.Position("s")
	if err != nil || next[0] != 5 || seq != 5 {
		t.Errorf("after a reopen: position %v %d %v, want 0:5 and 5", next, seq, err)
	}
	if got := keysOf(scanAll(t, s, "s")); !reflect.DeepEqual(got, []key{{0, 1}, {0, 2}, {0, 3}, {0, 4}}) {
		t.Errorf("after a reopen: %v", got)
	}
}
