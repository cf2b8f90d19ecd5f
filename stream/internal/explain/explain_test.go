package explain

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/window"
)

// The oracle: a direct, slow reading of the definitions of explain.go
// and docs/DESIGN.md ("Explanations"), sharing no code with the package
// but the table types.

// randomWindow is a window of n rows over k columns of small ints (as
// text; 0 is NULL) of up to vals values, the last of 30 to 59.
func randomWindow(rng *rand.Rand, n, k, vals int) []table.DictColumn {
	cols := make([]table.DictColumn, k)
	for c := range cols {
		cols[c].Name = "c" + strconv.Itoa(c)
		cardinality := 1 + rng.IntN(vals)
		if c == k-1 {
			cardinality = 30 + rng.IntN(30)
		}
		for range n {
			v := rng.IntN(cardinality + 1)
			if v == 0 && rng.IntN(4) > 0 {
				v = 1 // NULLs rarer
			}
			cols[c].Codes = append(cols[c].Codes, code(&cols[c], v))
		}
	}
	return cols
}

// code interns v (0: NULL) in c's dictionary.
func code(c *table.DictColumn, v int) uint32 {
	if v == 0 {
		return 0
	}
	s := strconv.Itoa(v)
	if i := slices.Index(c.Dict, s); i >= 0 {
		return uint32(i + 1)
	}
	c.Dict = append(c.Dict, s)
	return uint32(len(c.Dict))
}

