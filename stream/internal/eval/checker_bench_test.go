package eval

import (
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/benchstream"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/window"
)

// BenchmarkCheckerSlide measures the check path as the monitor runs it:
// the 20-field stream of the engine's BenchmarkCheck in a window of 100k
// records (its default tuning: ts, seq, noise and the amounts kept
// near-unique), a delta of each 1k-record slide taken from the window
// (Cursor.Delta) and applied to the checker (Apply: the window's codes
// handed to the engine), and a check of the 50 rules at the stream's
// default cuts. It reports each check's CPU time (user + system, mean and
// p99) beside the wall time (ns/op), and the delta and apply alone.
func BenchmarkCheckerSlide(b *testing.B) {
	const size, slide = 100_000, 1_000
	deps := make([]discovery.Dependency, len(benchstream.Rules))
	for i, r := range benchstream.Rules {
		deps[i] = mustDep(b, r)
	}
	s := benchstream.New(1)
	w := window.NewWindow(size, 0)
	vals := make([]string, len(benchstream.Fields))
	var rec decode.FlatRecord
	seq := uint64(0)
	add := func(k int) {
		for range k {
			s.Row(vals, false)
			rec.Reset()
			for i, name := range benchstream.Fields {
				rec.AddString(name, vals[i])
			}
			w.Append(window.RowMeta{Seq: seq, Offset: int64(seq)}, &rec)
			seq++
		}
	}
	cuts := Env{Cfg: &Config{Epsilon: 0.01, Margin: -1}}.removalCuts(size)
	add(size)
	var feed Cursor
	c := &Checker{}
	if !c.Apply(feed.Delta(w, true), false) {
		b.Fatal("the first delta does not fit")
	}
	if err := c.eng.SetDependencies(deps); err != nil {
		b.Fatal(err)
	}
	c.eng.Check(cuts)
	var cpu, apply []time.Duration
	for b.Loop() {
		b.StopTimer()
		add(slide)
		b.StartTimer()
		start := testkit.CPUTime(b)
		if !c.Apply(feed.Delta(w, false), false) {
			b.Fatal("a delta does not fit")
		}
		applied := testkit.CPUTime(b)
		c.eng.Check(cuts)
		cpu, apply = append(cpu, testkit.CPUTime(b)-start), append(apply, applied-start)
	}
	b.ReportMetric(float64(meanDuration(cpu).Microseconds())/1000, "cpu-ms")
	b.ReportMetric(float64(p99Duration(cpu).Microseconds())/1000, "cpu-p99-ms")
	b.ReportMetric(float64(meanDuration(apply).Microseconds())/1000, "apply-cpu-ms")
}

func meanDuration(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(max(len(d), 1))
}

func p99Duration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, (99*len(s)+99)/100-1)]
}
