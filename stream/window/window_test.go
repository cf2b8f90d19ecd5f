package window

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
)

// testField is a field as tests write it.
type testField struct {
	name, value string
	null        bool
}

func rec(fields ...string) *decode.FlatRecord {
	var r decode.FlatRecord
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "<null>" {
			r.Add([]byte(fields[i]), nil, true)
			continue
		}
		r.AddString(fields[i], fields[i+1])
	}
	return &r
}

// snapshotRows renders a snapshot as rows of "col=value" (NULLs omitted) for
// comparisons.
func snapshotRows(s *Snapshot) [][]string {
	out := make([][]string, s.Len())
	for _, c := range s.Columns() {
		for r, code := range c.Codes {
			if code != 0 {
				out[r] = append(out[r], c.Name+"="+c.Dict[code-1])
			}
		}
	}
	return out
}

func columnNames(s *Snapshot) []string {
	var names []string
	for _, c := range s.Columns() {
		names = append(names, c.Name)
	}
	return names
}

func TestWindowCountEviction(t *testing.T) {
	w := NewWindow(3, 0)
	for i := range 5 {
		w.Append(RowMeta{Partition: 0, Offset: int64(i), Seq: uint64(i)}, rec("a", strconv.Itoa(i), "b", "x"))
	}
	if w.Len() != 3 {
		t.Fatalf("len %d", w.Len())
	}
	if m, ok := w.Oldest(); !ok || m.Offset != 2 {
		t.Fatalf("oldest %+v %v", m, ok)
	}
	s := w.Snapshot()
	want := [][]string{{"a=2", "b=x"}, {"a=3", "b=x"}, {"a=4", "b=x"}}
	if got := snapshotRows(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for r := range 3 {
		if s.Meta(r).Offset != int64(r+2) {
			t.Fatalf("meta %d: %+v", r, s.Meta(r))
		}
	}
	if got := w.EvictionBounds(); got[0] != 2 || len(got) != 1 {
		t.Fatalf("bounds %v", got)
	}
}

func TestWindowTimeEviction(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewWindow(0, 10*time.Second)
	for i, sec := range []int{0, 3, 5, 12, 14, 30} {
		w.Append(RowMeta{Offset: int64(i), Time: t0.Add(time.Duration(sec) * time.Second)}, rec("a", strconv.Itoa(sec)))
		var got []string
		for _, r := range snapshotRows(w.Snapshot()) {
			got = append(got, r...)
		}
		t.Logf("after %ds: %v", sec, got)
	}
	// Newest is 30s: everything before 20s is gone.
	if got := snapshotRows(w.Snapshot()); fmt.Sprint(got) != "[[a=30]]" {
		t.Fatalf("got %v", got)
	}
	w.Append(RowMeta{Offset: 6, Time: t0.Add(35 * time.Second)}, rec("a", "35"))
	if w.Len() != 2 {
		t.Fatalf("len %d", w.Len())
	}
	// Count and time together: the tighter bound wins.
	w = NewWindow(2, time.Hour)
	for i := range 5 {
		w.Append(RowMeta{Offset: int64(i), Time: t0.Add(time.Duration(i) * time.Second)}, rec("a", "x"))
	}
	if w.Len() != 2 {
		t.Fatalf("count+time len %d", w.Len())
	}
}

func TestWindowNewColumnsAreNullBefore(t *testing.T) {
	w := NewWindow(10, 0)
	w.Append(RowMeta{Offset: 1}, rec("a", "1"))
	w.Append(RowMeta{Offset: 2}, rec("a", "2", "b", "x"))
	w.Append(RowMeta{Offset: 3}, rec("b", "y", "c", "<null>"))
	s := w.Snapshot()
	if got := columnNames(s); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("columns %v (c is all NULL and must not appear)", got)
	}
	want := [][]string{{"a=1"}, {"a=2", "b=x"}, {"b=y"}}
	if got := snapshotRows(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	v := s.Values(0, []string{"a", "b", "nope"})
	if len(v) != 1 || v["a"] != "1" {
		t.Fatalf("values %v", v)
	}
}

func TestWindowRedeliveryIgnored(t *testing.T) {
	w := NewWindow(10, 0)
	if !w.Append(RowMeta{Partition: 1, Offset: 5}, rec("a", "1")) {
		t.Fatal("first append refused")
	}
	if w.Append(RowMeta{Partition: 1, Offset: 5}, rec("a", "1")) || w.Append(RowMeta{Partition: 1, Offset: 3}, rec("a", "1")) {
		t.Fatal("redelivered offset appended")
	}
	if !w.Append(RowMeta{Partition: 2, Offset: 5}, rec("a", "1")) {
		t.Fatal("other partition refused")
	}
	if w.Len() != 2 {
		t.Fatalf("len %d", w.Len())
	}
	if off, ok := w.LastOffset(1); !ok || off != 5 {
		t.Fatalf("last offset %d %v", off, ok)
	}
}

func TestWindowDuplicateFieldLastWins(t *testing.T) {
	w := NewWindow(2, 0)
	w.Append(RowMeta{Offset: 1}, rec("a", "x", "a", "y"))
	if got := snapshotRows(w.Snapshot()); fmt.Sprint(got) != "[[a=y]]" {
		t.Fatalf("got %v", got)
	}
	w.Append(RowMeta{Offset: 2}, rec("a", "z"))
	w.Append(RowMeta{Offset: 3}, rec("a", "z"))
	if c := w.cols[0]; c.index.Len() != 1 {
		t.Fatalf("dictionary leaked: %v", c.index)
	}
}

func TestWindowSnapshotIsolation(t *testing.T) {
	w := NewWindow(50, 0)
	off := int64(0)
	appendN := func(n int, prefix string) {
		for range n {
			off++
			w.Append(RowMeta{Offset: off}, rec("a", prefix+strconv.Itoa(int(off)%7), "u", prefix+strconv.FormatInt(off, 10)))
		}
	}
	appendN(80, "p")
	s := w.Snapshot()
	before := fmt.Sprint(snapshotRows(s))
	meta0 := s.Meta(0)
	// Evict everything the snapshot holds, with new values reusing freed
	// codes and dictionary slots, while another goroutine reads it.
	done := make(chan string)
	go func() {
		var last string
		for range 20 {
			last = fmt.Sprint(snapshotRows(s))
		}
		done <- last
	}()
	appendN(200, "q")
	if got := <-done; got != before {
		t.Fatal("snapshot changed while the window moved on (concurrent reader)")
	}
	if got := fmt.Sprint(snapshotRows(s)); got != before || s.Meta(0) != meta0 {
		t.Fatal("snapshot changed while the window moved on")
	}
}

func TestWindowDictionaryBounded(t *testing.T) {
	const size = 100
	w := NewWindow(size, 0)
	for i := range 200_000 {
		w.Append(RowMeta{Offset: int64(i)}, rec("id", strconv.Itoa(i), "group", strconv.Itoa(i%10)))
	}
	for _, c := range w.cols {
		if len(c.dict) > size+1 || c.index.Len() > size {
			t.Fatalf("column %s: dict %d, index %d after a long stream of unique values; want <= %d", c.name, len(c.dict), c.index.Len(), size+1)
		}
	}
	// Snapshots squeeze out free codes: every Dict entry is used.
	for _, c := range w.Snapshot().Columns() {
		used := make([]bool, len(c.Dict))
		for _, code := range c.Codes {
			used[code-1] = true
		}
		if slices.Contains(used, false) {
			t.Fatalf("column %s: unused dictionary entries in the snapshot", c.Name)
		}
	}
}

func TestWindowDeadColumnsDropped(t *testing.T) {
	w := NewWindow(10, 0)
	for i := range 1000 {
		// A field name that never repeats: without dropping, 1000 columns.
		w.Append(RowMeta{Offset: int64(i)}, rec("k"+strconv.Itoa(i), "v", "a", "1"))
	}
	if len(w.cols) > 11 || len(w.colIndex) != len(w.cols) {
		t.Fatalf("%d columns for a 10-row window", len(w.cols))
	}
}

func TestWindowMaxColumns(t *testing.T) {
	w := NewWindow(4, 0)
	w.SetMaxColumns(3)
	for i := range 6 {
		// Two stable columns and one whose name never repeats.
		w.Append(RowMeta{Offset: int64(i)}, rec("a", "1", "b", "2", "id"+strconv.Itoa(i), "x"))
	}
	if w.NumColumns() > 3 {
		t.Fatalf("%d columns, bound 3", w.NumColumns())
	}
	if w.DroppedFields() == 0 {
		t.Fatal("no dropped fields counted")
	}
	// Once the columns of evicted rows die, a new column fits again.
	for i := 6; i < 12; i++ {
		w.Append(RowMeta{Offset: int64(i)}, rec("a", "1", "b", "2"))
	}
	w.Append(RowMeta{Offset: 12}, rec("c", "3"))
	if got := columnNames(w.Snapshot()); fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("columns %v", got)
	}
	w.Reset()
	if w.Len() != 0 || w.NumColumns() != 0 || w.maxCols != 3 {
		t.Fatalf("reset: len %d, columns %d, max %d", w.Len(), w.NumColumns(), w.maxCols)
	}
}