func encode(t testing.TB, cols []table.DictColumn) *table.Table {
	tb, err := table.EncodeTyped(cols, table.Typing{})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// val is row's value of the named column, "" for NULL.
func val(cols []table.DictColumn, name string, row int) string {
	for _, c := range cols {
		if c.Name == name {
			if k := c.Codes[row]; k != 0 {
				return c.Dict[k-1]
			}
			return ""
		}
	}
	panic(name)
}

func num(s string) int {
	if s == "" {
		return -1 // NULL, lower than every value
	}
	v, _ := strconv.Atoi(s)
	return v
}

func contextKey(cols []table.DictColumn, context []string, row int) string {
	var b strings.Builder
	for _, c := range context {
		b.WriteString(val(cols, c, row) + "\x00")
	}
	return b.String()
}

// oracleFD: a row violates when its rhs is not its class's majority (the
// most frequent value, a tie going to the value seen first in the class).
func oracleFD(cols []table.DictColumn, d discovery.Dependency) (violating []int, expected []string) {
	n := len(cols[0].Codes)
	for row := range n {
		key := contextKey(cols, d.Context, row)
		counts, first := map[string]int{}, map[string]int{}
		for s := range n {
			if contextKey(cols, d.Context, s) == key {
				v := val(cols, d.RHS, s)
				counts[v]++
				if _, ok := first[v]; !ok {
					first[v] = s
				}
			}
		}
		best := ""
		for v := range counts {
			if _, ok := counts[best]; !ok || counts[v] > counts[best] || (counts[v] == counts[best] && first[v] < first[best]) {
				best = v
			}
		}
		if val(cols, d.RHS, row) != best {
			violating, expected = append(violating, row), append(expected, best)
		}
	}
	return violating, expected
}

// lnds is the length of a longest non-decreasing subsequence of b over
// the rows sorted by (a, b), by quadratic dynamic programming.
func lnds(pts [][2]int) int {
	slices.SortFunc(pts, func(x, y [2]int) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	best, out := make([]int, len(pts)), 0
	for i := range pts {
		best[i] = 1
		for j := range i {
			if pts[j][1] <= pts[i][1] {
				best[i] = max(best[i], best[j]+1)
			}
		}
		out = max(out, best[i])
	}
	return out
}

// checkOC judges an OC's explanation by the definitions: as many violating
// rows as n less the classes' longest chains; the other rows have no swap;
// each violating row's expected range is what those rows allow, and its
// own value lies outside it.
func checkOC(t *testing.T, cols []table.DictColumn, d discovery.Dependency, r Result) {
	t.Helper()
	n := len(cols[0].Codes)
	sign := 1
	if d.Polarity == discovery.Desc {
		sign = -1
	}
	a := func(row int) int { return num(val(cols, d.Left, row)) }
	b := func(row int) int { return sign * num(val(cols, d.Right, row)) }
	byClass := map[string][][2]int{}
	for row := range n {
		k := contextKey(cols, d.Context, row)
		byClass[k] = append(byClass[k], [2]int{a(row), b(row)})
	}
	want := n
	for _, pts := range byClass {
		want -= lnds(pts)
	}
	if len(r.Violating) != want {
		t.Fatalf("%s: %d violating rows, the oracle removes %d", d, len(r.Violating), want)
	}
	out := map[int]bool{}
	for _, row := range r.Violating {
		out[row] = true
	}
	for s := range n {
		for u := range n {
			if !out[s] && !out[u] && contextKey(cols, d.Context, s) == contextKey(cols, d.Context, u) && a(s) < a(u) && b(s) > b(u) {
				t.Fatalf("%s: rows %d and %d are kept and swap", d, s, u)
			}
		}
	}
	for i, row := range r.Violating {
		same := func(s int) bool { return !out[s] && contextKey(cols, d.Context, s) == contextKey(cols, d.Context, row) }
		// right's range: no kept row with a smaller left above it, none
		// with a larger left below it (in the rule's direction).
		rb := oracleRange(n, same, func(s int) bool { return a(s) < a(row) }, func(s int) bool { return a(s) > a(row) }, b)
		if sign < 0 {
			rb = oSpan{-rb.hi, -rb.lo, rb.hasHi, rb.hasLo}
		}
		// left's range, the sides exchanged.
		la := oracleRange(n, same, func(s int) bool { return b(s) < b(row) }, func(s int) bool { return b(s) > b(row) }, a)
		want, col, own := rb, d.Right, num(val(cols, d.Right, row))
		lw, rw := width(cols, d.Left, la), width(cols, d.Right, rb)
		if (la.hasLo && la.hasHi) != (rb.hasLo && rb.hasHi) && la.hasLo && la.hasHi ||
			la.hasLo && la.hasHi && rb.hasLo && rb.hasHi && lw < rw {
			want, col, own = la, d.Left, num(val(cols, d.Left, row))
		}
		e := r.Expected[i]
		if e.Column != col || e.HasLow != want.hasLo || e.HasHigh != want.hasHi || (want.hasLo && num(e.Low) != want.lo) || (want.hasHi && num(e.High) != want.hi) {
			t.Fatalf("%s row %d: expected %+v, the oracle %s %+v (left %+v, right %+v)", d, row, e, col, want, la, rb)
		}
		if (!want.hasLo || own >= want.lo) && (!want.hasHi || own <= want.hi) {
			t.Fatalf("%s row %d: its value %d lies inside the expected range %+v", d, row, own, e)
		}
	}
}

// oracleFirst: of every start row t of the window up to the last
// violating record, the one whose records from t on hold the most
// violations in excess of eps (the earliest of equal ones); the break
// starts at the first violating record from it on.
func oracleFirst(violating []int, n int, eps float64) int {
	if len(violating) == 0 {
		return -1
	}
	bestT, best := -1, math.Inf(-1)
	for t := range violating[len(violating)-1] + 1 {
		v := 0
		for _, row := range violating {
			if row >= t {
				v++
			}
		}
		if s := float64(v) - eps*float64(n-t); s > best+1e-9 {
			bestT, best = t, s
		}
	}
	for k, row := range violating {
		if row >= bestT {
			return k
		}
	}
	return -1
}

// TestBreakStart: old exceptions within eps do not date the break.
func TestBreakStart(t *testing.T) {
	t.Parallel()
	// 1000 rows: exceptions every 100 rows (1%), then from row 800 every
	// 5th row; eps 2%.
	var v []int
	for row := range 1000 {
		if (row < 800 && row%100 == 50) || (row >= 800 && row%5 == 2) {
			v = append(v, row)
		}
	}
	if k := breakStart(v, 1000, 0.02); v[k] != 802 {
		t.Errorf("break starts at row %d, want 802", v[k])
	}
	if k := breakStart(v, 1000, 0); k != 0 {
		t.Errorf("eps 0: break starts at violating record %d, want the first", k)
	}
	if k := breakStart(nil, 1000, 0.02); k != -1 {
		t.Errorf("no violations: %d", k)
	}
}

// oSpan is a range of values, each side possibly open.
type oSpan struct {
	lo, hi       int
	hasLo, hasHi bool
}

// oracleRange: at least v of every row in the class (same) before x, at
// most v of every one after x.
func oracleRange(n int, same, before, after func(int) bool, v func(int) int) oSpan {
	sp := oSpan{lo: math.MinInt, hi: math.MaxInt}
	for s := range n {
		if !same(s) {
			continue
		}
		if before(s) && v(s) >= sp.lo {
			sp.lo, sp.hasLo = v(s), true
		}
		if after(s) && v(s) <= sp.hi {
			sp.hi, sp.hasHi = v(s), true
		}
	}
	return sp
}

// width is a two-sided range's share of the column's distinct values
// (NULL counted): how many ranks it spans over how many there are.
func width(cols []table.DictColumn, name string, sp oSpan) float64 {
	var vals []int
	seen := map[int]bool{}
	for row := range cols[0].Codes {
		if v := num(val(cols, name, row)); !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	lo, hi := sp.lo, sp.hi
	if lo > hi {
		lo, hi = hi, lo
	}
	return float64(slices.Index(vals, hi)-slices.Index(vals, lo)) / float64(len(vals))
}

// oracleSegments reads the segment definition directly: every value of
// every column but the rule's right-hand side (skip), NULL included,
// with at least MinViolating violating rows and a larger share of them
// than of the window is a candidate; its tail is summed term by term from
// log-gamma; Bonferroni over the values with MinViolating records; ranked by the share excess,
// then the tail, then column and value.
func oracleSegments(cols []table.DictColumn, violating []int, skip string, o Options) []Segment {
	n, v := len(cols[0].Codes), len(violating)
	isV := map[int]bool{}
	for _, row := range violating {
		isV[row] = true
	}
	var cands []Segment
	tests := 0
	for _, c := range cols {
		if c.Name == skip {
			continue
		}
		for _, s := range append([]Segment{{Column: c.Name, Null: true}}, valueSegments(c)...) {
			for row := range n {
				if x := val(cols, c.Name, row); (s.Null && x == "") || (!s.Null && x == s.Value) {
					s.Records++
					if isV[row] {
						s.Violating++
					}
				}
			}
			s.ViolatingShare, s.WindowShare = float64(s.Violating)/float64(v), float64(s.Records)/float64(n)
			if s.Records >= o.MinViolating {
				tests++
			}
			if s.Violating >= o.MinViolating && s.ViolatingShare > s.WindowShare {
				s.Lift = s.ViolatingShare / s.WindowShare
				cands = append(cands, s)
			}
		}
	}
	var kept []Segment
	for _, s := range cands {
		p := 0.0
		for k := s.Violating; k <= min(s.Records, v); k++ {
			p += math.Exp(lchooseO(s.Records, k) + lchooseO(n-s.Records, v-k) - lchooseO(n, v))
		}
		s.P = min(p, 1)
		if s.P <= o.Alpha/float64(tests) {
			kept = append(kept, s)
		}
	}
	slices.SortFunc(kept, func(x, y Segment) int {
		return cmp.Or(cmp.Compare(y.ViolatingShare-y.WindowShare, x.ViolatingShare-x.WindowShare), cmp.Compare(x.P, y.P),
			strings.Compare(x.Column, y.Column), strings.Compare(x.Value, y.Value))
	})
	return kept[:min(len(kept), o.MaxSegments)]
}

func valueSegments(c table.DictColumn) []Segment {
	var out []Segment
	for _, v := range c.Dict {
		out = append(out, Segment{Column: c.Name, Value: v})
	}
	return out
}

func lchooseO(n, k int) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func sameSegments(t *testing.T, what string, got, want []Segment) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d segments %v, the oracle %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.Abs(g.P-w.P) > 1e-9*math.Max(w.P, 1e-300) && math.Abs(g.P-w.P) > 1e-12 {
			t.Fatalf("%s: segment %d tail %g, the oracle %g", what, i, g.P, w.P)
		}
		g.P, w.P = 0, 0
		if g != w {
			t.Fatalf("%s: segment %d %+v, the oracle %+v", what, i, g, w)
		}
	}
}

// rules are the FDs and OCs of a window of k columns the oracle checks.
func rules(rng *rand.Rand, k int) []discovery.Dependency {
	var out []discovery.Dependency
	for range 6 {
		perm := rng.Perm(k)
		ctx := []string{}
		for _, c := range perm[2 : 2+rng.IntN(2)] {
			ctx = append(ctx, "c"+strconv.Itoa(c))
		}
		x, y := "c"+strconv.Itoa(perm[0]), "c"+strconv.Itoa(perm[1])
		out = append(out, discovery.Dependency{Kind: discovery.KindOFD, Context: append(ctx, x), RHS: y})
		pol := discovery.Asc
		if rng.IntN(2) == 0 {
			pol = discovery.Desc
		}
		out = append(out, discovery.Dependency{Kind: discovery.KindOC, Context: ctx, Left: x, Right: y, Polarity: pol})
	}
	return out
}

// TestExplainAgainstOracle judges the violating rows, the expected values
// and the segments on random windows, with the options forced each way,
// and finds the same explanation with the key spaces counted in arrays
// only and never (Options.denseKeys).
func TestExplainAgainstOracle(t *testing.T) {
	t.Parallel()
	forced := []Options{
		DefaultOptions,
		{MaxSegments: 1, Alpha: 0.01, MinViolating: 5},  // one kept
		{MaxSegments: 50, Alpha: 1, MinViolating: 1},    // every candidate
		{MaxSegments: 50, Alpha: 0, MinViolating: 1},    // none by chance
		{MaxSegments: 50, Alpha: 1, MinViolating: 1000}, // none by support
		{MaxSegments: 50, Alpha: 0.5, MinViolating: 2},
	}
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 20 + rng.IntN(120)
		cols := randomWindow(rng, n, 5, 6)
		tb := encode(t, cols)
		for _, d := range rules(rng, 5) {
			o := forced[int(seed)%len(forced)]
			w := Window{Columns: cols, Rule: tb, Epsilon: float64(seed%4) / 20}
			r, err := Explain(w, d, o)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("seed %d %s", seed, d)
			if ring, err := Explain(ringOf(rng, w), d, o); err != nil || !reflect.DeepEqual(ring, r) {
				t.Fatalf("%s: on the ring %+v, %v; in row order %+v", what, ring, err, r)
			}
			for _, keys := range []int{-1, 1 << 16} { // maps and sorts only; arrays only
				forced := o
				forced.denseKeys = keys
				if got, err := Explain(w, d, forced); err != nil || !reflect.DeepEqual(got, r) {
					t.Fatalf("%s: with denseKeys %d %+v, %v; by default %+v", what, keys, got, err, r)
				}
			}
			if !slices.IsSorted(r.Violating) || len(r.Expected) != len(r.Violating) {
				t.Fatalf("%s: violating rows not in order or expectations missing", what)
			}
			if d.Kind == discovery.KindOFD {
				v, e := oracleFD(cols, d)
				if !slices.Equal(r.Violating, v) {
					t.Fatalf("%s: violating %v, the oracle %v", what, r.Violating, v)
				}
				for i := range e {
					if got := r.Expected[i]; got.Value != e[i] || got.Null != (e[i] == "") {
						t.Fatalf("%s: row %d expected %+v, the oracle %q", what, v[i], got, e[i])
					}
				}
			} else {
				checkOC(t, cols, d, r)
			}
			sameSegments(t, what, r.Segments, oracleSegments(cols, r.Violating, cmp.Or(d.RHS, d.Right), o))
			if want := oracleFirst(r.Violating, n, w.Epsilon); r.First != want {
				t.Fatalf("%s: break starts at violating record %d, the oracle %d", what, r.First, want)
			}
		}
	}
}

