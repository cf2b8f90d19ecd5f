package incremental

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// incCell is one value of the differential tests' model window.
type incCell struct {
	v    string
	null bool
}

// incModel is the oracle of the differential tests: a plain FIFO of rows,
// measured by encoding it from scratch and validating every dependency
// with ValidateAll, sharing no state with the Engine under test.
type incModel struct {
	names  []string
	rows   [][]incCell
	typing table.Typing
}

func (m *incModel) table(t testing.TB) *table.Table {
	cols := make([]table.DictColumn, len(m.names))
	for i, name := range m.names {
		idx := map[string]uint32{}
		dc := table.DictColumn{Name: name, Codes: make([]uint32, len(m.rows))}
		for r, row := range m.rows {
			c := row[i]
			if c.null {
				continue
			}
			code, ok := idx[c.v]
			if !ok {
				dc.Dict = append(dc.Dict, c.v)
				code = uint32(len(dc.Dict))
				idx[c.v] = code
			}
			dc.Codes[r] = code
		}
		cols[i] = dc
	}
	tab, err := table.EncodeTyped(cols, m.typing)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func (m *incModel) removals(t testing.TB, deps []discovery.Dependency) []int {
	rs, err := discovery.ValidateAll(context.Background(), m.table(t), deps, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Removals
	}
	return out
}

// incDomains are the value pools of the generated columns: numbers with
// several spellings of one value ("1", "1.0", "01"; "0", "-0"), text
// including a non-NULL empty string, and mostly-numeric pools whose rare
// text value switches the column's typing back and forth.
var incDomains = [][]string{
	{"1", "2", "3", "1.0", "01", "-0", "0", "2.5", "-1", "1e400"},
	{"a", "b", "c", "ab", "", "B", "b "},
	{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "x"},
	{"10", "9", "8", "7", "6", "5", "4", "3", "2", "1", "0"},
	{"p", "q"},
	// Instants: the same one in three spellings, dates, and a date-like
	// text that switches the column to text.
	{"2024-01-01T10:00:00Z", "2024-01-01T11:00:00+01:00", "2024-01-01 10:00:00", "2024-01-02", "2023-12-31T23:59:59.5Z", "1999-05-05", "2024-01-01T09:00:00-02:00", "2024-13-01"},
}

// incGen draws random streams and dependencies.
type incGen struct {
	r     *rand.Rand
	names []string
	pools [][]string
	nullP float64
}

func newIncGen(seed uint64, ncols int) *incGen {
	g := &incGen{r: rand.New(rand.NewPCG(seed, seed^0x9e37)), nullP: 0.1}
	for i := 0; i < ncols; i++ {
		g.names = append(g.names, fmt.Sprintf("c%d", i))
		pool := incDomains[g.r.IntN(len(incDomains))]
		// Sometimes only a prefix: small domains make large classes.
		k := 1 + g.r.IntN(len(pool))
		g.pools = append(g.pools, pool[:k])
	}
	return g
}

func (g *incGen) row() []incCell {
	row := make([]incCell, len(g.names))
	for i, pool := range g.pools {
		if g.r.Float64() < g.nullP {
			row[i].null = true
			continue
		}
		// Rare values (the pool's tail) less often, so that typing switches
		// come and go.
		j := g.r.IntN(len(pool))
		if j == len(pool)-1 && g.r.IntN(4) != 0 {
			j = g.r.IntN(len(pool))
		}
		row[i].v = pool[j]
	}
	return row
}

func (g *incGen) deps(k int) []discovery.Dependency {
	var out []discovery.Dependency
	for len(out) < k {
		perm := g.r.Perm(len(g.names))
		nctx := g.r.IntN(4)
		if nctx+2 > len(perm) {
			continue
		}
		var ctx []string
		for _, i := range perm[:nctx] {
			ctx = append(ctx, g.names[i])
		}
		a, b := g.names[perm[nctx]], g.names[perm[nctx+1]]
		if g.r.IntN(2) == 0 {
			out = append(out, discovery.Dependency{Kind: discovery.KindOFD, Context: ctx, RHS: a})
		} else {
			out = append(out, discovery.Dependency{Kind: discovery.KindOC, Context: ctx, Left: a, Right: b, Polarity: discovery.Polarity(g.r.IntN(2))})
		}
	}
	return out
}

// incRun drives an Engine and the model through random slides and
// checks, after every slide, that each dependency's count equals the
// model's (exact results) or brackets it on the same side of every cut
// (skipped ones).
func incRun(t testing.TB, seed uint64, steps int, exact bool) (skipped int) {
	g := newIncGen(seed, 3+int(seed%4))
	deps := g.deps(1 + g.r.IntN(10))
	opts := Options{Exact: exact}
	switch g.r.IntN(4) {
	case 0:
		opts.SortedMin = 2 // every class kept sorted
	case 1:
		opts.SortedMin = 3 + g.r.IntN(12)
	}
	if g.r.IntN(3) == 0 {
		opts.MaxStale = 1 + g.r.IntN(20)
	}
	opts.RecountBudget = []int{-1, 0, 0, 5, 1 << 30}[g.r.IntN(5)]
	switch g.r.IntN(4) {
	case 0:
		opts.Typing.OrderText = true
	case 1:
		opts.Typing.Ordinal = map[string][]string{g.names[0]: nil} // by bytes, never temporal
	}
	e, err := New(deps, opts)
	if err != nil {
		t.Fatal(err)
	}
	if g.r.IntN(2) == 0 {
		withSlots(e, 2) // force the ring to grow
	}
	if g.r.IntN(2) == 0 {
		e.tune.scratchSlack = 0 // classes keep their own arrays when merging
	}
	if g.r.IntN(2) == 0 {
		e.tune.batchRows = 1 + g.r.IntN(5) // values interned while appending, not only at the check
	}
	if g.r.IntN(2) == 0 {
		e.tune.presortMin = 1 + g.r.IntN(3) // backlogs presorted at the checks that skip them
	}
	if g.r.IntN(2) == 0 {
		e.tune.parallelMin = 0 // every check's recounts on two goroutines (with two cores)
	}
	if g.r.IntN(2) == 0 {
		e.tune.flushParallelMin = 0 // every phase of flush and settle on two goroutines (with two cores)
	}
	if g.r.IntN(2) == 0 {
		e.tune.fdStride = 2 + g.r.IntN(8) // FD blocks of 0 to 3 pairs, out of line from 2 to 9 rows
	}
	if g.r.IntN(2) == 0 {
		e.tune.nodeChunk = 1 + g.r.IntN(8) // a slide's rows reach each node in several chunks
	}
	if g.r.IntN(2) == 0 {
		e.tune.fitMax = g.r.IntN(4) // A full at once, or after a few rows: the rest are misfits
	}
	if g.r.IntN(2) == 0 {
		e.tune.floorMax = g.r.IntN(4) // floors of a few pairs at most: larger classes keep none
	}
	if g.r.IntN(2) == 0 {
		// Counted classes never (0), always (1), or as their distinct
		// pairs come and go.
		e.tune.countedRatio = g.r.IntN(4)
	}
	at := make([]int, len(g.names)) // engine column of each model column
	for i, name := range g.names {
		at[i] = e.Column(name)
	}
	if g.r.IntN(2) == 0 {
		e.tune.column.LabelStride = uint64(1 + g.r.IntN(4)) // force relabels
		retune(e)
	}
	m := &incModel{names: g.names, typing: opts.Typing}
	feed := newIncFeed(seed, e, at)
	maxRows := 2 + g.r.IntN(60)
	for step := 0; step < steps; step++ {
		if g.r.IntN(10) == 0 {
			deps = g.deps(1 + g.r.IntN(10))
			if err := e.SetDependencies(deps); err != nil {
				t.Fatal(err)
			}
		}
		// Sometimes two slides between checks: rows may arrive and leave
		// before a check sees them.
		for round := 1 + g.r.IntN(2); round > 0; round-- {
			out := g.r.IntN(maxRows/2 + 2)
			out = min(out, len(m.rows))
			e.Evict(out)
			feed.evict(out)
			m.rows = m.rows[out:]
			in := g.r.IntN(maxRows/2 + 2)
			for k := 0; k < in; k++ {
				if g.r.IntN(50) == 0 {
					e.Column(fmt.Sprintf("extra%d.%d", step, k)) // NULL in every row: batched rows too
				}
				row := g.row()
				feed.append(row)
				m.rows = append(m.rows, row)
			}
		}
		if g.r.IntN(5) == 0 {
			checkDictColumns(t, e, m, at)
		}
		var cuts []int
		for k := g.r.IntN(4); k > 0; k-- {
			cuts = append(cuts, g.r.IntN(len(m.rows)+1))
		}
		got := e.Check(cuts)
		checkFDState(t, e)
		checkKeys(t, e, m, rand.New(rand.NewPCG(seed, uint64(step))))
		checkRing(t, e)
		want := m.removals(t, deps)
		if e.Len() != len(m.rows) {
			t.Fatalf("seed %d step %d: %d rows, model %d", seed, step, e.Len(), len(m.rows))
		}
		for i, r := range got {
			w := want[i]
			if r.Exact && r.Removals != w {
				t.Fatalf("seed %d step %d (%d rows): %s: %d removals, full recomputation %d",
					seed, step, len(m.rows), deps[i], r.Removals, w)
			}
			if exact && !r.Exact {
				t.Fatalf("seed %d step %d: %s skipped with Exact set", seed, step, deps[i])
			}
			if r.Exact {
				continue
			}
			skipped++
			if w < r.Low || w > r.High {
				t.Fatalf("seed %d step %d: %s: %d removals outside the bounds [%d, %d]", seed, step, deps[i], w, r.Low, r.High)
			}
			for _, c := range cuts {
				if (w > c) != (r.Removals > c) {
					t.Fatalf("seed %d step %d: %s skipped with %d removals (full %d) across cut %d", seed, step, deps[i], r.Removals, w, c)
				}
			}
		}
	}
	return skipped
}

// incCoding is how incFeed hands rows over.
type incCoding int

const (
	incStrings     incCoding = iota // Append
	incWindowCodes                  // AppendCoded, coded as a window codes them (incDict)
	incRandomCodes                  // AppendCoded, each value under a random code
	incMixed                        // row by row Append or AppendCoded (window codes)
	incCodings
)

// incFeed hands the differential tests' rows to an Engine as strings
// (Append) or dictionary-coded (AppendCoded) in the ways a caller may code
// them: as the monitor's window does, whose codes are freed when their
// last row leaves it and reused at once for the next new value, while the
// engine still holds the old rows until its check (and whose strings are
// allocated per code, so a value that comes back is a new string); or
// adversarially, every value under a code drawn at random, as the same
// string or a copy of it. Either way the engine must count what Append
// gives.
type incFeed struct {
	r      *rand.Rand
	e      *Engine
	coding incCoding
	at     []int // engine column of each model column
	values []string
	nulls  []bool
	codes  []uint32
	dicts  []incDict
	held   [][]uint32 // the window codes of the model's rows, oldest first
}

// incDict is one column's dictionary as the monitor's window keeps it
// (window.Window): codes reference counted, a freed code reused at once.
type incDict struct {
	code map[string]uint32
	dict []string // code-1 → value, a string of its own
	refs []int
	free []uint32
}

// newIncFeed returns the feed of a run: its own random source (the run's
// draws stay as they were), a random coding and, sometimes, so low a
// bound on the hinted codes that most are not (dict.Tuning.HintMax).
func newIncFeed(seed uint64, e *Engine, at []int) *incFeed {
	r := rand.New(rand.NewPCG(seed, 0xc0de))
	f := &incFeed{r: r, e: e, coding: incCoding(r.IntN(int(incCodings))), at: at,
		values: make([]string, len(at)), nulls: make([]bool, len(at)), codes: make([]uint32, len(at)),
		dicts: make([]incDict, len(at))}
	for i := range f.dicts {
		f.dicts[i] = newIncDict()
	}
	if r.IntN(4) == 0 {
		e.tune.column.HintMax = uint32(1 + r.IntN(3))
		retune(e)
	}
	return f
}

func (f *incFeed) append(row []incCell) {
	held := make([]uint32, len(row))
	for i, c := range row {
		j := f.at[i]
		f.values[j], f.nulls[j], f.codes[j] = c.v, c.null, 0
		if c.null {
			continue
		}
		switch f.coding {
		case incWindowCodes, incMixed:
			held[i], f.values[j] = f.dicts[i].intern(c.v)
			f.codes[j] = held[i]
		case incRandomCodes:
			f.codes[j] = uint32(1 + f.r.IntN(4))
			if f.r.IntN(2) == 0 {
				f.values[j] = strings.Clone(c.v)
			}
		}
	}
	f.held = append(f.held, held)
	if f.coding == incStrings || f.coding == incMixed && f.r.IntN(2) == 0 {
		f.e.Append(f.values, f.nulls)
	} else {
		f.e.AppendCoded(f.values, f.codes)
	}
}

// evict releases the window codes of the k oldest rows.
func (f *incFeed) evict(k int) {
	for _, held := range f.held[:k] {
		for i, code := range held {
			if code != 0 {
				f.dicts[i].release(code)
			}
		}
	}
	f.held = f.held[k:]
}

func newIncDict() incDict { return incDict{code: map[string]uint32{}} }

// intern returns v's code and string, taking a reference; a new value
// takes the code freed last.
func (d *incDict) intern(v string) (uint32, string) {
	code, ok := d.code[v]
	if !ok {
		if k := len(d.free); k > 0 {
			code = d.free[k-1]
			d.free = d.free[:k-1]
			d.dict[code-1] = strings.Clone(v)
		} else {
			d.dict = append(d.dict, strings.Clone(v))
			d.refs = append(d.refs, 0)
			code = uint32(len(d.dict))
		}
		d.code[v] = code
	}
	d.refs[code-1]++
	return code, d.dict[code-1]
}

func (d *incDict) release(code uint32) {
	if d.refs[code-1]--; d.refs[code-1] == 0 {
		delete(d.code, d.dict[code-1])
		d.dict[code-1] = ""
		d.free = append(d.free, code)
	}
}

// checkDictColumns checks that the window Engine.DictColumns hands
// over (before the check has flushed the rows appended since the last
// one) holds the model's values.
func checkDictColumns(t testing.TB, e *Engine, m *incModel, at []int) {
	cols := e.DictColumns()
	for i := range m.names {
		dc := cols[at[i]]
		if len(dc.Codes) != len(m.rows) {
			t.Fatalf("DictColumns: %s has %d rows, the window %d", dc.Name, len(dc.Codes), len(m.rows))
		}
		for r, row := range m.rows {
			code, cell := dc.Codes[r], row[i]
			if cell.null != (code == 0) || !cell.null && dc.Dict[code-1] != cell.v {
				t.Fatalf("DictColumns: %s row %d: code %d, want %+v", dc.Name, r, code, cell)
			}
		}
	}
	for _, dc := range cols[len(m.names):] {
		for r, code := range dc.Codes {
			if code != 0 {
				t.Fatalf("DictColumns: added column %s has a value in row %d", dc.Name, r)
			}
		}
	}
	// Named columns (here every other one, named in reverse, and a name
	// it does not know): those of the full list, in its order.
	var names, want []string
	for i := len(cols) - 1; i >= 0; i-- {
		if i%2 == 1 {
			names = append(names, cols[i].Name)
		}
	}
	names = append(names, "no such column")
	for i, dc := range cols {
		if i%2 == 1 {
			want = append(want, dc.Name)
		}
	}
	some := e.DictColumns(names...)
	if len(some) != len(want) {
		t.Fatalf("DictColumns(%q): %d columns, want %d", names, len(some), len(want))
	}
	for k, dc := range some {
		full := cols[2*k+1]
		if dc.Name != want[k] || !slices.Equal(dc.Codes, full.Codes) || !slices.Equal(dc.Dict, full.Dict) {
			t.Fatalf("DictColumns(%q): column %d is %s, not as DictColumns() gives %s", names, k, dc.Name, full.Name)
		}
	}
}

// counts returns the counts of sizes 0..m of class cx, m its largest
// size (the count of size 0 is 0): what checkFDState compares.
func (f *fdCheck) counts(cx uint32) []uint32 {
	if int(cx+1)*int(f.stride) > len(f.blk) {
		return []uint32{0}
	}
	b := f.blk[cx*f.stride : (cx+1)*f.stride]
	m := b[0]
	out := make([]uint32, m+1)
	switch {
	case m < f.stride:
		copy(out[1:], b[1:m+1])
	case b[1] != 0:
		copy(out[1:], f.big[b[1]-1][1:m+1])
	default:
		f.fromPairs(b, out)
	}
	return out
}

// checkFDState checks that each FD's state, updated row by row, is what
// rebuilding it from its nodes gives.
func checkFDState(t testing.TB, e *Engine) {
	t.Helper()
	for _, f := range e.fds {
		g := &fdCheck{x: f.x, xa: f.xa}
		g.rebuild(int(f.stride))
		if g.removals != f.removals {
			t.Fatalf("FD %s: %d removals, rebuilt %d", f.xa.key, f.removals, g.removals)
		}
		for cx := range uint32(max(len(f.blk), len(g.blk)) / int(f.stride)) {
			if got, want := f.counts(cx), g.counts(cx); !slices.Equal(got[1:], want[1:]) {
				t.Fatalf("FD %s (stride %d) class %d: counts %v, rebuilt %v", f.xa.key, f.stride, cx, got, want)
			}
		}
	}
}

// withSlots gives an empty Incremental a ring of the given capacity (a
// power of two), to make it grow early.
func withSlots(e *Engine, slots int) {
	e.mask = uint32(slots - 1)
	for _, c := range e.cols {
		c.Codes = make([]uint32, slots)
	}
	for _, nd := range e.nodes {
		if nd.classOf != nil {
			nd.classOf = make([]uint32, slots)
		}
	}
}

func TestIncrementalMatchesFullRecomputation(t *testing.T) {
	t.Parallel()
	seeds := 150
	if testing.Short() {
		seeds = 60
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		incRun(t, seed, 40, true)
	}
}

func TestIncrementalSkipsOnlyWhatCannotChange(t *testing.T) {
	t.Parallel()
	seeds := 150
	if testing.Short() {
		seeds = 60
	}
	skipped := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		skipped += incRun(t, 1000+seed, 40, false)
	}
	if skipped == 0 {
		t.Fatal("no check skipped anything: the skip path is not tested")
	}
	t.Logf("%d skipped counts checked against full recomputation", skipped)
}

func FuzzIncremental(f *testing.F) {
	f.Add(uint64(1), uint8(30), false)
	f.Add(uint64(7), uint8(50), true)
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8, exact bool) {
		incRun(t, seed, int(steps%64), exact)
	})
}

// TestSortPairs checks the OC recounts' specialised sort against
// slices.SortFunc, on lengths around its insertion-sort cut and domains
// from all-equal to all-distinct.
func TestSortPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 3000; n += 1 + n/10 {
		for _, dom := range []int{1, 2, 5, 1000} {
			ps := make([]ocPair, n)
			for i := range ps {
				ps[i] = ocPair{LA: uint64(r.IntN(dom)), LB: uint64(r.IntN(dom))}
			}
			if dom == 5 {
				slices.SortFunc(ps, comparePairs) // already sorted
			}
			want := slices.Clone(ps)
			slices.SortFunc(want, comparePairs)
			sortPairs(ps)
			if !slices.Equal(ps, want) {
				t.Fatalf("%d pairs over %d values: sorted wrong", n, dom)
			}
		}
	}
}

// retune gives the columns e has the knobs of e.tune.column (the columns
// it adds later take them anyway).
func retune(e *Engine) {
	for _, c := range e.cols {
		c.Retune(e.tune.column)
	}
}