// modelWindow is the naive reference: rows of maps.
type modelWindow struct {
	size     int
	interval time.Duration
	rows     []modelRow
	order    []string // columns in first-seen order among live ones
	newest   time.Time
	last     map[int32]int64
}

type modelRow struct {
	meta RowMeta
	vals map[string]string
}

func (m *modelWindow) append(meta RowMeta, fields []testField) bool {
	if last, ok := m.last[meta.Partition]; ok && meta.Offset <= last {
		return false
	}
	m.last[meta.Partition] = meta.Offset
	vals := map[string]string{}
	for _, f := range fields {
		if f.null {
			continue
		}
		vals[f.name] = f.value
	}
	m.rows = append(m.rows, modelRow{meta, vals})
	if m.size > 0 && len(m.rows) > m.size {
		m.rows = m.rows[1:]
	}
	// Column order: live columns keep their order; dead ones leave it.
	// New columns are added in record order.
	for _, f := range fields {
		if !f.null && !slices.Contains(m.order, f.name) {
			m.order = append(m.order, f.name)
		}
	}
	if m.interval > 0 {
		if meta.Time.After(m.newest) {
			m.newest = meta.Time
		}
		cut := m.newest.Add(-m.interval)
		for len(m.rows) > 0 && m.rows[0].meta.Time.Before(cut) {
			m.rows = m.rows[1:]
		}
	}
	m.order = slices.DeleteFunc(m.order, func(name string) bool {
		for _, r := range m.rows {
			if _, ok := r.vals[name]; ok {
				return false
			}
		}
		return true
	})
	return true
}