// TestForcedOptionsChangeTheResult shows that each threshold is at work
// on one window with a planted segment.
func TestForcedOptionsChangeTheResult(t *testing.T) {
	t.Parallel()
	cols, d := planted(rand.New(rand.NewPCG(1, 1)), 2000, 0.2, false)
	w := Window{Columns: cols, Rule: encode(t, cols)}
	count := func(o Options) int {
		r, err := Explain(w, d, o)
		if err != nil {
			t.Fatal(err)
		}
		return len(r.Segments)
	}
	base := DefaultOptions
	base.MaxSegments = 50
	all := count(base)
	if all < 2 {
		t.Fatalf("%d segments with the default thresholds; the test needs two or more", all)
	}
	for name, c := range map[string]struct {
		o    func(*Options)
		want func(int) bool
	}{
		"MaxSegments 1":     {func(o *Options) { o.MaxSegments = 1 }, func(k int) bool { return k == 1 }},
		"Alpha 0":           {func(o *Options) { o.Alpha = 0 }, func(k int) bool { return k < all }},
		"Alpha 1":           {func(o *Options) { o.Alpha, o.MinViolating = 1, 1 }, func(k int) bool { return k > all }},
		"MinViolating 1":    {func(o *Options) { o.MinViolating = 1 }, func(k int) bool { return k >= all }},
		"MinViolating huge": {func(o *Options) { o.MinViolating = 1 << 30 }, func(k int) bool { return k == 0 }},
	} {
		o := base
		c.o(&o)
		if k := count(o); !c.want(k) {
			t.Errorf("%s: %d segments (defaults: %d)", name, k, all)
		}
	}
}

