package discovery

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery/internal/validate"
)

// ocCase is a hand-made two-column table (A, B) with the expected removals
// of the empty-context OC A ~ B for both polarities.
type ocCase struct {
	name        string
	a, b        []int
	asc, desc   int
	iterAtLeast int
}

func TestOCValidators(t *testing.T) {
	N := nullValue
	tests := []ocCase{
		{name: "empty table", a: []int{}, b: []int{}},
		{name: "single row", a: []int{1}, b: []int{5}},
		{name: "all equal", a: []int{3, 3, 3, 3}, b: []int{7, 7, 7, 7}},
		{name: "equal A never swaps", a: []int{1, 1, 1}, b: []int{3, 1, 2}},
		{name: "equal B never swaps", a: []int{3, 1, 2}, b: []int{1, 1, 1}, asc: 0, desc: 0},
		{name: "increasing", a: []int{1, 2, 3, 4}, b: []int{10, 20, 30, 40}, desc: 3},
		{name: "decreasing", a: []int{1, 2, 3, 4}, b: []int{40, 30, 20, 10}, asc: 3},
		{name: "one outlier", a: []int{1, 2, 3, 4, 5}, b: []int{1, 2, 9, 4, 5}, asc: 1, desc: 3},
		{name: "ties in A with spread B", a: []int{1, 1, 2, 2}, b: []int{1, 5, 2, 6}, asc: 1, desc: 2},
		{name: "NULLs are lowest", a: []int{N, 1, 2}, b: []int{N, 1, 2}, desc: 2},
		{name: "NULL in B breaks order", a: []int{1, 2, 3}, b: []int{1, N, 3}, asc: 1, desc: 1},
		// Removing the tuple with the most swaps first is not optimal here:
		// the iterative baseline needs 4 removals where LNDS (2, 4, 5)
		// needs 3.
		{name: "iterative over-estimates", a: []int{1, 2, 3, 4, 5, 6}, b: []int{2, 5, 4, 1, 5, 3}, asc: 3, desc: 3, iterAtLeast: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := tableFromInts([][]int{tc.a, tc.b})
			p := validate.FullPartition(tab.Rows)
			a, b := &tab.Columns[0], &tab.Columns[1]
			v := validate.NewValidator()
			want := [2]int{tc.asc, tc.desc}
			for pol := Asc; pol <= Desc; pol++ {
				if got := v.OCRemovals(p, a, b, pol, -1); got != want[pol] {
					t.Errorf("%v: LIS %d, want %d", pol, got, want[pol])
				}
				if got := len(validate.OCRemovalRows(p, a, b, pol)); got != want[pol] {
					t.Errorf("%v: removal rows %d, want %d", pol, got, want[pol])
				}
				iter := v.OCRemovalsIterative(p, a, b, pol, -1)
				if iter < want[pol] {
					t.Errorf("%v: iterative %d < LIS %d", pol, iter, want[pol])
				}
				// exact at budget 0: valid iff no removal needed
				if got := v.OCRemovals(p, a, b, pol, 0); (got == 0) != (want[pol] == 0) {
					t.Errorf("%v: budget 0 gives %d, exact %d", pol, got, want[pol])
				}
			}
			if tc.iterAtLeast > 0 {
				if got := v.OCRemovalsIterative(p, a, b, Asc, -1); got < tc.iterAtLeast {
					t.Errorf("iterative asc %d, want >= %d", got, tc.iterAtLeast)
				}
			}
		})
	}
}

func TestOCWithinContext(t *testing.T) {
	// Context c0 splits the rows in two classes; within each, c1 ~ c2 holds
	// asc, but not across them.
	tab := tableFromInts([][]int{
		{1, 1, 1, 2, 2, 2},
		{1, 2, 3, 1, 2, 3},
		{4, 5, 6, 1, 2, 3},
	})
	v := validate.NewValidator()
	if got := v.OCRemovals(validate.FullPartition(tab.Rows), &tab.Columns[1], &tab.Columns[2], Asc, -1); got != 2 {
		t.Errorf("empty context: %d removals, want 2", got)
	}
	p := validate.ColumnPartition(&tab.Columns[0])
	if got := v.OCRemovals(p, &tab.Columns[1], &tab.Columns[2], Asc, -1); got != 0 {
		t.Errorf("context c0: %d removals, want 0", got)
	}
	if got, want := p.Score(), 18.0/36; got != want {
		t.Errorf("score %v, want %v", got, want)
	}
}