// testTunings are the near-unique knobs the model tests run with: the
// default (which small windows never reach), every column near-unique
// from its first row, columns switching both ways all the time (to
// near-unique every 5 rows, back at every snapshot) and low bounds.
var testTunings = []struct {
	name string
	t    Tuning
}{
	{"default", DefaultTuning()},
	{"unique", Tuning{UniqueRatio: 0, UniqueMinRows: 1, DictRatio: 0, DecideEvery: 1}},
	{"flip", Tuning{UniqueRatio: 0, UniqueMinRows: 1, DictRatio: 2, DecideEvery: 5}},
	{"low", Tuning{UniqueRatio: 0.5, UniqueMinRows: 8, DictRatio: 0.25, DecideEvery: 16}},
}

func TestWindowMatchesNaiveModel(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, cfg := range []struct {
		size     int
		interval time.Duration
	}{{1, 0}, {7, 0}, {64, 0}, {2000, 0}, {0, 30 * time.Second}, {20, 15 * time.Second}} {
		for _, tu := range testTunings {
			t.Run(fmt.Sprintf("size=%d,interval=%v,%s", cfg.size, cfg.interval, tu.name), func(t *testing.T) {
				t.Parallel()
				matchNaiveModel(t, cfg.size, cfg.interval, tu.t, t0)
			})
		}
	}
}