// planted is a payroll-like window: source (4 systems), region (6),
// salary, rate = salary's bracket, and {salary}: [] -> rate. A share
// faultShare of the records of source "import" (uniform: of every
// record) get a wrong rate.
func planted(rng *rand.Rand, n int, faultShare float64, uniform bool) ([]table.DictColumn, discovery.Dependency) {
	cols := []table.DictColumn{{Name: "source"}, {Name: "region"}, {Name: "salary"}, {Name: "rate"}}
	sources := []int{1, 2, 3, 4} // 4 is "import"
	for range n {
		src := sources[rng.IntN(len(sources))]
		salary := 1 + rng.IntN(200)
		rate := 1 + salary/40
		if (uniform || src == 4) && rng.Float64() < faultShare {
			rate = 1 + rng.IntN(6)
		}
		cols[0].Codes = append(cols[0].Codes, code(&cols[0], src))
		region := 1 + rng.IntN(6)
		if src == 4 && !uniform && rng.IntN(2) == 0 {
			region = 6 // the faulty source's records come mostly from one region
		}
		cols[1].Codes = append(cols[1].Codes, code(&cols[1], region))
		cols[2].Codes = append(cols[2].Codes, code(&cols[2], salary))
		cols[3].Codes = append(cols[3].Codes, code(&cols[3], rate))
	}
	return cols, discovery.Dependency{Kind: discovery.KindOFD, Context: []string{"salary"}, RHS: "rate"}
}

