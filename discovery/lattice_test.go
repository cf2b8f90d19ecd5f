package discovery

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

func discoveryLines(d *Discovery) []string {
	var out []string
	for _, r := range d.Dependencies {
		out = append(out, fmt.Sprintf("%s r=%d s=%.6f", r.Dependency, r.Removals, r.Score))
	}
	slices.Sort(out)
	return out
}

// TestLatticeMatchesBruteForce is the judge of the lattice and its
// pruning: on random small tables, Discover must return exactly the
// minimal set a brute-force enumeration of docs/DESIGN.md's definitions gives,
// and every validator must agree with the O(n^2) oracle.
func TestLatticeMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 2021))
	const tables = 320
	for i := range tables {
		cols := randomTable(rng)
		tab := tableFromInts(cols)
		om := measureAll(cols, tab.Rows)
		checkValidatorsAgainstOracle(t, i, cols, tab, om)
		for _, eps := range []float64{0, 0.05, 0.1, 0.3} {
			d, err := Discover(context.Background(), tab, Options{Epsilon: eps, Workers: 1 + i%2})
			if err != nil {
				t.Fatalf("table %d eps %v: %v", i, eps, err)
			}
			got, want := discoveryLines(d), om.minimal(eps)
			if !slices.Equal(got, want) {
				t.Fatalf("table %d (%d rows, %d cols) eps %v:\ncols %v\ngot  %q\nwant %q", i, tab.Rows, len(cols), eps, cols, got, want)
			}
			checkListingOrder(t, d)
			for _, r := range d.Dependencies {
				if want := float64(r.Removals) / float64(tab.Rows); r.Error != want {
					t.Fatalf("table %d: %s error %v, want %v", i, r.Dependency, r.Error, want)
				}
			}
		}
		// MaxLevel cuts the same set by the dependencies' levels.
		for _, maxLevel := range []int{1, 2, 3} {
			d, err := Discover(context.Background(), tab, Options{Epsilon: 0.1, MaxLevel: maxLevel})
			if err != nil {
				t.Fatalf("table %d max level %d: %v", i, maxLevel, err)
			}
			want := slices.DeleteFunc(om.minimal(0.1), func(line string) bool { return lineLevel(line) > maxLevel })
			if got := discoveryLines(d); !slices.Equal(got, want) {
				t.Fatalf("table %d max level %d:\ngot  %q\nwant %q", i, maxLevel, got, want)
			}
		}
	}
}

// lineLevel is the FASTOD level of a dependency line of the oracle: the
// number of columns it mentions.
func lineLevel(line string) int {
	ctx := line[1:strings.Index(line, "}")]
	level := 1
	if ctx != "" {
		level += strings.Count(ctx, ",") + 1
	}
	if strings.Contains(line, " ~ ") {
		level++
	}
	return level
}