func TestOFDValidator(t *testing.T) {
	N := nullValue
	tests := []struct {
		name     string
		ctx, a   []int
		removals int
		rows     []int
	}{
		{"empty", []int{}, []int{}, 0, nil},
		{"single row", []int{1}, []int{1}, 0, nil},
		{"holds", []int{1, 1, 2, 2}, []int{5, 5, 6, 6}, 0, nil},
		{"one off", []int{1, 1, 1, 2, 2}, []int{5, 5, 7, 6, 6}, 1, []int{2}},
		{"NULL is a value", []int{1, 1, 1}, []int{N, N, 3}, 1, []int{2}},
		{"NULL context groups", []int{N, N, 1}, []int{1, 2, 3}, 1, []int{1}},
		{"tie picks lowest value", []int{1, 1}, []int{9, 8}, 1, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := tableFromInts([][]int{tc.ctx, tc.a})
			p := validate.ColumnPartition(&tab.Columns[0])
			v := validate.NewValidator()
			if got := v.OFDRemovals(p, &tab.Columns[1], -1); got != tc.removals {
				t.Errorf("removals %d, want %d", got, tc.removals)
			}
			if got := validate.OFDRemovalRows(p, &tab.Columns[1]); !slices.Equal(got, tc.rows) {
				t.Errorf("rows %v, want %v", got, tc.rows)
			}
		})
	}
}

