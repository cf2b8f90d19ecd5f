package state

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func openTest(t *testing.T, dir string) *Store {
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

func scanAll(t *testing.T, s *Store, stream string) []Record {
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

func TestRoundTrip(t *testing.T) {
	s := openTest(t, t.TempDir())
	recs := append(mkRecords("s", 1, 0, 5, 0), mkRecords("s", 0, 10, 13, 5)...)
	if err := s.Apply(&Commit{Stream: "s", Records: recs, NextOffset: map[int32]int64{0: 13, 1: 5}, NextSeq: 8}); err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, s, "s")
	if len(got) != 8 {
		t.Fatalf("got %d records", len(got))
	}
	if got[0].Partition != 0 || got[0].Offset != 10 || got[0].Seq != 5 || string(got[0].Value) != "v-0-10" || !got[0].Time.Equal(recs[5].Time) {
		t.Fatalf("first record %+v", got[0])
	}
	next, seq, err := s.Position("s")
	if err != nil || seq != 8 || next[0] != 13 || next[1] != 5 {
		t.Fatalf("Position = %v %d %v", next, seq, err)
	}
}