// TestPlantedSegmentIsFirst: the faulty source is the top segment.
func TestPlantedSegmentIsFirst(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		cols, d := planted(rand.New(rand.NewPCG(seed, 2)), 5000, 0.3, false)
		r, err := Explain(Window{Columns: cols, Rule: encode(t, cols)}, d, DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Segments) == 0 || r.Segments[0].Column != "source" || r.Segments[0].Value != "4" {
			t.Fatalf("seed %d: segments %+v, want source=4 first", seed, r.Segments)
		}
	}
}

// TestUniformFaultHasNoSegment: a fault spread over every record gives
// no segment, for FDs and OCs: the significance threshold holds back the
// segments chance makes among the many candidates of every column
// (numeric ones by value). Alpha 0.01 allows about one window in a
// hundred with a chance segment; the test allows 3 of 200.
func TestUniformFaultHasNoSegment(t *testing.T) {
	t.Parallel()
	oc := discovery.Dependency{Kind: discovery.KindOC, Context: []string{}, Left: "salary", Right: "rate", Polarity: discovery.Asc}
	withSegment := 0
	for seed := range uint64(200) {
		cols, fd := planted(rand.New(rand.NewPCG(seed, 3)), 5000, 0.05+0.1*float64(seed%3), true)
		tb := encode(t, cols)
		for _, d := range []discovery.Dependency{fd, oc} {
			r, err := Explain(Window{Columns: cols, Rule: tb}, d, DefaultOptions)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Violating) < 100 {
				t.Fatalf("seed %d %s: only %d violating rows", seed, d, len(r.Violating))
			}
			if len(r.Segments) > 0 {
				withSegment++
				t.Logf("seed %d %s: chance segment %+v", seed, d, r.Segments[0])
			}
		}
	}
	if withSegment > 3 {
		t.Fatalf("%d of 400 explanations of a uniform fault have a segment", withSegment)
	}
}