// matchNaiveModel is one run of TestWindowMatchesNaiveModel.
func matchNaiveModel(t *testing.T, size int, interval time.Duration, tune Tuning, t0 time.Time) {
	rng := rand.New(rand.NewPCG(uint64(size), 1))
	w := NewWindow(size, interval)
	w.SetTuning(tune)
	w.timeBlock = 3 // TimeRange's blocks: partial ones at both ends and at the ring's end
	m := &modelWindow{size: size, interval: interval, last: map[int32]int64{}}
	offsets := map[int32]int64{}
	names := []string{"a", "b", "c", "d.e", "f", "rare", "s"}
	for step := range 3000 {
		p := int32(rng.IntN(3))
		off := offsets[p] + 1
		if rng.IntN(20) == 0 {
			off -= int64(rng.IntN(3)) // redelivery
		}
		offsets[p] = max(offsets[p], off)
		meta := RowMeta{Partition: p, Offset: off, Seq: uint64(step), Time: t0.Add(time.Duration(step+rng.IntN(5)) * time.Second)}
		if rng.IntN(10) == 0 {
			meta.Time = time.Time{} // a record without a time
		}
		var fields []testField
		for _, n := range names {
			if n == "rare" && rng.IntN(50) != 0 || rng.IntN(6) == 0 {
				continue
			}
			card := 1 + rng.IntN(40)
			if n == "b" {
				card = 1 << 30 // mostly unique
			}
			v := strconv.Itoa(rng.IntN(card))
			if n == "s" {
				// Values either side of maxInlineValue, and ones
				// that differ only by trailing zero bytes.
				v = trickyValues[rng.IntN(len(trickyValues))]
			}
			fields = append(fields, testField{n, v, rng.IntN(10) == 0})
		}
		if rng.IntN(30) == 0 && len(fields) > 0 {
			fields = append(fields, testField{fields[0].name, "dup", false})
		}
		r := &decode.FlatRecord{}
		for _, f := range fields {
			r.Add([]byte(f.name), []byte(f.value), f.null)
		}
		if got, want := w.Append(meta, r), m.append(meta, fields); got != want {
			t.Fatalf("step %d: Append returned %v, model %v", step, got, want)
		}
		if step%97 == 0 || step == 2999 {
			checkAgainstModel(t, step, w, m)
		}
	}
}

// trickyValues are values whose inline words (shortWord) could be confused
// if the length were not part of them.
var trickyValues = []string{"", "\x00", "a", "a\x00", "a\x00\x00", "abcdefg", "abcdefg\x00", "abcdefgh", "abcdefghi", "abcdefgi", "\xff\xff\xff\xff\xff\xff\xff"}

func TestShortWord(t *testing.T) {
	seen := map[uint64]string{}
	for _, v := range trickyValues {
		w := shortWord([]byte(v))
		if (w == 0) != (len(v) > maxInlineValue) {
			t.Fatalf("shortWord(%q) = %#x", v, w)
		}
		if w == 0 {
			continue
		}
		if o, ok := seen[w]; ok {
			t.Fatalf("shortWord(%q) = shortWord(%q) = %#x", v, o, w)
		}
		seen[w] = v
	}
	// The loads of shortWord against the definition, byte by byte.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		v := make([]byte, rng.IntN(maxInlineValue+3))
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		var want uint64
		if len(v) <= maxInlineValue {
			for i, b := range v {
				want |= uint64(b) << (8 * i)
			}
			want |= uint64(len(v)+1) << 56
		}
		if got := shortWord(v); got != want {
			t.Fatalf("shortWord(%x) = %#x, want %#x", v, got, want)
		}
	}
}

func checkAgainstModel(t *testing.T, step int, w *Window, m *modelWindow) {
	t.Helper()
	s := w.Snapshot()
	if s.Len() != len(m.rows) || w.Len() != len(m.rows) {
		t.Fatalf("step %d: %d rows, model %d", step, s.Len(), len(m.rows))
	}
	if got := columnNames(s); !slices.Equal(got, m.order) {
		t.Fatalf("step %d: columns %v, model %v", step, got, m.order)
	}
	for _, c := range s.Columns() {
		if len(c.Codes) != s.Len() {
			t.Fatalf("step %d: column %s has %d codes", step, c.Name, len(c.Codes))
		}
		seen := map[string]bool{}
		for _, v := range c.Dict {
			if seen[v] {
				t.Fatalf("step %d: column %s: %q twice in Dict", step, c.Name, v)
			}
			seen[v] = true
		}
	}
	for r, mr := range m.rows {
		if s.Meta(r) != mr.meta {
			t.Fatalf("step %d row %d: meta %+v, model %+v", step, r, s.Meta(r), mr.meta)
		}
		got := s.Values(r, m.order)
		if fmt.Sprint(got) != fmt.Sprint(mr.vals) {
			t.Fatalf("step %d row %d: %v, model %v", step, r, got, mr.vals)
		}
	}
	checkNewestAgainstModel(t, step, w, m)
	want := map[int32]int64{}
	for p, last := range m.last {
		want[p] = last + 1
	}
	for i := len(m.rows) - 1; i >= 0; i-- {
		want[m.rows[i].meta.Partition] = m.rows[i].meta.Offset
	}
	if got := w.EvictionBounds(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("step %d: bounds %v, model %v", step, got, want)
	}
	checkInfoAgainstModel(t, step, w, m)
}

