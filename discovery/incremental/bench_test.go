package incremental

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/benchstream"
	"github.com/odwatch/odwatch/internal/testkit"
)

// benchDeps are the 50 tracked dependencies of BenchmarkCheck
// (benchstream.Rules).
func benchDeps() []discovery.Dependency {
	deps := make([]discovery.Dependency, len(benchstream.Rules))
	for i, r := range benchstream.Rules {
		d, err := discovery.ParseDependency(r)
		if err != nil {
			panic(fmt.Sprintf("benchDeps: %s: %v", r, err))
		}
		deps[i] = d
	}
	return deps
}

// benchCuts are the cuts of a stream at eps 0.05, margin 0.01.
func benchCuts(n int) []int {
	return []int{discovery.RemovalBudget(0.04, n), discovery.RemovalBudget(0.05, n), discovery.RemovalBudget(0.06, n)}
}

// streamCuts are the cuts a stream at eps 0.01 with the automatic margin
// gives a window of n records (stream's removalCuts with AutoMargin:
// alerts.NoiseMargin, 3 standard errors of a proportion at eps, about
// 0.000944 at n = 100k): the stream's default.
func streamCuts(n int) []int {
	const eps = 0.01
	m := 3 * math.Sqrt(eps*(1-eps)/float64(n))
	f := float64(n)
	return []int{int(math.Floor((eps + m) * f)), int(math.Floor((eps - m) * f)), int(math.Floor(eps * f))}
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
// against a full re-validation (encode the window, ValidateAll). The
// incremental engine is measured with the cuts of eps 0.05 (benchCuts) and
// with the stream's default, eps 0.01 (streamCuts: narrower, so fewer OCs
// skip).
func BenchmarkCheck(b *testing.B) {
	const window, slide = 100_000, 1_000
	deps := benchDeps()
	b.Run("incremental", func(b *testing.B) { benchIncremental(b, window, slide, false, benchCuts) })
	b.Run("incremental-eps0.01", func(b *testing.B) { benchIncremental(b, window, slide, false, streamCuts) })
	// No skipping: every touched class recounted.
	b.Run("incremental-exact", func(b *testing.B) { benchIncremental(b, window, slide, true, benchCuts) })
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
			tab, err := table.Encode(cols)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := discovery.ValidateAll(ctx, tab, deps, discovery.Options{}); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	})
}