func TestExplainErrors(t *testing.T) {
	t.Parallel()
	cols, d := planted(rand.New(rand.NewPCG(1, 1)), 100, 0.2, false)
	tb := encode(t, cols)
	if _, err := Explain(Window{Columns: cols}, d, DefaultOptions); err == nil {
		t.Error("no rule table: no error")
	}
	bad := d
	bad.RHS = "nope"
	if _, err := Explain(Window{Columns: cols, Rule: tb}, bad, DefaultOptions); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown column: %v", err)
	}
	short := slices.Clone(cols)
	short[0].Codes = short[0].Codes[:10]
	if _, err := Explain(Window{Columns: short, Rule: tb}, d, DefaultOptions); err == nil {
		t.Error("short column: no error")
	}
	if _, err := Explain(Window{Columns: cols, Rule: tb}, discovery.Dependency{Kind: discovery.KindKey, Set: []string{"salary"}}, DefaultOptions); err == nil {
		t.Error("a key: no error")
	}
}

// ringOf is w as a checker's ring holds it (Window.Slot): each column's
// codes rotated by a random offset in a larger buffer whose other slots
// hold random codes, the counts counted on w's rows.
func ringOf(rng *rand.Rand, w Window) Window {
	n := w.Rule.Rows
	size := n + 1 + rng.IntN(n+1)
	off := rng.IntN(size)
	ring := w
	ring.Columns, ring.Counts = nil, nil
	ring.Slot = func(r int) int { return (off + r) % size }
	for _, c := range w.Columns {
		codes := make([]uint32, size)
		for i := range codes {
			codes[i] = uint32(rng.IntN(len(c.Dict) + 1))
		}
		counts := make([]uint32, len(c.Dict)+1)
		for r, code := range c.Codes {
			codes[ring.Slot(r)] = code
			counts[code]++
		}
		ring.Columns = append(ring.Columns, table.DictColumn{Name: c.Name, Dict: c.Dict, Codes: codes})
		ring.Counts = append(ring.Counts, counts)
	}
	return ring
}