// checkNewestAgainstModel compares what check jobs read (NewestValues
// over every row) with the model's rows.
func checkNewestAgainstModel(t *testing.T, step int, w *Window, m *modelWindow) {
	t.Helper()
	for ci := range w.NumColumns() {
		codes, vals := make([]uint32, w.Len()), make([]string, w.Len())
		name := w.NewestValues(ci, codes, vals)
		for r, mr := range m.rows {
			v, ok := mr.vals[name]
			if ok != (codes[r] != 0) || vals[r] != v {
				t.Fatalf("step %d row %d: column %s newest value %q (code %d), model %q (%v)", step, r, name, vals[r], codes[r], v, ok)
			}
		}
	}
}

// checkInfoAgainstModel compares the window's TimeRange and Window.Info
// with the model's rows.
func checkInfoAgainstModel(t *testing.T, step int, w *Window, m *modelWindow) {
	t.Helper()
	var lo, hi time.Time
	start, end := map[int32]int64{}, map[int32]int64{}
	for _, r := range m.rows {
		if tm := r.meta.Time; !tm.IsZero() {
			if lo.IsZero() || tm.Before(lo) {
				lo = tm
			}
			if hi.IsZero() || tm.After(hi) {
				hi = tm
			}
		}
		if _, ok := start[r.meta.Partition]; !ok {
			start[r.meta.Partition] = r.meta.Offset
		}
		end[r.meta.Partition] = r.meta.Offset
	}
	gotLo, gotHi, ok := w.TimeRange()
	if ok != !lo.IsZero() || ok && (gotLo != lo.UnixNano() || gotHi != hi.UnixNano()) {
		t.Fatalf("step %d: TimeRange %d..%d (%v), model %v..%v", step, gotLo, gotHi, ok, lo, hi)
	}
	info := w.Info("s", "t", 7)
	if !info.StartTime.Equal(lo) || !info.EndTime.Equal(hi) || info.Records != len(m.rows) ||
		fmt.Sprint(info.StartOffsets) != fmt.Sprint(start) || fmt.Sprint(info.EndOffsets) != fmt.Sprint(end) {
		t.Fatalf("step %d: window info %+v, model times %v..%v offsets %v..%v", step, info, lo, hi, start, end)
	}
}

