package incremental

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery/incremental/internal/dict"

	"github.com/odwatch/odwatch/discovery"
)

// prepTwin is one engine of TestPrepareDoesNotChangeCounts with its feed.
type prepTwin struct {
	e    *Engine
	feed *incFeed
	at   []int
}

// TestPrepareDoesNotChangeCounts runs twin engines over the same random
// stream and the same tracked sets (as incRun draws them: typing
// switches, relabels, polarities, contexts of 0-3 columns): one never
// prepares, the other prepares the next tracked set at a random check
// before it is tracked, and random sets that are never tracked. Every
// check's results, skipped counts and bounds included, must be the same
// (what a dependency reports does not depend on what was prepared or
// when), and the exact ones equal a full recomputation; a newly tracked
// dependency is exact at its first check.
func TestPrepareDoesNotChangeCounts(t *testing.T) {
	t.Parallel()
	seeds := 150
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		prepareRun(t, seed, 60)
	}
}

func prepareRun(t *testing.T, seed uint64, steps int) {
	g := newIncGen(seed, 3+int(seed%4))
	deps := g.deps(1 + g.r.IntN(6))
	opts := Options{SortedMin: []int{0, 2, 4}[g.r.IntN(3)], RecountBudget: []int{-1, 0, 5}[g.r.IntN(3)]}
	if g.r.IntN(3) == 0 {
		opts.MaxStale = 1 + g.r.IntN(20)
	}
	if g.r.IntN(3) == 0 {
		opts.Typing.OrderText = true
	}
	column := dict.DefaultTuning()
	if g.r.IntN(2) == 0 {
		column.LabelStride = uint64(1 + g.r.IntN(4)) // force relabels
	}
	presortMin := []int{defaultTuning().presortMin, 1, 2}[g.r.IntN(3)]
	countedRatio := []int{defaultTuning().countedRatio, 0, 1, 2}[g.r.IntN(4)] // counted classes: as by default, never, always, often
	var twins [2]prepTwin
	for i := range twins {
		e, err := New(deps, opts)
		if err != nil {
			t.Fatal(err)
		}
		e.tune.presortMin = presortMin
		e.tune.countedRatio = countedRatio
		e.tune.column = column
		retune(e)
		tw := prepTwin{e: e, at: make([]int, len(g.names))}
		for j, name := range g.names {
			tw.at[j] = e.Column(name)
		}
		tw.feed = newIncFeed(seed, e, tw.at)
		twins[i] = tw
	}
	m := &incModel{names: g.names, typing: opts.Typing}
	next := g.deps(1 + g.r.IntN(6))
	switchAt, prepAt := 0, 0
	plan := func(step int) {
		switchAt = step + 1 + g.r.IntN(8)
		prepAt = step + g.r.IntN(switchAt-step+1) // at switchAt: never prepared in time
	}
	plan(0)
	prepared := 0
	fresh := map[string]bool{}
	for step := 0; step < steps; step++ {
		if step == switchAt {
			old := map[string]bool{}
			for _, d := range deps {
				old[stateKey(d)] = true
			}
			deps, fresh = next, map[string]bool{}
			for _, d := range deps {
				fresh[d.String()] = !old[stateKey(d)]
			}
			for _, tw := range twins {
				if err := tw.e.SetDependencies(deps); err != nil {
					t.Fatal(err)
				}
			}
			next = g.deps(1 + g.r.IntN(6))
			plan(step)
		}
		prep := twins[1].e
		switch {
		case step == prepAt:
			n, err := prep.Prepare(next)
			if err != nil {
				t.Fatal(err)
			}
			prepared += n
		case g.r.IntN(6) == 0:
			// Prepared, never tracked (dropped at the next Prepare).
			if _, err := prep.Prepare(g.deps(1 + g.r.IntN(4))); err != nil {
				t.Fatal(err)
			}
		}
		out := min(g.r.IntN(20), len(m.rows))
		in := g.r.IntN(22)
		m.rows = m.rows[out:]
		for _, tw := range twins {
			tw.e.Evict(out)
			tw.feed.evict(out)
		}
		for range in {
			row := g.row()
			m.rows = append(m.rows, row)
			for _, tw := range twins {
				tw.feed.append(row)
			}
		}
		var cuts []int
		for k := g.r.IntN(4); k > 0; k-- {
			cuts = append(cuts, g.r.IntN(len(m.rows)+1))
		}
		plain, got := twins[0].e.Check(cuts), twins[1].e.Check(cuts)
		if !reflect.DeepEqual(plain, got) {
			t.Fatalf("seed %d step %d: results with Prepare differ:\n without %+v\n with    %+v", seed, step, plain, got)
		}
		want := m.removals(t, deps)
		for i, r := range got {
			if r.Exact && r.Removals != want[i] {
				t.Fatalf("seed %d step %d: %s: %d removals, full recomputation %d", seed, step, deps[i], r.Removals, want[i])
			}
			if fresh[deps[i].String()] && !r.Exact {
				t.Fatalf("seed %d step %d: %s newly tracked and not counted exactly", seed, step, deps[i])
			}
		}
		fresh = nil
	}
	if seed == 0 && prepared == 0 {
		t.Fatalf("seed %d: nothing prepared", seed)
	}
}