func TestListOD(t *testing.T) {
	tests := []struct {
		name     string
		cols     [][]int
		lhs, rhs []string
		removals int
	}{
		// [c0] -> [c1] holds: c1 is a non-decreasing function of c0.
		{"holds", [][]int{{1, 2, 2, 3}, {1, 4, 4, 5}}, []string{"c0"}, []string{"c1"}, 0},
		// Equal LHS with different RHS is an FD violation: one must go.
		{"fd violation", [][]int{{1, 2, 2, 3}, {1, 4, 3, 5}}, []string{"c0"}, []string{"c1"}, 1},
		// An OC would accept the split (A ties never swap); the list OD not.
		{"ties are violations", [][]int{{1, 1}, {1, 2}}, []string{"c0"}, []string{"c1"}, 1},
		{"order violation", [][]int{{1, 2, 3}, {3, 2, 1}}, []string{"c0"}, []string{"c1"}, 2},
		// [c0,c1] -> [c2]: lexicographic on the LHS list.
		{"two lhs columns", [][]int{{1, 1, 2, 2}, {1, 2, 1, 2}, {1, 2, 3, 4}}, []string{"c0", "c1"}, []string{"c2"}, 0},
		{"two lhs columns broken", [][]int{{1, 1, 2, 2}, {2, 1, 1, 2}, {1, 2, 3, 4}}, []string{"c0", "c1"}, []string{"c2"}, 1},
		{"rhs list", [][]int{{1, 2, 3}, {1, 1, 2}, {3, 1, 1}}, []string{"c0"}, []string{"c1", "c2"}, 1},
		{"empty table", [][]int{{}, {}}, []string{"c0"}, []string{"c1"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := tableFromInts(tc.cols)
			res, err := Validate(context.Background(), tab, Dependency{Kind: KindListOD, LHSList: tc.lhs, RHSList: tc.rhs}, Options{RemovalSample: -1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Removals != tc.removals || len(res.RemovalSample) != tc.removals {
				t.Errorf("removals %d (rows %v), want %d", res.Removals, res.RemovalSample, tc.removals)
			}
			if tab.Rows > 0 && res.Score != 1 {
				t.Errorf("score %v, want 1", res.Score)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tab := tableFromInts([][]int{
		{1, 1, 1, 2, 2, 2, 3, 3},
		{1, 2, 3, 4, 5, 6, 7, 1},
		{8, 7, 6, 5, 4, 3, 2, 1},
	})
	ctx := context.Background()
	tests := []struct {
		dep      Dependency
		opts     Options
		removals int
		sample   []int
		score    float64
	}{
		{Dependency{Kind: KindOC, Context: []string{}, Left: "c1", Right: "c2", Polarity: Desc}, Options{RemovalSample: 3}, 1, []int{7}, 1},
		{Dependency{Kind: KindOC, Left: "c0", Right: "c1"}, Options{RemovalSample: -1}, 1, []int{7}, 1},
		{Dependency{Kind: KindOC, Left: "c0", Right: "c1"}, Options{Validator: ValidatorIterative, RemovalSample: -1}, 1, []int{7}, 1},
		{Dependency{Kind: KindOC, Context: []string{"c0"}, Left: "c1", Right: "c2"}, Options{RemovalSample: 1}, 4, []int{0}, 22.0 / 64},
		{Dependency{Kind: KindOFD, Context: []string{"c0"}, RHS: "c1"}, Options{RemovalSample: -1}, 5, []int{1, 2, 4, 5, 6}, 22.0 / 64},
		{Dependency{Kind: KindOFD, Context: []string{"c1"}, RHS: "c0"}, Options{}, 1, nil, 10.0 / 64},
	}
	for _, tc := range tests {
		t.Run(tc.dep.String(), func(t *testing.T) {
			res, err := Validate(ctx, tab, tc.dep, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Removals != tc.removals || !slices.Equal(res.RemovalSample, tc.sample) || res.Score != tc.score {
				t.Errorf("got removals %d sample %v score %v, want %d %v %v", res.Removals, res.RemovalSample, res.Score, tc.removals, tc.sample, tc.score)
			}
			if want := float64(tc.removals) / 8; res.Error != want {
				t.Errorf("error %v, want %v", res.Error, want)
			}
		})
	}

	for _, dep := range []Dependency{
		{Kind: KindOC, Left: "c1", Right: "nope"},
		{Kind: KindOFD, Context: []string{"nope"}, RHS: "c1"},
		{Kind: KindListOD, LHSList: []string{"c0"}, RHSList: []string{"nope"}},
	} {
		if _, err := Validate(ctx, tab, dep, Options{}); !errors.Is(err, errUnknownColumn) {
			t.Errorf("%s: err %v, want errUnknownColumn", dep, err)
		}
	}
	if _, err := Validate(ctx, tab, Dependency{Kind: Kind(9)}, Options{}); !errors.Is(err, ErrBadDependency) {
		t.Errorf("bad kind: err %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Validate(cancelled, tab, Dependency{Kind: KindOC, Left: "c0", Right: "c1"}, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

func TestRemovalBudget(t *testing.T) {
	tests := []struct {
		eps  float64
		n    int
		want int
	}{
		{0, 100, 0}, {0.1, 30, 3}, {0.29, 100, 29}, {0.05, 19, 0}, {0.05, 20, 1}, {1, 7, 7}, {-1, 7, 0}, {0.5, 0, 0},
	}
	for _, tc := range tests {
		if got := RemovalBudget(tc.eps, tc.n); got != tc.want {
			t.Errorf("RemovalBudget(%v, %d) = %d, want %d", tc.eps, tc.n, got, tc.want)
		}
	}
}

func TestValidateAllMatchesValidate(t *testing.T) {
	tab := tableFromInts([][]int{
		{1, 1, 1, 2, 2, 2, 3, 3},
		{1, 2, 3, 4, 5, 6, 7, 1},
		{8, 7, 6, 5, 4, 3, 2, 1},
	})
	deps := []Dependency{
		{Kind: KindOFD, Context: []string{"c0"}, RHS: "c1"},
		{Kind: KindOC, Context: []string{"c0"}, Left: "c1", Right: "c2", Polarity: Desc},
		{Kind: KindOC, Context: []string{"c0"}, Left: "c1", Right: "c2"},
		{Kind: KindOC, Left: "c0", Right: "c2", Polarity: Desc},
		{Kind: KindListOD, LHSList: []string{"c0", "c1"}, RHSList: []string{"c2"}},
	}
	opts := Options{RemovalSample: 2}
	all, err := ValidateAll(context.Background(), tab, deps, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range deps {
		one, err := Validate(context.Background(), tab, d, opts)
		if err != nil {
			t.Fatal(err)
		}
		if one.Removals != all[i].Removals || one.Score != all[i].Score || !slices.Equal(one.RemovalSample, all[i].RemovalSample) {
			t.Errorf("%s: ValidateAll %+v, Validate %+v", d, all[i], one)
		}
	}
	if _, err := ValidateAll(context.Background(), tab, append(deps, Dependency{Kind: KindOFD, RHS: "zz"}), opts); !errors.Is(err, errUnknownColumn) {
		t.Errorf("err %v, want errUnknownColumn", err)
	}
}

// TestValidateEachKeepsGoing: a dependency ValidateEach cannot validate
// gets its own error, and the ones after it are still measured.
func TestValidateEachKeepsGoing(t *testing.T) {
	tab := tableFromInts([][]int{{1, 1, 2, 2}, {1, 2, 3, 3}})
	good := Dependency{Kind: KindOFD, Context: []string{"c0"}, RHS: "c1"}
	deps := []Dependency{{Kind: KindOFD, RHS: "zz"}, good, {Kind: KindListOD}}
	out, errs, err := ValidateEach(context.Background(), tab, deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Validate(context.Background(), tab, good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], errUnknownColumn) || errs[1] != nil || !errors.Is(errs[2], ErrBadDependency) {
		t.Errorf("errs %v, want unknown column, nil, malformed", errs)
	}
	if out[1].Removals != want.Removals || out[1].Error != want.Error {
		t.Errorf("good dependency measured %+v, want %+v", out[1], want)
	}
}

// TestLargeClassesAgree runs the radix-sort path of the LNDS validator
// (classes above 256 and 64k rows) against the comparison-sort removal
// rows, and the budgeted validator against the exact one.
func TestLargeClassesAgree(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	n := 150_000
	cols := [][]int{make([]int, n), make([]int, n), make([]int, n)}
	for r := 0; r < n; r++ {
		cols[0][r] = rng.IntN(3)
		cols[1][r] = rng.IntN(n)
		cols[2][r] = cols[1][r] / 7
		if rng.IntN(10) == 0 {
			cols[2][r] = rng.IntN(n / 7)
		}
	}
	tab := tableFromInts(cols)
	v := validate.NewValidator()
	for _, p := range []*validate.StrippedPartition{validate.FullPartition(n), validate.ColumnPartition(&tab.Columns[0])} {
		for pol := Asc; pol <= Desc; pol++ {
			exact := v.OCRemovals(p, &tab.Columns[1], &tab.Columns[2], pol, -1)
			if rows := validate.OCRemovalRows(p, &tab.Columns[1], &tab.Columns[2], pol); len(rows) != exact {
				t.Fatalf("%v: LIS %d, removal rows %d", pol, exact, len(rows))
			}
			for _, budget := range []int{exact - 1, exact, exact + 1} {
				got := v.OCRemovals(p, &tab.Columns[1], &tab.Columns[2], pol, budget)
				if (got <= budget) != (exact <= budget) {
					t.Fatalf("%v budget %d: %d, exact %d", pol, budget, got, exact)
				}
			}
		}
	}
}

// TestSmallBClassesAgree runs the histogram paths of the LNDS validator
// (large and medium classes, one bucket per A value, B below 64 ranks;
// pairHistClass where its counters fit, smallBClass elsewhere) against the
// comparison-sort removal rows, and the budgeted validator against the
// exact one.
func TestSmallBClassesAgree(t *testing.T) {
	tests := []struct {
		name         string
		cardA, cardB int
		noise        int // one row in noise gets a random B
	}{
		{"binary B", 40, 2, 5},
		{"B of 64", 200, 64, 3},
		{"B of 63 A of 64", 64, 63, 10},
		{"both tiny", 3, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tt.cardA), uint64(tt.cardB)))
			n := 5000
			cols := [][]int{make([]int, n), make([]int, n), make([]int, n), make([]int, n)}
			for r := 0; r < n; r++ {
				cols[0][r] = rng.IntN(4)
				cols[3][r] = rng.IntN(60) // classes of ~80 rows
				cols[1][r] = rng.IntN(tt.cardA)
				cols[2][r] = cols[1][r] * tt.cardB / tt.cardA
				if rng.IntN(tt.noise) == 0 {
					cols[2][r] = rng.IntN(tt.cardB)
				}
			}
			tab := tableFromInts(cols)
			v := validate.NewValidator()
			for _, p := range []*validate.StrippedPartition{validate.FullPartition(n), validate.ColumnPartition(&tab.Columns[0]), validate.ColumnPartition(&tab.Columns[3])} {
				for pol := Asc; pol <= Desc; pol++ {
					exact := v.OCRemovals(p, &tab.Columns[1], &tab.Columns[2], pol, -1)
					if rows := validate.OCRemovalRows(p, &tab.Columns[1], &tab.Columns[2], pol); len(rows) != exact {
						t.Fatalf("%v: LIS %d, removal rows %d", pol, exact, len(rows))
					}
					for _, budget := range []int{exact - 1, exact, exact + 1} {
						got := v.OCRemovals(p, &tab.Columns[1], &tab.Columns[2], pol, budget)
						if (got <= budget) != (exact <= budget) {
							t.Fatalf("%v budget %d: %d, exact %d", pol, budget, got, exact)
						}
					}
					asc, desc := v.OCRemovalsBoth(p, &tab.Columns[1], &tab.Columns[2], -1)
					if want := [2]int{Asc: asc, Desc: desc}[pol]; want != exact {
						t.Fatalf("%v: both %d, alone %d", pol, want, exact)
					}
				}
			}
		})
	}
}

// TestValidateMatchesOracle judges each kind's measure of Validate against
// the oracle on random small tables, for every dependency of every
// context: g3 and LNDS removals, the strength gain over the direct
// subsets, Error, Reliable, and a removal sample of the asked size whose
// removal leaves an OC swap-free.
func TestValidateMatchesOracle(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 2021))
	ctx := context.Background()
	const minStrength = 0.3
	for i := range 60 {
		cols := strengthTable(rng)
		tab := tableFromInts(cols)
		n, m := tab.Rows, len(cols)
		if n == 0 {
			continue
		}
		om := measureAll(cols, n)
		om.addStrengths(cols, defaultListing.minSupport)
		// gain is an OC's Strength of docs/DESIGN.md from the oracle's
		// measures (an OFD's is om.ofdStrengthAt).
		gain := func(x uint64, measure func(y uint64) float64) float64 {
			s := measure(x)
			if s <= 0 {
				return s
			}
			g := s
			for c := range m {
				if x&(1<<c) != 0 {
					g = min(g, s-measure(x&^(1<<c)))
				}
			}
			return max(g, 0)
		}
		sample := 1 + i%3
		opts := Options{MinStrength: minStrength, RemovalSample: sample}
		check := func(d Dependency, removals int, strength float64) Result {
			t.Helper()
			r, err := Validate(ctx, tab, d, opts)
			if err != nil {
				t.Fatalf("table %d: %s: %v", i, d, err)
			}
			if r.Removals != removals || math.Abs(r.Strength-strength) > 1e-9 || r.Error != float64(removals)/float64(n) ||
				r.Reliable != (r.Strength >= minStrength) || len(r.RemovalSample) != min(sample, removals) {
				t.Fatalf("table %d: %s: removals %d strength %v error %v reliable %v sample %v, want removals %d strength %v",
					i, d, r.Removals, r.Strength, r.Error, r.Reliable, r.RemovalSample, removals, strength)
			}
			return r
		}
		for x := uint64(0); x < 1<<m; x++ {
			names := oracleContext(x, m)
			var ctxCols []int
			for c := range m {
				if x&(1<<c) != 0 {
					ctxCols = append(ctxCols, c)
				}
			}
			classes := oracleClasses(cols, n, ctxCols)
			for a := range m {
				if x&(1<<a) != 0 {
					continue
				}
				name := func(c int) string { return tab.Columns[c].Name }
				check(Dependency{Kind: KindOFD, Context: names, RHS: name(a)}, om.ofd[[2]uint64{x, uint64(a)}], om.ofdStrengthAt(x, a))
				for b := a + 1; b < m; b++ {
					if x&(1<<b) != 0 {
						continue
					}
					for pol := Asc; pol <= Desc; pol++ {
						key := func(y uint64) [4]uint64 { return [4]uint64{y, uint64(a), uint64(b), uint64(pol)} }
						r := check(Dependency{Kind: KindOC, Context: names, Left: name(a), Right: name(b), Polarity: pol}, om.oc[key(x)],
							gain(x, func(y uint64) float64 { return om.ocStrength[key(y)] }))
						if r.Removals <= sample && !swapFreeAfter(classes, cols[a], cols[b], pol, r.RemovalSample) {
							t.Fatalf("table %d: %s: removing %v leaves a swap", i, r.Dependency, r.RemovalSample)
						}
					}
				}
			}
		}
	}
}

// TestValidateUnknownColumns: a key or an equivalence on columns the table
// lacks is a one-line error naming each of them once.
func TestValidateUnknownColumns(t *testing.T) {
	t.Parallel()
	tab := tableFromInts([][]int{{1, 1, 2, 2}, {1, 2, 3, 3}})
	for text, want := range map[string]string{
		"key(c0,zip)":          `key(c0,zip): unknown column: "zip"`,
		"key(zip,city,zip)":    `key(zip,city,zip): unknown column: "zip", "city"`,
		"{zz}: c1 <-> a <-> b": `{zz}: c1 <-> a <-> b: unknown column: "zz", "a", "b"`,
		"c0 <-> c9":            `{}: c0 <-> c9: unknown column: "c9"`,
	} {
		d, err := ParseDependency(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		_, err = Validate(context.Background(), tab, d, Options{})
		if !errors.Is(err, errUnknownColumn) || err.Error() != want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want %s", text, err, want)
		}
	}
}

// TestRemovalSetsMatchValidate: RemovalSets measures what ValidateEach
// does of each dependency's removal set (its size and sample), for every
// kind, on random tables, with no sample, a sample of 2 and every row,
// and fails the same dependencies.
func TestRemovalSetsMatchValidate(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 7))
	for trial := range 300 {
		cols := randomTable(rng)
		tab := tableFromInts(cols)
		name := func() string { return "c" + strconv.Itoa(rng.IntN(len(cols))) }
		var deps []Dependency
		for range 12 {
			ctx := []string{}
			for range rng.IntN(3) {
				ctx = append(ctx, name())
			}
			switch rng.IntN(6) {
			case 0, 1:
				deps = append(deps, Dependency{Kind: KindOFD, Context: ctx, RHS: name()})
			case 2:
				deps = append(deps, Dependency{Kind: KindOC, Context: ctx, Left: name(), Right: name(), Polarity: Polarity(rng.IntN(2))})
			case 3:
				deps = append(deps, Dependency{Kind: KindKey, Set: append(ctx, name())})
			case 4:
				deps = append(deps, Dependency{Kind: KindEquivalence, Context: ctx[:min(1, len(ctx))], Set: []string{name(), name(), name()}[:2+rng.IntN(2)]})
			case 5:
				deps = append(deps, Dependency{Kind: KindListOD, LHSList: append(ctx, name()), RHSList: []string{name()}})
			}
		}
		deps = append(deps, Dependency{Kind: KindOFD, RHS: "zz"}, Dependency{Kind: KindKey})
		for _, k := range []int{0, 2, -1} {
			want, wantErrs, err := ValidateEach(context.Background(), tab, deps, Options{RemovalSample: k})
			if err != nil {
				t.Fatal(err)
			}
			got, errs, err := RemovalSets(context.Background(), tab, deps, k)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range deps {
				if (errs[i] == nil) != (wantErrs[i] == nil) {
					t.Fatalf("trial %d %s: error %v, ValidateEach's %v", trial, d, errs[i], wantErrs[i])
				}
				if got[i].Removals != want[i].Removals || !slices.Equal(got[i].Sample, want[i].RemovalSample) {
					t.Fatalf("trial %d %s sample %d: %d removals %v, ValidateEach %d %v", trial, d, k,
						got[i].Removals, got[i].Sample, want[i].Removals, want[i].RemovalSample)
				}
			}
		}
	}
}
