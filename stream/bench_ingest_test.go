package stream

import (
	"context"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/odwatch/odwatch/stream/window"
)

// The consumer side of BenchmarkEndToEnd without Kafka or the store:
// issue 9's 20-field records, a 100k-row window and a check every 1,000
// records. BenchmarkIngest20 measures each step of the consume path per
// record (ns/op is per record): decode alone, window append alone, the
// store's record encoding alone, the check dispatch's work (checkDelta's
// delta and Window.Info) per record, and all of them (all).
const (
	ingestWindow = 100_000
	ingestEvery  = 1_000
	// ingestInputs are the distinct JSON inputs cycled through: more than a
	// window, so that a unique value (ts, seq) is new when it comes again.
	ingestInputs = 1 << 17
)

// ingestInputs20 returns n JSON records of the 20-field stream.
func ingestInputs20(n int) [][]byte {
	gen := newE2EStream(1, 1<<62)
	out := make([][]byte, n)
	for i := range out {
		out[i] = append([]byte(nil), gen.next()...)
	}
	return out
}

// ingestRecords20 decodes the inputs.
func ingestRecords20(b *testing.B, inputs [][]byte) []*decode.FlatRecord {
	d := mustDecoder(b, decode.DecoderConfig{Format: decode.FormatJSON})
	out := make([]*decode.FlatRecord, len(inputs))
	for i, in := range inputs {
		out[i] = &decode.FlatRecord{}
		if err := d.Decode(context.Background(), in, out[i]); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// ingestWindowFull returns a window of ingestWindow rows of recs, with
// record times, and the next offset.
func ingestWindowFull(recs []*decode.FlatRecord) (*window.Window, int64) {
	w := window.NewWindow(ingestWindow, 0)
	off := int64(0)
	for ; off < ingestWindow; off++ {
		w.Append(ingestMeta(off), recs[off%int64(len(recs))])
	}
	return w, off
}

var ingestT0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func ingestMeta(off int64) window.RowMeta {
	return window.RowMeta{Offset: off, Seq: uint64(off), Time: ingestT0.Add(time.Duration(off) * time.Millisecond)}
}

// cpuPerOp reports the process's CPU time per op from start on (as
// cpu-ns/op), which a loaded machine disturbs less than ns/op: time spent
// waiting for a core is not counted.
func cpuPerOp(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(testkit.CPUTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkIngest20(b *testing.B) {
	inputs := ingestInputs20(ingestInputs)
	recs := ingestRecords20(b, inputs)
	ctx := context.Background()
	b.Run("decode", func(b *testing.B) {
		d := mustDecoder(b, decode.DecoderConfig{Format: decode.FormatJSON})
		var rec decode.FlatRecord
		b.ReportAllocs()
		cpu := testkit.CPUTime(b)
		for i := 0; b.Loop(); i++ {
			if err := d.Decode(ctx, inputs[i%ingestInputs], &rec); err != nil {
				b.Fatal(err)
			}
		}
		cpuPerOp(b, cpu)
	})
	b.Run("append", func(b *testing.B) {
		w, off := ingestWindowFull(recs)
		b.ReportAllocs()
		cpu := testkit.CPUTime(b)
		for b.Loop() {
			w.Append(ingestMeta(off), recs[off%ingestInputs])
			off++
		}
		cpuPerOp(b, cpu)
	})
	b.Run("encode", func(b *testing.B) {
		// The store's record encoding (FlatRecord.AppendBinary).
		var arena []byte
		b.ReportAllocs()
		cpu := testkit.CPUTime(b)
		for i := 0; b.Loop(); i++ {
			arena = recs[i%ingestInputs].AppendBinary(arena[:0])
		}
		cpuPerOp(b, cpu)
	})
	b.Run("dispatch", func(b *testing.B) { benchDispatch(b, recs) })
	b.Run("all", func(b *testing.B) {
		d := mustDecoder(b, decode.DecoderConfig{Format: decode.FormatJSON})
		w, off := ingestWindowFull(recs)
		var f eval.Cursor
		_, _ = f.Delta(w, true), w.Info("s", "t", uint64(off-1))
		var rec decode.FlatRecord
		var arena []byte
		b.ReportAllocs()
		cpu := testkit.CPUTime(b)
		for b.Loop() {
			if err := d.Decode(ctx, inputs[off%ingestInputs], &rec); err != nil {
				b.Fatal(err)
			}
			w.Append(ingestMeta(off), &rec)
			arena = rec.AppendBinary(arena[:0])
			off++
			if off%ingestEvery == 0 {
				_, _ = f.Delta(w, false), w.Info("s", "t", uint64(off-1))
			}
		}
		cpuPerOp(b, cpu)
	})
}

// benchDispatch is BenchmarkIngest20/dispatch: one check's delta and
// window description per ingestEvery records appended (the appends are
// not timed).
func benchDispatch(b *testing.B, recs []*decode.FlatRecord) {
	w, off := ingestWindowFull(recs)
	var f eval.Cursor
	_, _ = f.Delta(w, true), w.Info("s", "t", uint64(off-1))
	b.ReportAllocs()
	var cpu time.Duration
	for i := 0; b.Loop(); i++ {
		if i%ingestEvery == 0 {
			b.StopTimer()
			for range ingestEvery {
				w.Append(ingestMeta(off), recs[off%ingestInputs])
				off++
			}
			b.StartTimer()
			start := testkit.CPUTime(b)
			_, _ = f.Delta(w, false), w.Info("s", "t", uint64(off-1))
			cpu += testkit.CPUTime(b) - start
		}
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