// checkValidatorsAgainstOracle compares every validator, with and without
// a budget, to the oracle for every context of the table.
func checkValidatorsAgainstOracle(t *testing.T, i int, cols [][]int, tab *table.Table, om *oracleMeasures) {
	t.Helper()
	v := validate.NewValidator()
	m := len(cols)
	ev := newEvidence(tab, defaultListing)
	for x := uint64(0); x < 1<<m; x++ {
		var ctx []int
		for c := 0; c < m; c++ {
			if x&(1<<c) != 0 {
				ctx = append(ctx, c)
			}
		}
		p := validate.PartitionOf(tab, ctx)
		classes := oracleClasses(cols, tab.Rows, ctx)
		if got, want := ev.Of(p).Score(), om.score[x]; fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
			t.Fatalf("table %d ctx %v: score %v, want %v", i, ctx, got, want)
		}
		for a := 0; a < m; a++ {
			if x&(1<<a) != 0 {
				continue
			}
			colA := &tab.Columns[a]
			want := om.ofd[[2]uint64{x, uint64(a)}]
			if got := v.OFDRemovals(p, colA, -1); got != want {
				t.Fatalf("table %d ctx %v: g3 of c%d = %d, want %d", i, ctx, a, got, want)
			}
			if got := len(validate.OFDRemovalRows(p, colA)); got != want {
				t.Fatalf("table %d ctx %v: g3 rows of c%d = %d, want %d", i, ctx, a, got, want)
			}
			for _, budget := range []int{0, 1, 3} {
				got := v.OFDRemovals(p, colA, budget)
				if (got <= budget) != (want <= budget) || (want <= budget && got != want) {
					t.Fatalf("table %d ctx %v: g3 of c%d with budget %d = %d, exact %d", i, ctx, a, budget, got, want)
				}
			}
			for b := a + 1; b < m; b++ {
				if x&(1<<b) != 0 {
					continue
				}
				colB := &tab.Columns[b]
				var both [2]int
				both[Asc], both[Desc] = v.OCRemovalsBoth(p, colA, colB, -1)
				for pol := Asc; pol <= Desc; pol++ {
					want := om.oc[[4]uint64{x, uint64(a), uint64(b), uint64(pol)}]
					if got := v.OCRemovals(p, colA, colB, pol, -1); got != want || both[pol] != want {
						t.Fatalf("table %d ctx %v: LIS c%d~c%d %v = %d (both %d), DP %d", i, ctx, a, b, pol, got, both[pol], want)
					}
					rows := validate.OCRemovalRows(p, colA, colB, pol)
					if len(rows) != want || !swapFreeAfter(classes, cols[a], cols[b], pol, rows) {
						t.Fatalf("table %d ctx %v: removal rows c%d~c%d %v = %v, DP %d", i, ctx, a, b, pol, rows, want)
					}
					iter := v.OCRemovalsIterative(p, colA, colB, pol, -1)
					if iter < want {
						t.Fatalf("table %d ctx %v: iterative c%d~c%d %v = %d < DP %d", i, ctx, a, b, pol, iter, want)
					}
					irows := validate.OCIterativeRemovalRows(p, colA, colB, pol)
					if len(irows) != iter || !swapFreeAfter(classes, cols[a], cols[b], pol, irows) {
						t.Fatalf("table %d ctx %v: iterative rows c%d~c%d %v = %v, count %d", i, ctx, a, b, pol, irows, iter)
					}
					for _, budget := range []int{0, 1, 2, 5} {
						got := v.OCRemovals(p, colA, colB, pol, budget)
						if (got <= budget) != (want <= budget) || (want <= budget && got != want) {
							t.Fatalf("table %d ctx %v: LIS c%d~c%d %v budget %d = %d, DP %d", i, ctx, a, b, pol, budget, got, want)
						}
						ga, gd := v.OCRemovalsBoth(p, colA, colB, budget)
						g := [2]int{ga, gd}[pol]
						if (g <= budget) != (want <= budget) || (want <= budget && g != want) {
							t.Fatalf("table %d ctx %v: LIS both c%d~c%d %v budget %d = %d, DP %d", i, ctx, a, b, pol, budget, g, want)
						}
						gi := v.OCRemovalsIterative(p, colA, colB, pol, budget)
						if (gi <= budget) != (iter <= budget) || (iter <= budget && gi != iter) {
							t.Fatalf("table %d ctx %v: iterative c%d~c%d %v budget %d = %d, exact %d", i, ctx, a, b, pol, budget, gi, iter)
						}
					}
				}
			}
		}
	}
}

func TestDiscoverEmptyAndTiny(t *testing.T) {
	tests := []struct {
		name string
		cols [][]int
		want []string
	}{
		{"no rows", [][]int{{}, {}}, nil},
		{"one row", [][]int{{1}, {2}}, []string{"{}: [] -> c0 r=0 s=1.000000", "{}: [] -> c1 r=0 s=1.000000"}},
		{"two rows monotone", [][]int{{1, 2}, {3, 4}}, []string{
			"{c0}: [] -> c1 r=0 s=0.500000", "{c1}: [] -> c0 r=0 s=0.500000", "{}: c0 ~ c1 (asc) r=0 s=1.000000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Discover(context.Background(), tableFromInts(tc.cols), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := discoveryLines(d); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if !d.Complete {
				t.Fatal("not complete")
			}
		})
	}
}