// dictColumns is the window as a snapshot hands it over.
func dictColumns(rows [][]string) []table.DictColumn {
	cols := make([]table.DictColumn, len(benchstream.Fields))
	for i, name := range benchstream.Fields {
		idx := map[string]uint32{}
		dc := table.DictColumn{Name: name, Codes: make([]uint32, len(rows))}
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

// BenchmarkCheckFlush times the first step of BenchmarkCheck's check
// alone: flush, which interns the slide's values and applies the 1k rows
// that left and the 1k that arrived to the nodes, FDs and OCs (the rest of
// the check runs untimed). It reports the median and minimum of the
// slides, less disturbed than a mean by other work on the machine.
func BenchmarkCheckFlush(b *testing.B) {
	const window, slide = 100_000, 1_000
	e, f := benchWindow(b, window, benchDeps(), Options{}, streamCuts)
	rows := newBenchRows(slide)
	var times []time.Duration
	for b.Loop() {
		b.StopTimer()
		f.generate(slide, rows)
		e.Evict(slide)
		f.append(rows)
		b.StartTimer()
		start := time.Now()
		e.flush()
		times = append(times, time.Since(start))
		b.StopTimer()
		e.Check(streamCuts(window))
		b.StartTimer()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(times[0].Microseconds())/1000, "min-ms")
}

// benchWindow returns an Engine with opts tracking deps (of
// BenchmarkCheck's 50, benchDeps), filled with a window of the stream's
// first rows and checked once at cuts, with the feed that fills it.
func benchWindow(b *testing.B, window int, deps []discovery.Dependency, opts Options, cuts func(n int) []int) (*Engine, *benchFeed) {
	e, err := New(deps, opts)
	if err != nil {
		b.Fatal(err)
	}
	f := newBenchFeed(e, benchstream.New(1))
	f.feed(window)
	e.Check(cuts(window))
	return e, f
}

// BenchmarkCheckMemory1M fills an Engine with a 1M-record window of
// the BenchmarkCheck stream and 50 dependencies, and reports the heap it
// holds (values included; not the feed's window dictionaries) and the time of a 1k-record slide's check (mean
// and p99 over 20 checks). Run it with -benchtime=1x.
func BenchmarkCheckMemory1M(b *testing.B) {
	const window, slide = 1_000_000, 1_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e, f := benchWindow(b, window, benchDeps(), Options{}, benchCuts)
		var times []time.Duration
		rows := newBenchRows(slide)
		for range 20 {
			times = append(times, f.timedSlide(slide, rows, benchCuts(window)))
		}
		f = nil // the window's dictionaries are the caller's, not the engine's
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(e)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
		b.ReportMetric(float64(mean(times).Microseconds())/1000, "check-ms")
		b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkCheckMemory1MSteady is BenchmarkCheckMemory1M run for 600
// checks of 1k-record slides, past the checks after which every OC has
// reached its stale limit once (its backlog at its largest), at the
// stream's default cuts (eps 0.01): it reports the largest heap held,
// measured after a GC every 50 checks, less what the feed alone holds at
// the end (its window dictionaries: the caller's, not the engine's). It
// takes minutes; run it with -benchtime=1x.
func BenchmarkCheckMemory1MSteady(b *testing.B) {
	const window, slide, checks, every = 1_000_000, 1_000, 600, 50
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		e, f := benchWindow(b, window, benchDeps(), Options{}, streamCuts)
		rows := newBenchRows(slide)
		peak := 0.0
		var times []time.Duration
		for i := range checks {
			times = append(times, f.timedSlide(slide, rows, streamCuts(window)))
			if (i+1)%every == 0 {
				runtime.GC()
				runtime.ReadMemStats(&after)
				peak = max(peak, float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
			}
		}
		runtime.KeepAlive(e)
		f.e, e = nil, nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		feed := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
		runtime.KeepAlive(f)
		b.ReportMetric(peak-feed, "peak-heap-MB")
		b.ReportMetric(float64(mean(times).Microseconds())/1000, "check-ms")
		b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	}
}

// benchFeed hands a benchstream.Stream's rows to an Engine
// dictionary-coded (AppendCoded), as the monitor's checker does: it keeps
// the window's rows coded per column as window.Window does (incDict:
// codes freed when their last row leaves, reused for the next new value),
// untimed, so that a timed slide measures only the engine. The engine's
// columns may stand in another order than benchstream.Fields.
type benchFeed struct {
	e     *Engine
	s     *benchstream.Stream
	at    []int // benchstream.Fields[i] is column at[i] of e
	row   []string
	dicts []incDict
	// held[i][head:] are the codes of column i's rows in the window,
	// oldest first.
	held  [][]uint32
	head  int
	vals  []string
	codes []uint32
}

// benchRows are rows coded by benchFeed.generate: codes[k][i] is the code
// of field i in row k, vals[k][i] its dictionary string.
type benchRows struct {
	vals  [][]string
	codes [][]uint32
}

func newBenchRows(k int) benchRows {
	r := benchRows{vals: make([][]string, k), codes: make([][]uint32, k)}
	for i := range k {
		r.vals[i] = make([]string, len(benchstream.Fields))
		r.codes[i] = make([]uint32, len(benchstream.Fields))
	}
	return r
}

func newBenchFeed(e *Engine, s *benchstream.Stream) *benchFeed {
	n := len(benchstream.Fields)
	f := &benchFeed{e: e, s: s, at: make([]int, n), row: make([]string, n),
		dicts: make([]incDict, n), held: make([][]uint32, n), vals: make([]string, n), codes: make([]uint32, n)}
	for i, name := range benchstream.Fields {
		f.at[i] = e.Column(name)
		f.dicts[i] = newIncDict()
	}
	return f
}

// feed appends k new rows.
func (f *benchFeed) feed(k int) {
	rows := newBenchRows(1)
	for range k {
		f.code(rows, 0)
		f.append1(rows.vals[0], rows.codes[0])
	}
}

// generate makes the rows of a slide in the window's dictionaries without
// appending them: the slide's oldest rows leave the window first (their
// codes may be reused by the new rows, while the engine still holds the
// old rows until its check).
func (f *benchFeed) generate(evict int, rows benchRows) {
	for i := range f.dicts {
		for _, code := range f.held[i][f.head : f.head+evict] {
			f.dicts[i].release(code)
		}
	}
	f.head += evict
	if f.head > len(f.held[0])/2 {
		for i := range f.held {
			f.held[i] = append(f.held[i][:0], f.held[i][f.head:]...)
		}
		f.head = 0
	}
	for k := range rows.vals {
		f.code(rows, k)
	}
}

// code draws the next row into rows[k], coded.
func (f *benchFeed) code(rows benchRows, k int) {
	f.s.Row(f.row, false)
	for i, v := range f.row {
		code, v := f.dicts[i].intern(v)
		rows.codes[k][i], rows.vals[k][i] = code, v
		f.held[i] = append(f.held[i], code)
	}
}

// timedSlide generates the next slide rows (untimed), then evicts as many
// rows from the engine, appends them and checks at cuts, and returns the
// time of those three steps.
func (f *benchFeed) timedSlide(slide int, rows benchRows, cuts []int) time.Duration {
	f.generate(slide, rows)
	start := time.Now()
	f.e.Evict(slide)
	f.append(rows)
	f.e.Check(cuts)
	return time.Since(start)
}

// append appends rows made by generate.
func (f *benchFeed) append(rows benchRows) {
	for k := range rows.vals {
		f.append1(rows.vals[k], rows.codes[k])
	}
}

func (f *benchFeed) append1(vals []string, codes []uint32) {
	for i := range vals {
		f.vals[f.at[i]], f.codes[f.at[i]] = vals[i], codes[i]
	}
	f.e.AppendCoded(f.vals, f.codes)
}

// benchIncremental is one BenchmarkCheck run of the incremental engine.
// Besides the wall time's p99 (ns/op is its mean) it reports the mean and
// p99 of each check's CPU time (user + system, both goroutines): a check
// on a loaded machine waits for a core, which CPU time does not count;
// and the mean and p99 of the rows each check's recounts read, which
// load does not change at all.
func benchIncremental(b *testing.B, window, slide int, exact bool, cuts func(n int) []int) {
	e, f := benchWindow(b, window, benchDeps(), Options{Exact: exact}, cuts)
	var times, cpu []time.Duration
	var recounted []int
	skipped := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		rows := newBenchRows(slide)
		f.generate(slide, rows)
		b.StartTimer()
		start, startCPU := time.Now(), testkit.CPUTime(b)
		e.Evict(slide)
		f.append(rows)
		res := e.Check(cuts(e.Len()))
		times = append(times, time.Since(start))
		cpu = append(cpu, testkit.CPUTime(b)-startCPU)
		recounted = append(recounted, e.recounted)
		for _, r := range res {
			if !r.Exact {
				skipped++
			}
		}
	}
	b.ReportMetric(float64(p99(times).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(mean(cpu).Microseconds())/1000, "cpu-ms")
	b.ReportMetric(float64(p99(cpu).Microseconds())/1000, "cpu-p99-ms")
	b.ReportMetric(float64(skipped)/float64(len(times)), "skipped/check")
	slices.Sort(recounted)
	sum := 0
	for _, r := range recounted {
		sum += r
	}
	b.ReportMetric(float64(sum)/float64(len(recounted)), "recount-rows")
	b.ReportMetric(float64(recounted[min(len(recounted)-1, int(math.Ceil(0.99*float64(len(recounted))))-1)]), "recount-rows-p99")
}

// BenchmarkLNDS measures ocCheck.lnds on one sorted class of 100k rows
// (ascending polarity), with few values of A (long runs: galloping) and
// with nearly every value distinct (a search of all the tails a row).
func BenchmarkLNDS(b *testing.B) {
	for _, c := range []struct {
		name     string
		distinct int
	}{{"fewA", 100}, {"manyA", 100_000}} {
		r := rand.New(rand.NewPCG(1, 2))
		const n = 100_000
		ps := make([]ocPair, n)
		for i := range ps {
			a := r.Uint64N(uint64(c.distinct))
			ps[i] = ocPair{LA: a, LB: a*3 + r.Uint64N(n/2)}
		}
		sortPairs(ps)
		la, lb := make([]uint64, n), make([]uint64, n)
		for i, p := range ps {
			la[i], lb[i] = p.LA, p.LB
		}
		o, w := &ocCheck{asc: true}, &recountScratch{}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				o.lnds(w, la, lb, false)
			}
		})
	}
}