// TestForEvent: the samples are the violating records that entered last,
// in record order, with the rule's values, all fields and the expected
// value; the first record is the earliest violating one.
func TestForEvent(t *testing.T) {
	t.Parallel()
	cols, d := planted(rand.New(rand.NewPCG(5, 5)), 3000, 0.3, false)
	w := Window{Columns: cols, Rule: encode(t, cols)}
	r, err := Explain(w, d, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	meta := func(i int) window.RowMeta { return window.RowMeta{Partition: 1, Offset: int64(1000 + i)} }
	x, samples, err := ForEvent(Event{Window: w, Meta: meta, Topic: "pay", Samples: 5}, d, nil, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	rx, rsamples, err := ForEvent(Event{Window: ringOf(rand.New(rand.NewPCG(5, 6)), w), Meta: meta, Topic: "pay", Samples: 5}, d, nil, DefaultOptions)
	if err != nil || !reflect.DeepEqual(rx, x) || !reflect.DeepEqual(rsamples, samples) {
		t.Fatalf("on the ring %+v %+v, %v; in row order %+v %+v", rx, rsamples, err, x, samples)
	}
	if x.Violating != len(r.Violating) || x.First.Offset != int64(1000+r.Violating[0]) || x.First.Topic != "pay" ||
		len(x.Segments) == 0 || x.Segments[0].Column != "source" {
		t.Fatalf("explanation %+v", x)
	}
	last := r.Violating[len(r.Violating)-5:]
	for i, s := range samples {
		row := last[i]
		if s.Offset != int64(1000+row) || s.Values["rate"] != val(cols, "rate", row) || len(s.Values) != 2 ||
			s.Fields["source"] != val(cols, "source", row) || s.Expected == nil || s.Expected.Value != r.Expected[len(r.Violating)-5+i].Value ||
			s.Expected.Or != nil {
			t.Fatalf("sample %d %+v, want row %d", i, s, row)
		}
	}
	if len(samples) != 5 {
		t.Fatalf("%d samples", len(samples))
	}
}

// TestForEventBothWays: with an equivalence's FD the other way (back), a
// sample whose pair of values disagrees says what each way expected: the
// other member's value for the record's, and its own member's for the
// other's. A record replaced one member by another record's breaks both
// alike, and the back one names the value it had.
func TestForEventBothWays(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 9))
	cols := []table.DictColumn{{Name: "grade"}, {Name: "level"}}
	before := map[int]int{} // a faulty row's grade before the fault
	for row := range 400 {
		g := 1 + rng.IntN(8)
		l := 10 + g // level <-> grade
		if row%25 == 0 {
			before[row] = g
			for g == before[row] {
				g = 1 + rng.IntN(8) // another record's grade
			}
		}
		cols[0].Codes = append(cols[0].Codes, code(&cols[0], g))
		cols[1].Codes = append(cols[1].Codes, code(&cols[1], l))
	}
	w := Window{Columns: cols, Rule: encode(t, cols)}
	d := discovery.Dependency{Kind: discovery.KindOFD, Context: []string{"grade"}, RHS: "level"}
	back := discovery.Dependency{Kind: discovery.KindOFD, Context: []string{"level"}, RHS: "grade"}
	meta := func(i int) window.RowMeta { return window.RowMeta{Offset: int64(i)} }
	_, samples, err := ForEvent(Event{Window: w, Meta: meta, Samples: 5}, d, &back, DefaultOptions)
	if err != nil || len(samples) != 5 {
		t.Fatalf("%d samples, %v", len(samples), err)
	}
	for _, s := range samples {
		row := int(s.Offset)
		g, ok := before[row]
		e := s.Expected
		if !ok || e == nil || e.Or == nil {
			t.Fatalf("sample %+v: row %d not faulty or without both expectations", s, row)
		}
		if e.Column != "level" || e.Value != strconv.Itoa(10+num(val(cols, "grade", row))) ||
			e.Or.Column != "grade" || e.Or.Value != strconv.Itoa(g) || e.Or.Or != nil {
			t.Fatalf("row %d (grade %s, level %s, grade before %d): expected %s", row, val(cols, "grade", row), val(cols, "level", row), g, e)
		}
		if want := "level " + e.Value + ", or grade " + strconv.Itoa(g); e.String() != want {
			t.Fatalf("expected reads %q, want %q", e.String(), want)
		}
	}
}