func TestDiscoverMaxLevelAndSample(t *testing.T) {
	// c1 = c0 except one row; c2 = 10 - c0: at eps 0.2 {}: c0 ~ c1 (asc)
	// holds with one removal and {}: c0 ~ c2 (desc) exactly.
	cols := [][]int{
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		{1, 2, 3, 4, 0, 6, 7, 8, 9, 10},
		{9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
		{1, 1, 1, 2, 2, 2, 3, 3, 3, 3},
	}
	tab := tableFromInts(cols)
	d, err := Discover(context.Background(), tab, Options{Epsilon: 0.2, MaxLevel: 2, RemovalSample: 5})
	if err != nil {
		t.Fatal(err)
	}
	var sawAsc bool
	for _, r := range d.Dependencies {
		if n := len(r.Context) + 1 + int(r.Kind); n > 2 {
			t.Errorf("%s exceeds max level 2", r.Dependency)
		}
		if r.String() == "{}: c0 ~ c1 (asc)" {
			sawAsc = true
			if !slices.Equal(r.RemovalSample, []int{4}) || r.Removals != 1 {
				t.Errorf("sample %v removals %d, want [4] 1", r.RemovalSample, r.Removals)
			}
		}
	}
	if !sawAsc {
		t.Errorf("missing {}: c0 ~ c1 (asc) in %q", discoveryLines(d))
	}
}

func TestDiscoverCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	cols := make([][]int, 8)
	for c := range cols {
		cols[c] = make([]int, 20000)
		for r := range cols[c] {
			cols[c][r] = rng.IntN(50)
		}
	}
	tab := tableFromInts(cols)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := Discover(ctx, tab, Options{Epsilon: 0.1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if d == nil || d.Complete {
		t.Fatalf("want a partial, incomplete result, got %+v", d)
	}

	// Progress is called, never concurrently, and ends with the last level.
	var mu sync.Mutex
	inCall := false
	calls := 0
	d, err = Discover(context.Background(), tab, Options{Epsilon: 0.1, MaxLevel: 3, Progress: func(p Progress) {
		mu.Lock()
		if inCall {
			t.Error("concurrent progress call")
		}
		inCall = true
		calls++
		mu.Unlock()
		time.Sleep(time.Millisecond) // widen the window a concurrent call would hit
		mu.Lock()
		inCall = false
		mu.Unlock()
	}})
	if err != nil || !d.Complete {
		t.Fatalf("err %v complete %v", err, d.Complete)
	}
	if calls == 0 {
		t.Fatal("no progress reported")
	}
	if d.Stats.Levels != 3 || d.Stats.Validations == 0 || d.Stats.Candidates < d.Stats.Validations {
		t.Fatalf("stats %+v", d.Stats)
	}
}

func TestDiscoverRejectsBadTables(t *testing.T) {
	bad := &table.Table{Rows: 2, Columns: []table.Column{{Name: "a", Ranks: []uint32{0, 5}, Cardinality: 2}}}
	if _, err := Discover(context.Background(), bad, Options{}); !errors.Is(err, table.ErrInconsistent) {
		t.Fatalf("err %v, want table.ErrInconsistent", err)
	}
	wide := &table.Table{Rows: 1}
	for i := range 65 {
		wide.Columns = append(wide.Columns, table.Column{Name: fmt.Sprint(i), Ranks: []uint32{0}, Cardinality: 1})
	}
	if _, err := Discover(context.Background(), wide, Options{}); !errors.Is(err, errTooManyColumns) {
		t.Fatalf("err %v, want errTooManyColumns", err)
	}
}

// FuzzLatticeMatchesBruteForce extends the differential test to inputs the
// fuzzer finds: the bytes give the shape (columns, rows, eps) and the cells.
func FuzzLatticeMatchesBruteForce(f *testing.F) {
	f.Add([]byte{3, 8, 1, 1, 2, 3, 1, 2, 3, 0, 0, 1, 2, 2, 1, 1, 0, 0, 3, 3, 2, 1, 0, 1, 2, 3, 3})
	f.Add([]byte{2, 4, 0, 0, 0, 1, 1, 2, 2, 3, 3})
	f.Add([]byte{5, 30, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		m := 2 + int(data[0])%5
		n := int(data[1]) % 41
		eps := []float64{0, 0.05, 0.1, 0.3}[data[2]%4]
		cells := data[3:]
		cols := make([][]int, m)
		for c := range cols {
			cols[c] = make([]int, n)
			for r := range cols[c] {
				if k := c*n + r; k < len(cells) {
					cols[c][r] = int(cells[k]%5) - 1 // -1 is NULL
				}
			}
		}
		tab := tableFromInts(cols)
		d, err := Discover(context.Background(), tab, Options{Epsilon: eps, RemovalSample: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := discoveryLines(d), measureAll(cols, n).minimal(eps); !slices.Equal(got, want) {
			t.Fatalf("cols %v eps %v:\ngot  %q\nwant %q", cols, eps, got, want)
		}
	})
}

// listingLines renders a discovery as the oracle's listing does.
func listingLines(d *Discovery) []string {
	var out []string
	for _, r := range d.Dependencies {
		out = append(out, fmt.Sprintf("%s r=%d s=%.6f rel=%v", r.Dependency, r.Removals, r.Score, r.Reliable))
	}
	slices.Sort(out)
	return out
}

// strengthTable is randomTable with, sometimes, an almost constant column
// that follows another one where it is not 0 (the repair/total pattern of
// issue 7) and an almost unique column (a near key).
func strengthTable(rng *rand.Rand) [][]int {
	cols := randomTable(rng)
	if len(cols) >= 3 && rng.IntN(2) == 0 {
		src, dst := cols[0], cols[1+rng.IntN(len(cols)-1)]
		for r := range dst {
			dst[r] = 0
			if rng.IntN(8) == 0 {
				dst[r] = src[r] + 1
			}
		}
	}
	if len(cols) >= 2 && rng.IntN(3) == 0 {
		key := cols[len(cols)-1]
		for r := range key {
			key[r] = r
			if rng.IntN(6) == 0 {
				key[r] = max(r-1, 0)
			}
		}
	}
	return cols
}

// TestLatticeTypedReliableMatchesBruteForce judges the typed mode (OCs only
// between ordered columns) and the reliable listing: on random small tables
// with some columns nominal, Discover must return exactly the oracle's
// listing, with the oracle's strengths.
func TestLatticeTypedReliableMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 2024))
	const tables = 200
	bounded := map[Kind]int{}
	for i := range tables {
		checkListingMatchesOracle(t, rng, i, strengthTable(rng), false, bounded)
	}
	if bounded[KindOFD] == 0 || bounded[KindOC] == 0 {
		t.Fatalf("strength bounds by kind %v: want OFDs and OCs", bounded)
	}
}

// TestLatticeRepeatedRecordsMatchesBruteForce is the test above on tables
// where about a third of the rows repeat others, whose strengths are
// judged on the distinct records, and where the listing screens its
// candidates there first (screenOnEvidence). The dependencies that
// mention every column are left out of the comparison with the oracle
// (not of the one with the fast paths off): they are judged on all
// records, and the oracle lists them at a context X with X\{C}: [] -> C
// exact, which the lattice does not visit.
func TestLatticeRepeatedRecordsMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 2025))
	const tables = 100
	for i := range tables {
		cols := strengthTable(rng)
		if i%2 == 1 {
			cols = repairTable(rng)
		}
		checkListingMatchesOracle(t, rng, i, withRepeats(rng, cols), true, map[Kind]int{})
	}
}

