package discovery

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchStream generates the 20-field stream of BenchmarkCheck: numeric,
// categorical and temporal fields with planted dependencies, some exact,
// some with noise, some not holding at all.
type benchStream struct {
	r   *rand.Rand
	seq int
	t0  time.Time
}

var benchFields = []string{
	"ts", "seq", "zip", "city", "country", "category", "sub", "level",
	"amount", "rate", "tax", "age", "age_group", "price", "qty", "total",
	"score", "grade", "noise", "flag",
}

func newBenchStream(seed uint64) *benchStream {
	return &benchStream{r: rand.New(rand.NewPCG(seed, 1)), t0: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// row fills vals (len(benchFields)) with the next record.
func (s *benchStream) row(vals []string) {
	r := s.r
	s.seq++
	i := 0
	put := func(v string) { vals[i] = v; i++ }
	// ts: increasing with jitter (temporal), seq: increasing (numeric).
	put(s.t0.Add(time.Duration(s.seq)*time.Second + time.Duration(r.IntN(900))*time.Millisecond).Format(time.RFC3339Nano))
	put(strconv.Itoa(s.seq))
	// zip -> city -> country (exact FDs), 1% of cities wrong for their zip.
	zip := r.IntN(2000)
	city := zip / 10
	if r.IntN(100) == 0 {
		city = r.IntN(200)
	}
	put(strconv.Itoa(10000 + zip))
	put("city" + strconv.Itoa(city))
	put("country" + strconv.Itoa(city/40))
	// category (8) -> sub (40): sub determines category exactly.
	sub := r.IntN(40)
	put("cat" + strconv.Itoa(sub%8))
	put("sub" + strconv.Itoa(sub))
	// level: ordinal 1..5 determined by the category with 3% noise.
	level := sub%8%5 + 1
	if r.IntN(100) < 3 {
		level = 1 + r.IntN(5)
	}
	put(strconv.Itoa(level))
	// amount ~ tax within rate (OC in context rate), 2% noise.
	amount := r.IntN(100000)
	rate := 5 * (1 + sub%4)
	tax := amount * rate / 100
	if r.IntN(50) == 0 {
		tax = r.IntN(25000)
	}
	put(strconv.FormatFloat(float64(amount)/100, 'f', 2, 64))
	put(strconv.Itoa(rate))
	put(strconv.FormatFloat(float64(tax)/100, 'f', 2, 64))
	// age ~ age_group (OC and FD), exact.
	age := 18 + r.IntN(70)
	put(strconv.Itoa(age))
	put("g" + strconv.Itoa(age/10))
	// price, qty, total = price*qty: total ~ price within qty.
	price := 1 + r.IntN(500)
	qty := 1 + r.IntN(10)
	put(strconv.Itoa(price))
	put(strconv.Itoa(qty))
	put(strconv.Itoa(price * qty))
	// score ~ grade (desc: grade 1 is the best), 1% noise.
	score := r.IntN(1000)
	grade := 10 - score/100
	if r.IntN(100) == 0 {
		grade = 1 + r.IntN(10)
	}
	put(strconv.Itoa(score))
	put(strconv.Itoa(grade))
	// noise: unrelated; flag: a rare boolean.
	put(strconv.FormatFloat(r.NormFloat64(), 'g', 6, 64))
	put(strconv.FormatBool(r.IntN(20) == 0))
}

// benchDeps are the 50 tracked dependencies of BenchmarkCheck: the planted
// ones (holding or nearly), and ones a past window discovered that no
// longer hold.
func benchDeps() []Dependency {
	ofd := func(rhs string, ctx ...string) Dependency {
		return Dependency{Kind: KindOFD, Context: ctx, RHS: rhs}
	}
	oc := func(a, b string, pol Polarity, ctx ...string) Dependency {
		return Dependency{Kind: KindOC, Context: ctx, Left: a, Right: b, Polarity: pol}
	}
	deps := []Dependency{
		ofd("city", "zip"), ofd("country", "zip"), ofd("country", "city"), ofd("category", "sub"),
		ofd("level", "category"), ofd("level", "sub"), ofd("age_group", "age"), ofd("rate", "sub"),
		ofd("grade", "score"), ofd("total", "price", "qty"), ofd("tax", "amount", "rate"),
		ofd("country", "zip", "category"), ofd("city", "zip", "flag"), ofd("level", "category", "flag"),
		ofd("age_group", "age", "flag"), ofd("flag"), ofd("country"), ofd("level"), ofd("grade", "age"),
		ofd("category", "level"), ofd("rate", "category"), ofd("qty", "total"), ofd("sub", "zip"),
		ofd("city", "country", "category"), ofd("grade", "score", "flag"),
		oc("ts", "seq", Asc), oc("seq", "ts", Desc), oc("age", "age_group", Asc), oc("age", "age_group", Asc, "flag"),
		oc("score", "grade", Desc), oc("score", "grade", Desc, "flag"), oc("amount", "tax", Asc, "rate"),
		oc("amount", "tax", Asc, "rate", "flag"), oc("price", "total", Asc, "qty"), oc("qty", "total", Asc, "price"),
		oc("level", "category", Asc), oc("zip", "city", Asc), oc("zip", "country", Asc), oc("city", "country", Asc),
		oc("amount", "tax", Asc), oc("price", "total", Asc), oc("age", "score", Asc), oc("ts", "amount", Asc),
		oc("seq", "grade", Desc, "level"), oc("age", "grade", Asc, "category"), oc("level", "grade", Desc),
		oc("zip", "city", Asc, "country"), oc("amount", "tax", Desc, "sub"), oc("price", "qty", Asc, "category"),
		oc("score", "grade", Desc, "category", "flag"),
	}
	if len(deps) != 50 {
		panic(fmt.Sprintf("benchDeps: %d dependencies", len(deps)))
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
		s := newBenchStream(1)
		w := make([][]string, 0, window)
		for range window {
			row := make([]string, len(benchFields))
			s.row(row)
			w = append(w, row)
		}
		var times []time.Duration
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			for k := 0; k < slide; k++ {
				row := make([]string, len(benchFields))
				s.row(row)
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
	cols := make([]DictColumn, len(benchFields))
	for i, name := range benchFields {
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
		s := newBenchStream(1)
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

// benchFeed hands a benchStream's rows to an Incremental, whose columns
// may stand in another order than benchFields.
type benchFeed struct {
	e         *Incremental
	s         *benchStream
	at        []int // benchFields[i] is column at[i] of e
	row, vals []string
}

func newBenchFeed(e *Incremental, s *benchStream) *benchFeed {
	f := &benchFeed{e: e, s: s, at: make([]int, len(benchFields)),
		row: make([]string, len(benchFields)), vals: make([]string, len(benchFields))}
	for i, name := range benchFields {
		f.at[i] = e.Column(name)
	}
	return f
}

// feed appends k new rows.
func (f *benchFeed) feed(k int) {
	for range k {
		f.s.row(f.row)
		f.append1(f.row)
	}
}

// generate fills rows with new rows without appending them, so that a
// timed slide measures only the engine.
func (f *benchFeed) generate(rows [][]string) {
	for k := range rows {
		f.s.row(f.row)
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
	s := newBenchStream(1)
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