func TestWindowAppendSteadyStateAllocs(t *testing.T) {
	w := NewWindow(1000, 0)
	recs := payrollRecords(64)
	off := int64(0)
	for range 2000 {
		off++
		w.Append(RowMeta{Offset: off}, recs[off%64])
	}
	allocs := testing.AllocsPerRun(1000, func() {
		off++
		w.Append(RowMeta{Offset: off}, recs[off%64])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per append with known values", allocs)
	}
}

// payrollRecords decodes n payroll-like JSON records.
func payrollRecords(n int) []*decode.FlatRecord {
	d, err := decode.NewDecoder(decode.DecoderConfig{Format: decode.FormatJSON})
	if err != nil {
		panic(err)
	}
	out := make([]*decode.FlatRecord, n)
	for i := range out {
		out[i] = &decode.FlatRecord{}
		if err := d.Decode(context.Background(), testkit.PayrollJSON(i), out[i]); err != nil {
			panic(err)
		}
	}
	return out
}

func BenchmarkWindowAppend(b *testing.B) {
	recs := payrollRecords(20000)
	w := NewWindow(100_000, 0)
	off := int64(0)
	for range 100_000 {
		off++
		w.Append(RowMeta{Offset: off}, recs[off%20000])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		off++
		w.Append(RowMeta{Offset: off}, recs[off%20000])
	}
}

func BenchmarkWindowSnapshot(b *testing.B) {
	recs := payrollRecords(20000)
	w := NewWindow(100_000, 0)
	for i := range 100_000 {
		w.Append(RowMeta{Offset: int64(i)}, recs[i%20000])
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Snapshot()
	}
}

// BenchmarkWindowSnapshotUnique snapshots a 100k-row window whose id and
// ts are new at every row and whose group repeats: what a discovery's
// snapshot costs when columns are near-unique (their dictionaries found
// at the snapshot) against dictionary columns.
func BenchmarkWindowSnapshotUnique(b *testing.B) {
	const rows = 100_000
	w := NewWindow(rows, 0)
	var r decode.FlatRecord
	for i := range rows + rows/10 {
		r.Reset()
		r.AddString("id", fmt.Sprintf("%08x-71a5-448f-2510-90451bdd5b95", i))
		r.AddString("ts", time.Unix(int64(i), 0).UTC().Format(time.RFC3339))
		r.AddString("group", strconv.Itoa(i%10))
		w.Append(RowMeta{Offset: int64(i)}, &r)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Snapshot()
	}
}

// BenchmarkWindowFill1M fills a 1M-row, 6-column window and reports the live
// heap it holds: payroll-like columns (low and medium cardinality) and the
// worst case of 6 columns of values unique to each row.
func BenchmarkWindowFill1M(b *testing.B) {
	const rows = 1_000_000
	for _, unique := range []bool{false, true} {
		b.Run(fmt.Sprintf("unique=%v", unique), func(b *testing.B) {
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				w := NewWindow(rows, 0)
				var r decode.FlatRecord
				names := []string{"position", "experience", "salary", "taxGroup", "perc", "tax"}
				var buf []byte
				for i := range rows + rows/10 { // a full window plus some sliding
					r.Reset()
					for c, n := range names {
						buf = buf[:0]
						if unique {
							buf = strconv.AppendInt(append(buf, byte('a'+c)), int64(i), 10)
						} else {
							buf = strconv.AppendInt(buf, int64(i%[]int{7, 30, 5000, 5, 40, 1 << 30}[c]), 10)
						}
						r.Add([]byte(n), buf, false)
					}
					w.Append(RowMeta{Offset: int64(i)}, &r)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heapMiB")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/rows, "heapB/row")
				if rss, ok := processRSS(); ok {
					b.ReportMetric(float64(rss)/(1<<20), "rssMiB")
				}
				runtime.KeepAlive(w)
			}
		})
	}
}

// processRSS reads the resident set size from /proc (Linux only).
func processRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// FuzzWindowAppend drives a window and the naive model with the same
// operations decoded from the input and compares them.
func FuzzWindowAppend(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0, 200, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		size := int(in[0] % 16)
		var interval time.Duration
		if size == 0 || in[1]&1 == 1 {
			interval = time.Duration(in[1]%8+1) * time.Second
		}
		w := NewWindow(size, interval)
		w.SetTuning(testTunings[int(in[1]>>1)%len(testTunings)].t)
		w.timeBlock = 2
		m := &modelWindow{size: size, interval: interval, last: map[int32]int64{}}
		offsets := map[int32]int64{}
		names := []string{"a", "b", "c"}
		// Bound the steps: every step is checked against the model, and
		// long inputs make the fuzzer's minimisation crawl.
		in = in[2:min(len(in), 2+2*150)]
		for step := 0; len(in) >= 2; step++ {
			op, arg := in[0], in[1]
			in = in[2:]
			p := int32(op % 2)
			off := offsets[p] + int64(op>>1%3) - 1 // sometimes a redelivery
			offsets[p] = max(offsets[p], off)
			meta := RowMeta{Partition: p, Offset: off, Time: t0.Add(time.Duration(step+int(arg>>6)) * time.Second)}
			var fields []testField
			for i, n := range names {
				bits := arg >> (2 * i) & 3
				if bits == 0 {
					continue
				}
				fields = append(fields, testField{n, strconv.Itoa(int(bits+op) % 5), bits == 3 && op&1 == 1})
			}
			r := &decode.FlatRecord{}
			for _, fl := range fields {
				r.Add([]byte(fl.name), []byte(fl.value), fl.null)
			}
			if got, want := w.Append(meta, r), m.append(meta, fields); got != want {
				t.Fatalf("step %d: Append %v, model %v", step, got, want)
			}
			checkAgainstModel(t, step, w, m)
		}
	})
}

// TestHashValueSpreads checks that the short values' hash (hashValue's
// word mix) fills an index's slots as a random function would: the
// decimal numbers below 2^16 into 2^17 home slots (the index's low bits)
// occupy about 2^17 (1 - e^-1/2) of them.
func TestHashValueSpreads(t *testing.T) {
	w := NewWindow(0, 0)
	c := w.cols[w.addColumn("x")]
	const n, slots = 1 << 16, 1 << 17
	home := make([]bool, slots)
	used := 0
	for i := range n {
		v := strconv.AppendInt(nil, int64(i), 10)
		h := c.hashValue(v, shortWord(v))
		if !home[h%slots] {
			home[h%slots] = true
			used++
		}
	}
	want := slots * (1 - math.Exp(-float64(n)/slots))
	if math.Abs(float64(used)-want) > 0.02*want {
		t.Fatalf("%d of %d home slots used, a random hash uses about %.0f", used, slots, want)
	}
}