// checkListingMatchesOracle runs Discover on table i (cols, some of them
// made nominal) at several eps and MinStrength, the tuning varied with i,
// and compares its listing and strengths with the oracle's, the spanning
// dependencies left out when skipSpanning. It counts in bounded, by kind,
// the results that carried a bound of their strength.
func checkListingMatchesOracle(t *testing.T, rng *rand.Rand, i int, cols [][]int, skipSpanning bool, bounded map[Kind]int) {
	t.Helper()
	tab := tableFromInts(cols)
	ordered := make([]bool, len(cols))
	for c := range ordered {
		ordered[c] = rng.IntN(3) != 0
		if !ordered[c] {
			tab.Columns[c].Type = table.Nominal
		}
	}
	om := measureAll(cols, tab.Rows)
	// Every third table forces the repeated support a rule needs
	// (listingTuning.minSupport) away from its default.
	support := []float64{defaultListing.minSupport, 0, 0.6}[i%3]
	tune := defaultListing
	tune.minSupport = support
	// Every other pair of three tables validates every candidate of the
	// listing, without the bounds that skip the hopeless ones.
	tune.unbounded = (i/3)%2 == 1
	// The measurements (listingTuning.measurementShare): the near keys of
	// strengthTable at the default, most columns of few values at 0.05,
	// none at 2.
	tune.measurementShare = []float64{defaultListing.measurementShare, 0.05, 2}[(i/2)%3]
	measured := oracleMeasured(cols, ordered, tune.measurementShare)
	om.addStrengths(cols, support)
	// Every other pair of tables lets the unreliable results carry a
	// bound of their strength (Options.BoundUnreliable).
	bound := (i/2)%2 == 1
	for _, eps := range []float64{0, 0.1, 0.3} {
		for _, minStrength := range []float64{0, 0.4321, 0.8765} {
			d, err := Discover(context.Background(), tab, Options{Epsilon: eps, MinStrength: minStrength, Workers: 1 + i%2, BoundUnreliable: bound, tune: &tune})
			if err != nil {
				t.Fatalf("table %d: %v", i, err)
			}
			want, strengths := om.listing(eps, minStrength, ordered, measured)
			got := listingLines(d)
			if skipSpanning {
				got, want = withoutSpanning(got, len(cols)), withoutSpanning(want, len(cols))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("table %d (%d rows) eps %v min strength %v ordered %v:\ncols %v\ngot  %q\nwant %q", i, tab.Rows, eps, minStrength, ordered, cols, got, want)
			}
			for _, r := range d.Dependencies {
				want, ok := strengths[r.Dependency.String()]
				if !ok && skipSpanning {
					continue
				}
				if r.StrengthBound {
					checkStrengthBound(t, r, want, minStrength, bound)
					bounded[r.Kind]++
				} else if math.Abs(r.Strength-want) > 1e-9 {
					t.Fatalf("table %d: %s strength %v, want %v", i, r.Dependency, r.Strength, want)
				}
			}
			checkListingOrder(t, d)
			if !tune.unbounded {
				opts := Options{Epsilon: eps, MinStrength: minStrength, BoundUnreliable: bound, tune: &tune}
				checkG3BoundDropsAsHopeless(t, tab, opts, d)
				checkListingFastPathsOff(t, tab, opts, d)
			}
		}
	}
}

