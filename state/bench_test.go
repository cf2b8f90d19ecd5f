package state

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkApply measures synced commits of one fetch: 1000 records of ~80
// bytes each, one partition, with eviction keeping a 100k-record window.
func BenchmarkApply(b *testing.B) {
	const perCommit, window = 1000, 100_000
	s := openTest(b, b.TempDir())
	recs := make([]Record, perCommit)
	for i := range recs {
		recs[i].Value = []byte(fmt.Sprintf("%-80s", fmt.Sprintf(`{"position":"p%d","salary":%d,"tax":%d}`, i%7, i*13, i%17)))
		recs[i].Time = time.UnixMilli(1_700_000_000_000 + int64(i))
	}
	c := &Commit{Stream: "bench", Records: recs, NextOffset: map[int32]int64{0: 0}, EvictBelow: map[int32]int64{0: 0}}
	var next int64
	b.SetBytes(perCommit * 80)
	b.ResetTimer()
	for b.Loop() {
		for i := range recs {
			recs[i].Offset = next + int64(i)
			recs[i].Seq = uint64(next) + uint64(i)
		}
		next += perCommit
		c.NextOffset[0], c.NextSeq = next, uint64(next)
		c.EvictBelow[0] = next - window
		if err := s.Apply(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*perCommit/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkScanWindow measures reading back a 100k-record window (the
// restart path that rebuilds the in-memory mirror).
func BenchmarkScanWindow(b *testing.B) {
	const n = 100_000
	s := openTest(b, b.TempDir())
	for off := int64(0); off < n; off += 1000 {
		c := &Commit{Stream: "bench", NextSeq: uint64(off + 1000)}
		for i := off; i < off+1000; i++ {
			c.Records = append(c.Records, Record{Offset: i, Seq: uint64(i), Time: time.UnixMilli(i),
				Value: []byte(fmt.Sprintf("%-80d", i))})
		}
		if err := s.Apply(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		cnt := 0
		if err := s.ScanWindow(b.Context(), "bench", func(Record) error { cnt++; return nil }); err != nil || cnt != n {
			b.Fatalf("scan: %d, %v", cnt, err)
		}
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "records/s")
}