// TestWindowNearUnique fills a window with a unique id, a repeated
// group and, later, ids that repeat: the id column becomes near-unique
// at the default tuning, its snapshot still holds each value once (a
// repeated id is one dictionary entry that both rows' codes name), and it
// goes back to a dictionary once a count finds its values repeating.
func TestWindowNearUnique(t *testing.T) {
	t.Parallel()
	const size = 20_000
	w := NewWindow(size, 0)
	for i := range size {
		id := "ev-" + strconv.Itoa(i)
		if i == size-1 {
			id = "ev-7" // a duplicated record's id
		}
		w.Append(RowMeta{Offset: int64(i)}, rec("id", id, "group", strconv.Itoa(i%10)))
	}
	id, group := w.cols[w.colIndex["id"]], w.cols[w.colIndex["group"]]
	if !id.unique || group.unique {
		t.Fatalf("near-unique: id %v, group %v; want true, false", id.unique, group.unique)
	}
	if len(id.dict) != 0 || id.index.Len() != 0 {
		t.Fatalf("near-unique id keeps a dictionary of %d values, index %d", len(id.dict), id.index.Len())
	}
	s := w.Snapshot()
	dc := s.Columns()[s.byName["id"]]
	if len(dc.Dict) != size-1 || dc.Codes[7] != dc.Codes[size-1] || dc.Dict[dc.Codes[7]-1] != "ev-7" {
		t.Fatalf("snapshot of the near-unique id: %d values, codes of ev-7 %d and %d", len(dc.Dict), dc.Codes[7], dc.Codes[size-1])
	}
	// Ids that repeat, 10 values: counted once a window's worth of them
	// came (no snapshot taken).
	for i := size; i < 3*size; i++ {
		if i == 2*size {
			if chunks := len(id.arena.chunks); chunks > 1+size*8/arenaChunkBytes+1 {
				t.Fatalf("%d arena chunks held for %d rows", chunks, size)
			}
		}
		w.Append(RowMeta{Offset: int64(i)}, rec("id", "ev-"+strconv.Itoa(i%10), "group", "g"))
	}
	if id.unique {
		t.Fatal("id still near-unique after a window of 10 values")
	}
	s = w.Snapshot()
	if got := len(s.Columns()[s.byName["id"]].Dict); got != 10 {
		t.Fatalf("id has %d values after going back to a dictionary, want 10", got)
	}
}

// TestWindowAppendNearUniqueAllocs: appending rows whose id is new at
// every row to a near-unique column allocates only the arena's chunks
// (one per arenaChunkBytes of values) and the table of a count of its
// values once a window's worth of rows came, not per row.
func TestWindowAppendNearUniqueAllocs(t *testing.T) {
	w := NewWindow(1000, 0)
	w.SetTuning(Tuning{UniqueRatio: 0.5, UniqueMinRows: 100, DictRatio: 0.25, DecideEvery: 100})
	recs := make([]*decode.FlatRecord, 4096)
	for i := range recs {
		recs[i] = rec("id", fmt.Sprintf("%016d", i), "group", strconv.Itoa(i%10))
	}
	off := int64(0)
	for range 2000 {
		off++
		w.Append(RowMeta{Offset: off}, recs[off%4096])
	}
	if !w.cols[w.colIndex["id"]].unique {
		t.Fatal("id is not near-unique")
	}
	const rows = 4096
	// 16-byte ids: a chunk every 4,096 rows, the chunks slice's growth
	// and a count every 1,000 rows. Mallocs counts the whole process, so
	// a runtime or test goroutine can add to one measurement (seen once
	// in CI: 13); the fewest of three is the appends' own.
	const bound = 2 + rows/1000 + rows*16/arenaChunkBytes
	fewest := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rows {
			off++
			w.Append(RowMeta{Offset: off}, recs[off%4096])
		}
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.Mallocs-before.Mallocs)
	}
	if fewest > bound {
		t.Fatalf("%d allocations for %d appends of new ids (fewest of three runs)", fewest, rows)
	}
}