// checkStrengthBound checks a result that carries a bound of its
// strength: only when asked (bound), unreliable, below minStrength and at
// least the oracle's strength want.
func checkStrengthBound(t *testing.T, r Result, want, minStrength float64, bound bool) {
	t.Helper()
	if !bound || r.Reliable || r.Strength >= minStrength || r.Strength < want-1e-9 {
		t.Fatalf("%s: strength bound %v (asked %v, reliable %v), strength %v, min strength %v", r.Dependency, r.Strength, bound, r.Reliable, want, minStrength)
	}
}

// repairTable draws a table of 80 to 160 rows and three or four columns:
// two almost always 0 and ordered together, with a little noise,
// otherwise (the repair/total pattern of issue 7, on enough rows for their
// OC to be reliable while their OFDs hold unreliably), the others
// independent and of few values.
func repairTable(rng *rand.Rand) [][]int {
	n := 80 + rng.IntN(81)
	cols := make([][]int, 3+rng.IntN(2))
	for c := range cols {
		cols[c] = make([]int, n)
	}
	nonzero := 4 + rng.IntN(9)
	for r := range n {
		if rng.IntN(nonzero) == 0 {
			cols[0][r] = 1 + rng.IntN(20)
			cols[1][r] = 2 * cols[0][r]
			if rng.IntN(8) == 0 {
				cols[1][r] = rng.IntN(40)
			}
		}
		for c := 2; c < len(cols); c++ {
			cols[c][r] = rng.IntN(3)
		}
	}
	return cols
}

