package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/benchstream"
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

// The store's write pattern in BenchmarkEndToEnd (issue 9), for
// BenchmarkWindowChurn: records of the 20-field stream in commits of
// churnBatch with the window's eviction, a window of churnWindow records,
// and a check (a tracker save and a status history append of its 50
// rules) every churnEvery records.
const (
	churnWindow = 100_000
	churnBatch  = 500
	churnEvery  = 1000
)

// BenchmarkWindowChurn measures the window's churn through the store: one
// op is one commit of churnBatch records. Pebble flushes and compacts on
// its own goroutines, so their CPU is in a profile, not in ns/op:
//
//	go test ./state -run '^$' -bench BenchmarkWindowChurn -benchtime 3000x -cpuprofile /tmp/churn.prof
//	go tool pprof -top -cum -focus runCompaction state.test /tmp/churn.prof
//
// (runCompaction's cumulative time: flushes and compactions). It reports
// what Pebble flushed and compacted per million records, its compactions
// by kind, and the most the store's directory held (sampled every 100
// commits).
func BenchmarkWindowChurn(b *testing.B) {
	dir := b.TempDir()
	s := openTest(b, dir)
	gen := benchstream.New(1)
	vals := make([]string, len(benchstream.Fields))
	values := make([][]byte, 4096)
	for i := range values {
		gen.Row(vals, false)
		var v []byte
		for j, f := range benchstream.Fields {
			v = append(v, f...)
			v = append(v, ':')
			v = append(v, vals[j]...)
			v = append(v, ',')
		}
		values[i] = v
	}
	rules := make([]RulePoint, len(benchstream.Rules))
	for i, r := range benchstream.Rules {
		rules[i] = RulePoint{DependencyID: r, Records: churnWindow}
	}
	tracker := make([]byte, 6000)
	recs := make([]Record, churnBatch)
	c := &Commit{Stream: "churn", Records: recs, NextOffset: map[int32]int64{}, EvictBelow: map[int32]int64{}}
	var next int64
	var commits int
	var maxDisk int64
	for b.Loop() {
		for i := range recs {
			off := next + int64(i)
			recs[i] = Record{Offset: off, Seq: uint64(off), Time: time.UnixMilli(1_700_000_000_000 + off), Value: values[off%int64(len(values))]}
		}
		next += churnBatch
		c.NextOffset[0], c.NextSeq = next, uint64(next)
		c.EvictBelow[0] = max(0, next-churnWindow)
		if err := s.Apply(c); err != nil {
			b.Fatal(err)
		}
		if next%churnEvery < churnBatch {
			end := uint64(next - 1)
			if err := s.SaveEvaluation(&Evaluation{Stream: "churn", WindowEnd: end, TrackerState: tracker}); err != nil {
				b.Fatal(err)
			}
			for i := range rules {
				rules[i].WindowEnd = end
			}
			if _, err := s.AppendHistory(&HistoryAppend{Stream: "churn", WindowEnd: end, Rules: rules, RuleRing: 240, EventRing: 500}); err != nil {
				b.Fatal(err)
			}
		}
		if commits++; commits%100 == 0 {
			_, all := storeFiles(b, dir)
			maxDisk = max(maxDisk, all)
		}
	}
	m := s.db.Metrics()
	var compacted uint64
	for l := 1; l < len(m.Levels); l++ {
		compacted += m.Levels[l].TableBytesCompacted
	}
	perM := 1e6 / float64(next) / (1 << 20)
	b.ReportMetric(float64(next)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(m.Levels[0].TableBytesFlushed)*perM, "MB-flushed/Mrecords")
	b.ReportMetric(float64(compacted)*perM, "MB-compacted/Mrecords")
	b.ReportMetric(float64(m.Compact.DefaultCount), "rewrites")
	b.ReportMetric(float64(m.Compact.MoveCount), "moves")
	b.ReportMetric(float64(m.Compact.DeleteOnlyCount), "delete-only")
	b.ReportMetric(float64(maxDisk)/(1<<20), "max-disk-MB")
}
