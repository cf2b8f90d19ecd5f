package discovery

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/benchstream"
)

// benchDeps are the 50 tracked dependencies of BenchmarkCheck
// (benchstream.Rules).
func benchDeps() []Dependency {
	deps := make([]Dependency, len(benchstream.Rules))
	for i, r := range benchstream.Rules {
		d, err := ParseDependency(r)
		if err != nil {
			panic(fmt.Sprintf("benchDeps: %s: %v", r, err))
		}
		deps[i] = d
	}
	return deps
}

// benchCuts are the cuts of a stream at eps 0.05, margin 0.01.
func benchCuts(n int) []int {
	return []int{RemovalBudget(0.04, n), RemovalBudget(0.05, n), RemovalBudget(0.06, n)}
}

func mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(math.Ceil(0.99*float64(len(s))))-1)]
}

// BenchmarkCheck measures one check of 50 tracked dependencies after the
// window (100k records, 20 fields) slid by 1k: the incremental engine
// against a full re-validation (encode the window, ValidateAll).
func BenchmarkCheck(b *testing.B) {
	const window, slide = 100_000, 1_000
	deps := benchDeps()
	for _, exact := range []bool{false, true} {
		name := "incremental"
		if exact {
			name = "incremental-exact" // no skipping: every touched class recounted
		}
		b.Run(name, func(b *testing.B) { benchIncremental(b, deps, window, slide, exact) })
	}
	b.Run("full", func(b *testing.B) {
		s := benchstream.New(1)
		w := make([][]string, 0, window)
		for range window {
			row := make([]string, len(benchstream.Fields))
			s.Row(row, false)
			w = append(w, row)
		}
		var times []time.Duration
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			for k := 0; k < slide; k++ {
				row := make([]string, len(benchstream.Fields))
				s.Row(row, false)
				w = append(w, row)
			}
			w = w[slide:]
			cols := dictColumns(w)
			b.StartTimer()
			start := time.Now()
			tab, err := Encode(cols)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ValidateAll(ctx, tab, deps, Options{}); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	})
}

// dictColumns is the window as a snapshot hands it over.
func dictColumns(rows [][]string) []DictColumn {
	cols := make([]DictColumn, len(benchstream.Fields))
	for i, name := range benchstream.Fields {
		idx := map[string]uint32{}
		dc := DictColumn{Name: name, Codes: make([]uint32, len(rows))}
		for r, row := range rows {
			code, ok := idx[row[i]]
			if !ok {
				dc.Dict = append(dc.Dict, row[i])
				code = uint32(len(dc.Dict))
				idx[row[i]] = code
			}
			dc.Codes[r] = code
		}
		cols[i] = dc
	}
	return cols
}

// BenchmarkCheckMemory1M fills an Incremental with a 1M-record window of
// the BenchmarkCheck stream and 50 dependencies, and reports the heap it
// holds (values included) and the time of a 1k-record slide's check (mean
// and p99 over 20 checks). Run it with -benchtime=1x.
func BenchmarkCheckMemory1M(b *testing.B) {
	const window, slide = 1_000_000, 1_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := benchstream.New(1)
		e, err := NewIncremental(benchDeps(), IncrementalOptions{})
		if err != nil {
			b.Fatal(err)
		}
		f := newBenchFeed(e, s)
		f.feed(window)
		e.Check(benchCuts(window))
		var times []time.Duration
		rows := make([][]string, slide)
		for range 20 {
			f.generate(rows)
			start := time.Now()
			e.Evict(slide)
			f.append(rows)
			e.Check(benchCuts(window))
			times = append(times, time.Since(start))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(e)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
		b.ReportMetric(float64(mean(times).Microseconds())/1000, "check-ms")
		b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	}
}

// benchFeed hands a benchstream.Stream's rows to an Incremental, whose columns
// may stand in another order than benchstream.Fields.
type benchFeed struct {
	e         *Incremental
	s         *benchstream.Stream
	at        []int // benchstream.Fields[i] is column at[i] of e
	row, vals []string
}

func newBenchFeed(e *Incremental, s *benchstream.Stream) *benchFeed {
	f := &benchFeed{e: e, s: s, at: make([]int, len(benchstream.Fields)),
		row: make([]string, len(benchstream.Fields)), vals: make([]string, len(benchstream.Fields))}
	for i, name := range benchstream.Fields {
		f.at[i] = e.Column(name)
	}
	return f
}

// feed appends k new rows.
func (f *benchFeed) feed(k int) {
	for range k {
		f.s.Row(f.row, false)
		f.append1(f.row)
	}
}

// generate fills rows with new rows without appending them, so that a
// timed slide measures only the engine.
func (f *benchFeed) generate(rows [][]string) {
	for k := range rows {
		f.s.Row(f.row, false)
		rows[k] = slices.Clone(f.row)
	}
}

// append appends rows made by generate.
func (f *benchFeed) append(rows [][]string) {
	for _, r := range rows {
		f.append1(r)
	}
}

func (f *benchFeed) append1(row []string) {
	for i, v := range row {
		f.vals[f.at[i]] = v
	}
	f.e.Append(f.vals, nil)
}

// benchIncremental is one BenchmarkCheck run of the incremental engine.
func benchIncremental(b *testing.B, deps []Dependency, window, slide int, exact bool) {
	s := benchstream.New(1)
	e, err := NewIncremental(deps, IncrementalOptions{Exact: exact})
	if err != nil {
		b.Fatal(err)
	}
	f := newBenchFeed(e, s)
	f.feed(window)
	e.Check(benchCuts(window))
	var times []time.Duration
	skipped := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		rows := make([][]string, slide)
		f.generate(rows)
		b.StartTimer()
		start := time.Now()
		e.Evict(slide)
		f.append(rows)
		res := e.Check(benchCuts(e.Len()))
		times = append(times, time.Since(start))
		for _, r := range res {
			if !r.Exact {
				skipped++
			}
		}
	}
	b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(skipped)/float64(len(times)), "skipped/check")
}