// withRepeats returns cols with about half as many rows again appended,
// each a copy of a random row.
func withRepeats(rng *rand.Rand, cols [][]int) [][]int {
	n := len(cols[0])
	for range n / 2 {
		r := rng.IntN(n)
		for c := range cols {
			cols[c] = append(cols[c], cols[c][r])
		}
	}
	return cols
}

// columnName matches the column names of tableFromInts in a listing line.
var columnName = regexp.MustCompile(`c[0-9]+`)

// withoutSpanning returns the listing lines (listingLines) whose
// dependency mentions fewer than all m columns.
func withoutSpanning(lines []string, m int) []string {
	var out []string
	for _, l := range lines {
		seen := map[string]bool{}
		for _, c := range columnName.FindAllString(strings.Split(l, " r=")[0], -1) {
			seen[c] = true
		}
		if len(seen) < m {
			out = append(out, l)
		}
	}
	return out
}

// checkG3BoundDropsAsHopeless checks that the O(1) bound from the g3
// removals (dropBeyondG3; it drops candidates on most of these tables)
// drops only what dropHopeless drops without it: the same dependencies
// and the same validation count.
func checkG3BoundDropsAsHopeless(t *testing.T, tab *table.Table, opts Options, d *Discovery) {
	t.Helper()
	tune := *opts.tune
	tune.noG3Bound = true
	opts.tune = &tune
	without, err := Discover(context.Background(), tab, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := listingLines(d), listingLines(without); !slices.Equal(got, want) || d.Stats.Validations != without.Stats.Validations {
		t.Fatalf("with the g3 bound %d validations\n%q\nwithout %d\n%q", d.Stats.Validations, got, without.Stats.Validations, want)
	}
}

// checkListingFastPathsOff checks that the fast paths of the listing's
// candidates (listingTuning.noEvidenceScreen) change no
// result: with them off, Discover returns the same dependencies with the
// same strengths.
func checkListingFastPathsOff(t *testing.T, tab *table.Table, opts Options, d *Discovery) {
	t.Helper()
	tune := *opts.tune
	tune.noEvidenceScreen = true
	opts.tune = &tune
	without, err := Discover(context.Background(), tab, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := listingLines(d), listingLines(without); !slices.Equal(got, want) {
		t.Fatalf("with the listing's fast paths\n%q\nwithout\n%q", got, want)
	}
	strengths := map[string]float64{}
	for _, r := range without.Dependencies {
		strengths[r.Dependency.String()] = r.Strength
	}
	for _, r := range d.Dependencies {
		if want := strengths[r.Dependency.String()]; r.Strength != want {
			t.Fatalf("%s strength %v with the listing's fast paths, %v without", r.Dependency, r.Strength, want)
		}
	}
}

// checkListingOrder checks the order of the results: reliable first by
// strength, then the others by score.
func checkListingOrder(t *testing.T, d *Discovery) {
	t.Helper()
	for k := 1; k < len(d.Dependencies); k++ {
		x, y := d.Dependencies[k-1], d.Dependencies[k]
		switch {
		case !x.Reliable && y.Reliable:
			t.Fatalf("unreliable %s before reliable %s", x.Dependency, y.Dependency)
		case x.Reliable && y.Reliable && x.Strength < y.Strength:
			t.Fatalf("%s (strength %v) before %s (strength %v)", x.Dependency, x.Strength, y.Dependency, y.Strength)
		case !x.Reliable && !y.Reliable && x.Score < y.Score:
			t.Fatalf("%s (score %v) before %s (score %v)", x.Dependency, x.Score, y.Dependency, y.Score)
		}
	}
}