// stateKey is what a dependency's state in an Engine is keyed by: its
// context as a set, its columns (an OC's as a set) and polarity.
func stateKey(d discovery.Dependency) string {
	ctx := slices.Clone(d.Context)
	slices.Sort(ctx)
	ctx = slices.Compact(ctx)
	if d.Kind == discovery.KindOFD {
		return fmt.Sprint(ctx, "->", d.RHS)
	}
	a, b := min(d.Left, d.Right), max(d.Left, d.Right)
	return fmt.Sprint(ctx, a, "~", b, d.Polarity)
}

// TestPrepareBuildsAhead: the dependencies prepared are not reported, their
// state is built at the check after Prepare, and the check after
// SetDependencies tracks them builds nothing from the whole window (OCs
// are recounted from their kept sorted classes), with counts equal to a
// full recomputation.
func TestPrepareBuildsAhead(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	names := []string{"a", "b", "c", "d"}
	row := func() []string {
		a := r.IntN(8)
		return []string{fmt.Sprint(a), fmt.Sprint(2*a + r.IntN(2)), fmt.Sprint(r.IntN(3)), fmt.Sprint(r.IntN(50))}
	}
	tracked := []discovery.Dependency{{Kind: discovery.KindOFD, Context: []string{"a"}, RHS: "c"}}
	later := []discovery.Dependency{
		{Kind: discovery.KindOC, Context: []string{"c"}, Left: "a", Right: "b"},
		{Kind: discovery.KindOC, Context: []string{"c", "d"}, Left: "a", Right: "b", Polarity: discovery.Desc},
		{Kind: discovery.KindOFD, Context: []string{"c", "d"}, RHS: "a"},
		{Kind: discovery.KindOC, Context: nil, Left: "a", Right: "d"},
	}
	e, err := New(tracked, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &incModel{names: names}
	at := make([]int, len(names))
	for i, n := range names {
		at[i] = e.Column(n)
	}
	engineRow := make([]string, len(names))
	slide := func(k int) {
		out := min(k, len(m.rows))
		e.Evict(out)
		m.rows = m.rows[out:]
		for range k {
			vals := row()
			for i, v := range vals {
				engineRow[at[i]] = v
			}
			e.Append(engineRow, nil)
			cells := make([]incCell, len(vals))
			for i, v := range vals {
				cells[i].v = v
			}
			m.rows = append(m.rows, cells)
		}
	}
	slide(2000)
	if res := e.Check(nil); len(res) != 1 || res[0].Removals != m.removals(t, tracked)[0] {
		t.Fatalf("%+v, want 1 result of %d", res, m.removals(t, tracked)[0])
	}
	if n, err := e.Prepare(later); err != nil || n != len(later) {
		t.Fatalf("Prepare: %d prepared, %v; want %d", n, err, len(later))
	}
	slide(100)
	res := e.Check(nil)
	if len(res) != 1 {
		t.Fatalf("%d results with %d prepared, want the 1 tracked", len(res), len(later))
	}
	if b := e.LastBuilds(); b.Nodes == 0 || b.FDs == 0 || b.Rebuilt != 3 {
		t.Fatalf("check after Prepare built %+v, want nodes, FDs and 3 OCs", b)
	}
	for range 3 {
		slide(100)
		e.Check([]int{5, 50})
		if b := e.LastBuilds(); b != (Builds{}) {
			t.Fatalf("check of prepared state built %+v, want nothing", b)
		}
	}
	deps := append(tracked, later...)
	if err := e.SetDependencies(deps); err != nil {
		t.Fatal(err)
	}
	slide(100)
	res = e.Check([]int{5, 50})
	if b := e.LastBuilds(); b != (Builds{Restarted: 3}) {
		t.Fatalf("check that tracks the prepared ones built %+v, want 3 OCs restarted from kept classes only", b)
	}
	want := m.removals(t, deps)
	for i, r := range res {
		if !r.Exact || r.Removals != want[i] {
			t.Fatalf("%s: %d removals (exact %v), full recomputation %d", deps[i], r.Removals, r.Exact, want[i])
		}
	}
}

// TestPrepareContextGainedRestartsSubtree: an OC prepared on context {c}
// makes {c} keep member lists ahead; an OC on {c, d} is tracked, then the
// one on {c}. Without Prepare {c} starts keeping members only then, and
// the rebuild makes the OC on {c, d} start over; with Prepare it must

// TestSetDependenciesDropsUnpreparable: a prepared OC on a text column is
// kept while a tracked OC orders that column; once SetDependencies drops
// the tracked OC, the prepared one is no longer kept (Prepare would refuse
// it now), instead of starting over at every check without labels.
func TestSetDependenciesDropsUnpreparable(t *testing.T) {
	ordering := discovery.Dependency{Kind: discovery.KindOC, Left: "n", Right: "s"}
	fd := discovery.Dependency{Kind: discovery.KindOFD, Context: []string{"n"}, RHS: "s"}
	prepared := discovery.Dependency{Kind: discovery.KindOC, Context: []string{"k"}, Left: "n", Right: "s", Polarity: discovery.Desc}
	e, err := New([]discovery.Dependency{ordering, fd}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"n", "s", "k"}
	row := make([]string, len(names))
	for i := range 500 {
		for j, name := range names {
			row[e.Column(name)] = []string{fmt.Sprint(i % 37), fmt.Sprintf("t%03d", i%37), fmt.Sprint(i % 3)}[j]
		}
		e.Append(row, nil)
	}
	e.Check(nil)
	if n, err := e.Prepare([]discovery.Dependency{prepared}); err != nil || n != 1 {
		t.Fatalf("Prepare: %d prepared, %v; want 1", n, err)
	}
	e.Check(nil)
	if err := e.SetDependencies([]discovery.Dependency{fd}); err != nil {
		t.Fatal(err)
	}
	if len(e.prep) != 0 {
		t.Fatalf("%d prepared after the OC ordering s left, want 0", len(e.prep))
	}
	for range 3 {
		e.Evict(10)
		for i := range 10 {
			row[e.Column("n")], row[e.Column("s")], row[e.Column("k")] = fmt.Sprint(i), fmt.Sprintf("t%03d", i), "0"
			e.Append(row, nil)
		}
		e.Check(nil)
		if b := e.LastBuilds(); b.Rebuilt != 0 {
			t.Fatalf("check built %+v, want no OC started over", b)
		}
	}
}

// start over too (promote), so that both engines report the same.
func TestPrepareContextGainedRestartsSubtree(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	onC := discovery.Dependency{Kind: discovery.KindOC, Context: []string{"c"}, Left: "a", Right: "b"}
	onCD := discovery.Dependency{Kind: discovery.KindOC, Context: []string{"c", "d"}, Left: "a", Right: "b"}
	var twins [2]*Engine
	for i := range twins {
		e, err := New(nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a", "b", "c", "d"} {
			e.Column(n)
		}
		twins[i] = e
	}
	check := func(step string, cuts []int) []Result {
		t.Helper()
		vals := make([][]string, 20)
		for i := range vals {
			a := r.IntN(100)
			b := a
			if r.IntN(10) == 0 {
				b = r.IntN(100)
			}
			vals[i] = []string{fmt.Sprint(a), fmt.Sprint(b), fmt.Sprint(r.IntN(2)), fmt.Sprint(r.IntN(2))}
		}
		var res [2][]Result
		for i, e := range twins {
			e.Evict(max(e.Len()+len(vals)-200, 0))
			for _, v := range vals {
				e.Append(v, nil)
			}
			res[i] = e.Check(cuts)
		}
		if !reflect.DeepEqual(res[0], res[1]) {
			t.Fatalf("%s: results with Prepare differ:\n without %+v\n with    %+v", step, res[0], res[1])
		}
		return res[1]
	}
	for range 10 {
		check("fill", nil)
	}
	if n, err := twins[1].Prepare([]discovery.Dependency{onC}); err != nil || n != 1 {
		t.Fatalf("Prepare: %d, %v", n, err)
	}
	check("prepared", nil)
	for _, e := range twins {
		if err := e.SetDependencies([]discovery.Dependency{onCD}); err != nil {
			t.Fatal(err)
		}
	}
	check("tracked {c, d}", []int{5})
	skipped := false
	for range 3 {
		res := check("skipping", []int{300})
		skipped = skipped || !res[0].Exact
	}
	if !skipped {
		t.Fatal("the OC on {c, d} never skipped: the test does not show it starting over")
	}
	for _, e := range twins {
		if err := e.SetDependencies([]discovery.Dependency{onCD, onC}); err != nil {
			t.Fatal(err)
		}
	}
	res := check("tracked {c}", []int{300})
	if !res[0].Exact {
		t.Fatal("the OC on {c, d} did not start over when {c} started keeping members")
	}
}

// BenchmarkMergeCheck times the check that starts tracking new rules (a
// discovery's merge) on BenchmarkCheck's stream: a 100k-record window, the
// first 40 of its 50 dependencies tracked, the other 10 tracked from the
// timed check (after a 1k-record slide), either built there ("at-merge",
// as without Prepare) or prepared five slides before ("prepared"). It
// reports the merge check's time (merge-ms), a plain slide's check before
// it (slide-ms), and what the merge check built. Run it with -benchtime=3x
// (each run fills its own window).
func BenchmarkMergeCheck(b *testing.B) {
	const window, slide = 100_000, 1_000
	all := benchDeps()
	tracked, merged := all[:40], all[40:]
	for _, prepared := range []bool{false, true} {
		name := "at-merge"
		if prepared {
			name = "prepared"
		}
		b.Run(name, func(b *testing.B) {
			var merge, plain time.Duration
			var builds Builds
			for range b.N {
				e, f := benchWindow(b, window, tracked, Options{}, streamCuts)
				rows := newBenchRows(slide)
				if prepared {
					if _, err := e.Prepare(merged); err != nil {
						b.Fatal(err)
					}
				}
				for range 5 {
					plain += f.timedSlide(slide, rows, streamCuts(window))
				}
				if err := e.SetDependencies(all); err != nil {
					b.Fatal(err)
				}
				merge += f.timedSlide(slide, rows, streamCuts(window))
				builds = e.LastBuilds()
			}
			b.ReportMetric(float64(merge.Microseconds())/1e3/float64(b.N), "merge-ms")
			b.ReportMetric(float64(plain.Microseconds())/1e3/float64(5*b.N), "slide-ms")
			b.ReportMetric(float64(builds.Nodes), "nodes-built")
			b.ReportMetric(float64(builds.FDs), "fds-built")
			b.ReportMetric(float64(builds.Rebuilt), "ocs-sorted")
			b.ReportMetric(float64(builds.Restarted), "ocs-restarted")
		})
	}
}
