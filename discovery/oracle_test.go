package discovery

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/odwatch/odwatch/discovery/table"
)

// The oracle: a direct, slow reading of docs/DESIGN.md's definitions, used as
// the judge of the validators and the lattice. Nothing here shares code
// with the implementation except RemovalBudget (the definition of "valid").

// tableFromInts builds a Table from columns of ints: ranks are the dense
// ranks of the ints in each column; nullValue cells become NULL, the lowest
// rank, as the encoder does with empty cells.
const nullValue = -1

func tableFromInts(cols [][]int) *table.Table {
	t := &table.Table{}
	if len(cols) > 0 {
		t.Rows = len(cols[0])
	}
	for i, vals := range cols {
		distinct := slices.Clone(vals)
		slices.Sort(distinct)
		distinct = slices.Compact(distinct)
		c := table.Column{Name: "c" + strconv.Itoa(i), Type: table.Numeric, Cardinality: len(distinct)}
		for _, v := range distinct {
			if v == nullValue {
				c.Values = append(c.Values, "")
			} else {
				c.Values = append(c.Values, strconv.Itoa(v))
			}
		}
		for _, v := range vals {
			r, _ := slices.BinarySearch(distinct, v)
			c.Ranks = append(c.Ranks, uint32(r))
		}
		t.Columns = append(t.Columns, c)
	}
	return t
}

// oracleClasses groups the rows by their values on ctx, singletons
// included.
func oracleClasses(cols [][]int, n int, ctx []int) [][]int {
	groups := map[string][]int{}
	var order []string
	for r := 0; r < n; r++ {
		var sb strings.Builder
		for _, c := range ctx {
			fmt.Fprintf(&sb, "%d,", cols[c][r])
		}
		k := sb.String()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([][]int, 0, len(order))
	for _, k := range order {
		out = append(out, groups[k])
	}
	return out
}

// oracleG3 counts, per class, the rows off the most frequent value.
func oracleG3(classes [][]int, a []int) int {
	removals := 0
	for _, cls := range classes {
		freq := map[int]int{}
		best := 0
		for _, r := range cls {
			freq[a[r]]++
			best = max(best, freq[a[r]])
		}
		removals += len(cls) - best
	}
	return removals
}

// oracleSwap is docs/DESIGN.md's swap: s.A < t.A and s.B > t.B (asc); desc
// reverses B.
func oracleSwap(a, b []int, s, t int, pol Polarity) bool {
	if pol == Desc {
		return a[s] < a[t] && b[s] < b[t]
	}
	return a[s] < a[t] && b[s] > b[t]
}

// oracleOC returns n minus the longest swap-free chain per class, by the
// O(n^2) dynamic program over tuples ordered by (A, B) (B descending for
// desc), where a tuple may follow any earlier one it does not swap with.
func oracleOC(classes [][]int, a, b []int, pol Polarity) int {
	removals := 0
	for _, cls := range classes {
		rows := slices.Clone(cls)
		slices.SortFunc(rows, func(x, y int) int {
			if a[x] != a[y] {
				return a[x] - a[y]
			}
			if pol == Desc {
				return b[y] - b[x]
			}
			return b[x] - b[y]
		})
		best := 0
		dp := make([]int, len(rows))
		for i := range rows {
			dp[i] = 1
			for j := 0; j < i; j++ {
				if !oracleSwap(a, b, rows[j], rows[i], pol) && !oracleSwap(a, b, rows[i], rows[j], pol) {
					dp[i] = max(dp[i], dp[j]+1)
				}
			}
			best = max(best, dp[i])
		}
		removals += len(rows) - best
	}
	return removals
}

// swapFreeAfter reports whether no swap remains within any class once the
// given rows are removed.
func swapFreeAfter(classes [][]int, a, b []int, pol Polarity, removed []int) bool {
	gone := make([]bool, len(a))
	for _, r := range removed {
		gone[r] = true
	}
	for _, cls := range classes {
		for _, s := range cls {
			for _, t := range cls {
				if !gone[s] && !gone[t] && oracleSwap(a, b, s, t, pol) {
					return false
				}
			}
		}
	}
	return true
}

func oracleScore(classes [][]int, n int) float64 {
	if n == 0 {
		return 0
	}
	var sum float64
	for _, c := range classes {
		sum += float64(len(c)) * float64(len(c))
	}
	return sum / (float64(n) * float64(n))
}

// oracleMeasures holds every dependency's removals over all contexts of a
// table, so that the minimal sets for several eps come from one pass.
type oracleMeasures struct {
	m, n  int
	score map[uint64]float64
	ofd   map[[2]uint64]int // (X, A)
	oc    map[[4]uint64]int // (X, A, B, pol)
	// Strengths, once addStrengths has run. ofdWithin holds, by (X, A,
	// C), the measure of X: [] -> A when chance permutes A within the
	// classes of X\{C} (C in X, X of two columns or more).
	ofdStrength map[[2]uint64]float64
	ocStrength  map[[4]uint64]float64
	ofdWithin   map[[3]uint64]float64
}

func measureAll(cols [][]int, n int) *oracleMeasures {
	m := len(cols)
	om := &oracleMeasures{m: m, n: n, score: map[uint64]float64{}, ofd: map[[2]uint64]int{}, oc: map[[4]uint64]int{}}
	keep, nd := oracleDistinct(cols, n)
	for x := uint64(0); x < 1<<m; x++ {
		var ctx []int
		for c := 0; c < m; c++ {
			if x&(1<<c) != 0 {
				ctx = append(ctx, c)
			}
		}
		classes := oracleClasses(cols, n, ctx)
		om.score[x] = oracleScore(oracleKeep(classes, keep), nd)
		for a := 0; a < m; a++ {
			if x&(1<<a) != 0 {
				continue
			}
			om.ofd[[2]uint64{x, uint64(a)}] = oracleG3(classes, cols[a])
			for b := a + 1; b < m; b++ {
				if x&(1<<b) != 0 {
					continue
				}
				for pol := Asc; pol <= Desc; pol++ {
					om.oc[[4]uint64{x, uint64(a), uint64(b), uint64(pol)}] = oracleOC(classes, cols[a], cols[b], pol)
				}
			}
		}
	}
	return om
}

// minimal enumerates docs/DESIGN.md's minimal AOD set at eps, rendered as
// "dep removals score" lines, sorted.
// oracleContext names the columns of the context bit set x ("c0", "c1", ...).
func oracleContext(x uint64, m int) []string {
	var ctx []string
	for c := 0; c < m; c++ {
		if x&(1<<c) != 0 {
			ctx = append(ctx, "c"+strconv.Itoa(c))
		}
	}
	return ctx
}

// anyDirectSubset reports whether valid holds for a context of x with one
// of its m columns removed.
func anyDirectSubset(x uint64, m int, valid func(uint64) bool) bool {
	for c := 0; c < m; c++ {
		if x&(1<<c) != 0 && valid(x&^(1<<c)) {
			return true
		}
	}
	return false
}

func (om *oracleMeasures) minimal(eps float64) []string {
	if om.n == 0 {
		return nil
	}
	budget := RemovalBudget(eps, om.n)
	ofdValid := func(x uint64, a int) bool { return om.ofd[[2]uint64{x, uint64(a)}] <= budget }
	ocValid := func(x uint64, a, b int, pol Polarity) bool {
		return om.oc[[4]uint64{x, uint64(a), uint64(b), uint64(pol)}] <= budget
	}
	name := func(c int) string { return "c" + strconv.Itoa(c) }
	var out []string
	for x := uint64(0); x < 1<<om.m; x++ {
		ctx := oracleContext(x, om.m)
		subsets := func(valid func(uint64) bool) bool { return anyDirectSubset(x, om.m, valid) }
		for a := 0; a < om.m; a++ {
			if x&(1<<a) != 0 {
				continue
			}
			if ofdValid(x, a) && !subsets(func(y uint64) bool { return ofdValid(y, a) }) {
				d := Dependency{Kind: KindOFD, Context: ctx, RHS: name(a)}
				out = append(out, fmt.Sprintf("%s r=%d s=%.6f", d, om.ofd[[2]uint64{x, uint64(a)}], om.score[x]))
			}
			for b := a + 1; b < om.m; b++ {
				if x&(1<<b) != 0 || ofdValid(x, a) || ofdValid(x, b) {
					continue
				}
				for pol := Asc; pol <= Desc; pol++ {
					if ocValid(x, a, b, pol) && !subsets(func(y uint64) bool { return ocValid(y, a, b, pol) }) {
						d := Dependency{Kind: KindOC, Context: ctx, Left: name(a), Right: name(b), Polarity: pol}
						out = append(out, fmt.Sprintf("%s r=%d s=%.6f", d, om.oc[[4]uint64{x, uint64(a), uint64(b), uint64(pol)}], om.score[x]))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// randomTable draws a small table with few distinct values, NULLs and
// planted near-dependencies (functions, monotone and antitone copies of
// earlier columns with a little noise).
func randomTable(rng *rand.Rand) [][]int {
	m := 2 + rng.IntN(6)
	n := rng.IntN(61)
	cols := make([][]int, m)
	for c := range cols {
		col := make([]int, n)
		kind := rng.IntN(6)
		if c == 0 {
			kind = 0
		}
		src := cols[rng.IntN(max(c, 1))]
		other := cols[rng.IntN(max(c, 1))]
		distinct := 1 + rng.IntN(5)
		noise := rng.Float64() * 0.15
		nulls := 0.0
		if rng.IntN(3) == 0 {
			nulls = 0.1
		}
		for r := range col {
			switch kind {
			case 0, 1: // independent
				col[r] = rng.IntN(distinct)
			case 2: // monotone copy
				col[r] = src[r]*2 + 1
			case 3: // antitone copy
				col[r] = 10 - src[r]
			case 4: // function, not monotone
				col[r] = (src[r] * 7) % 3
			case 5: // function of two columns
				col[r] = src[r] + other[r]
			}
			if kind >= 2 && rng.Float64() < noise {
				col[r] = rng.IntN(distinct + 2)
			}
			if rng.Float64() < nulls {
				col[r] = nullValue
			}
		}
		cols[c] = col
	}
	return cols
}

// The strength oracle: mu+ and the OC strength read directly from
// docs/DESIGN.md ("Strength"), over the classes of oracleClasses (singletons
// included).

// oracleMuPlus computes mu+ of X: [] -> A from the contingency of the
// classes of X and the values of A, with docs/DESIGN.md's 10 pseudo-rows.
func oracleMuPlus(classes [][]int, a []int, n int) float64 {
	if n == 0 {
		return NoStrength
	}
	freq := map[int]int{}
	for _, cls := range classes {
		for _, r := range cls {
			freq[a[r]]++
		}
	}
	pdepY := 0.0
	for _, c := range freq {
		pdepY += float64(c) / float64(n) * float64(c) / float64(n)
	}
	pdepXY := 0.0
	for _, cls := range classes {
		inClass := map[int]int{}
		for _, r := range cls {
			inClass[a[r]]++
		}
		px := float64(len(cls)) / float64(n)
		for _, c := range inClass {
			py := float64(c) / float64(len(cls))
			pdepXY += px * py * py
		}
	}
	dom := len(classes)
	if dom >= n {
		return 0
	}
	// mu = 1 - observed/expected; the strength adds 10 pseudo-rows to both.
	observed := float64(n) * (1 - pdepXY)
	expected := float64(n) * (1 - pdepY) * float64(n-1-(dom-1)) / float64(n-1)
	return math.Max(0, math.Min(1, 1-(math.Max(observed, 0)+10)/(math.Max(expected, 0)+10)))
}

// oracleOCStrength is the OC measure 1 - (removals+10) / (expected+10),
// where expected counts the removals after B is shuffled within each
// class: the B values of the class's rows in row order are shuffled by
// Fisher-Yates (for i from the last place down to 1, swap place i with
// place next() mod (i+1)), next() being splitmix64 whose state starts at
// the class's first row and grows by 0x9e3779b97f4a7c15 before each draw.
func oracleOCStrength(classes [][]int, a, b []int, pol Polarity, n, removals int) float64 {
	if n == 0 {
		return NoStrength
	}
	expected := 0
	for _, cls := range classes {
		bs := make([]int, len(cls))
		for k, r := range cls {
			bs[k] = b[r]
		}
		state := uint64(cls[0])
		for i := len(bs) - 1; i > 0; i-- {
			state += 0x9e3779b97f4a7c15
			z := state
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			z ^= z >> 31
			j := int(z % uint64(i+1))
			bs[i], bs[j] = bs[j], bs[i]
		}
		type pair struct{ a, b int }
		pairs := make([]pair, len(cls))
		for k, r := range cls {
			bv := bs[k]
			if pol == Desc {
				bv = -bv
			}
			pairs[k] = pair{a[r], bv}
		}
		slices.SortFunc(pairs, func(x, y pair) int {
			if x.a != y.a {
				return x.a - y.a
			}
			return x.b - y.b
		})
		best := 0
		dp := make([]int, len(pairs))
		for i := range pairs {
			dp[i] = 1
			for j := 0; j < i; j++ {
				if pairs[j].b <= pairs[i].b {
					dp[i] = max(dp[i], dp[j]+1)
				}
			}
			best = max(best, dp[i])
		}
		expected += len(pairs) - best
	}
	return math.Max(0, math.Min(1, 1-float64(removals+10)/float64(expected+10)))
}

// oracleWithin is the measure of X: [] -> A, classes being X's and within
// those of Y (Y a subset of X, over the same records, singletons
// included), when chance permutes A's values among the rows of each class
// of Y, counted by pairs: a class x of X is impure by the share of its
// ordered pairs of rows that differ in A, times |x|, |x| - sum_a
// |x,a|^2/|x| = sum over the ordered pairs (i, j), i != j, of [a_i !=
// a_j] / |x|; under the permutation two rows of one class y of Y differ in
// A with the chance that two of y's values drawn without replacement
// differ, so x's expected impurity is (|x| - 1) times that chance. Ten
// pseudo-rows, as every measure.
func oracleWithin(classes, within [][]int, a []int) float64 {
	differ := func(cls []int) float64 { // ordered pairs of rows of cls that differ in A
		d := 0
		for _, i := range cls {
			for _, j := range cls {
				if a[i] != a[j] {
					d++
				}
			}
		}
		return float64(d)
	}
	classOf := map[int]int{}
	chance := make([]float64, len(within))
	for k, y := range within {
		for _, r := range y {
			classOf[r] = k
		}
		if m := float64(len(y)); m > 1 {
			chance[k] = differ(y) / (m * (m - 1))
		}
	}
	var observed, expected float64
	for _, x := range classes {
		observed += differ(x) / float64(len(x))
		expected += float64(len(x)-1) * chance[classOf[x[0]]]
	}
	return math.Max(0, math.Min(1, 1-(observed+10)/(expected+10)))
}

// oracleMeasured returns the measurements among cols, as the listing
// reads them: the ordered (numeric) columns with at least share distinct
// values per distinct row.
func oracleMeasured(cols [][]int, ordered []bool, share float64) uint64 {
	_, nd := oracleDistinct(cols, len(cols[0]))
	var measured uint64
	for c, col := range cols {
		values := map[int]bool{}
		for _, v := range col {
			values[v] = true
		}
		if ordered[c] && float64(len(values)) >= share*float64(nd) {
			measured |= 1 << c
		}
	}
	return measured
}

// oracleDistinct marks the first of each set of identical rows (every
// column equal) and counts them: the distinct records.
func oracleDistinct(cols [][]int, n int) ([]bool, int) {
	keep := make([]bool, n)
	seen := map[string]bool{}
	nd := 0
	for r := 0; r < n; r++ {
		var key strings.Builder
		for _, c := range cols {
			fmt.Fprintf(&key, "%d,", c[r])
		}
		if !seen[key.String()] {
			seen[key.String()] = true
			keep[r] = true
			nd++
		}
	}
	return keep, nd
}

// oracleKeep keeps the kept rows of each class, dropping emptied classes.
func oracleKeep(classes [][]int, keep []bool) [][]int {
	var out [][]int
	for _, c := range classes {
		var k []int
		for _, r := range c {
			if keep[r] {
				k = append(k, r)
			}
		}
		if len(k) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// oracleSupported reports whether at least the share support (30% by
// default) of the nd distinct records lie in classes of two or more.
func oracleSupported(classes [][]int, nd int, support float64) bool {
	in := 0
	for _, c := range classes {
		if len(c) >= 2 {
			in += len(c)
		}
	}
	return nd > 0 && float64(in) >= support*float64(nd)
}

// addStrengths adds every dependency's measure to om, as docs/DESIGN.md
// ("Strength") reads: on the distinct records, 0 without repeated support,
// except for a dependency that mentions every column, measured on all
// records; support is the share of repeated support a rule needs.
func (om *oracleMeasures) addStrengths(cols [][]int, support float64) {
	om.ofdStrength = map[[2]uint64]float64{}
	om.ocStrength = map[[4]uint64]float64{}
	om.ofdWithin = map[[3]uint64]float64{}
	keep, nd := oracleDistinct(cols, om.n)
	classesOf := func(x uint64) [][]int {
		var ctx []int
		for c := 0; c < om.m; c++ {
			if x&(1<<c) != 0 {
				ctx = append(ctx, c)
			}
		}
		return oracleClasses(cols, om.n, ctx)
	}
	all := uint64(1)<<om.m - 1
	for x := uint64(0); x < 1<<om.m; x++ {
		var ctx []int
		for c := 0; c < om.m; c++ {
			if x&(1<<c) != 0 {
				ctx = append(ctx, c)
			}
		}
		classes := oracleClasses(cols, om.n, ctx)
		distinct := oracleKeep(classes, keep)
		supported := oracleSupported(distinct, nd, support)
		for a := 0; a < om.m; a++ {
			if x&(1<<a) != 0 {
				continue
			}
			switch {
			case x|1<<a == all:
				om.ofdStrength[[2]uint64{x, uint64(a)}] = oracleMuPlus(classes, cols[a], om.n)
			case om.n > 0 && !supported:
				om.ofdStrength[[2]uint64{x, uint64(a)}] = 0
			default:
				om.ofdStrength[[2]uint64{x, uint64(a)}] = oracleMuPlus(distinct, cols[a], nd)
			}
			for c := 0; c < om.m && bits.OnesCount64(x) >= 2; c++ {
				if x&(1<<c) == 0 {
					continue
				}
				xs, ys := classes, classesOf(x&^(1<<c))
				if x|1<<a != all {
					xs, ys = distinct, oracleKeep(ys, keep)
				}
				om.ofdWithin[[3]uint64{x, uint64(a), uint64(c)}] = oracleWithin(xs, ys, cols[a])
			}
			for b := a + 1; b < om.m; b++ {
				if x&(1<<b) != 0 {
					continue
				}
				for pol := Asc; pol <= Desc; pol++ {
					key := [4]uint64{x, uint64(a), uint64(b), uint64(pol)}
					switch {
					case x|1<<a|1<<b == all:
						om.ocStrength[key] = oracleOCStrength(classes, cols[a], cols[b], pol, om.n, om.oc[key])
					case om.n > 0 && !supported:
						om.ocStrength[key] = 0
					default:
						om.ocStrength[key] = oracleOCStrength(distinct, cols[a], cols[b], pol, nd, oracleOC(distinct, cols[a], cols[b], pol))
					}
				}
			}
		}
	}
}

// ofdStrengthAt is the Strength of X: [] -> A: the least of its measure
// and of its measures when chance permutes A within the classes of each
// direct subset of X (ofdWithin).
func (om *oracleMeasures) ofdStrengthAt(x uint64, a int) float64 {
	s := om.ofdStrength[[2]uint64{x, uint64(a)}]
	for c := 0; c < om.m && s > 0; c++ {
		if w, ok := om.ofdWithin[[3]uint64{x, uint64(a), uint64(c)}]; ok {
			s = math.Min(s, w)
		}
	}
	return s
}

// listing enumerates what Discover returns at eps and minStrength with
// only the columns marked ordered taking part in OCs, rendered as
// "dep r=removals s=score rel=reliable" lines, sorted, with the strength of
// each dependency by its text: the
// minimal set of docs/DESIGN.md, each marked reliable when its strength is
// at least minStrength, together with the reliable listing's own minimal
// set, where a dependency valid at a smaller context implies it, and of
// the OFDs at its own context on an OC's sides only a reliable one. Both are
// sought in the contexts the lattice searches: a context is not searched
// when a proper subset of it has every OFD valid, or when every OFD of it
// is valid at a proper subset (it is a near key: every dependency above is
// an OFD that holds by chance).
func (om *oracleMeasures) listing(eps, minStrength float64, ordered []bool, measured uint64) ([]string, map[string]float64) {
	strengths := map[string]float64{}
	if om.n == 0 {
		return nil, strengths
	}
	budget := RemovalBudget(eps, om.n)
	ofdValid := func(x uint64, a int) bool { return om.ofd[[2]uint64{x, uint64(a)}] <= budget }
	ocValid := func(x uint64, a, b int, pol Polarity) bool {
		return om.oc[[4]uint64{x, uint64(a), uint64(b), uint64(pol)}] <= budget
	}
	// The strength of an OFD is the least of its measure and of its
	// measures when chance permutes its right side within the classes of
	// each direct subset of its context; that of an OC is its measure less
	// the largest measure of the same OC in a direct subset of its
	// context, at least 0.
	gain := func(x uint64, s float64, sub func(uint64) float64) float64 {
		if s <= 0 {
			return s
		}
		g := s
		for c := 0; c < om.m; c++ {
			if x&(1<<c) != 0 {
				g = math.Min(g, s-sub(x&^(1<<c)))
			}
		}
		return math.Max(g, 0)
	}
	ofdStrength := om.ofdStrengthAt
	ocStrength := func(x uint64, a, b int, pol Polarity) float64 {
		key := func(y uint64) [4]uint64 { return [4]uint64{y, uint64(a), uint64(b), uint64(pol)} }
		return gain(x, om.ocStrength[key(x)], func(y uint64) float64 { return om.ocStrength[key(y)] })
	}
	ofdRel := func(x uint64, a int) bool {
		return ofdValid(x, a) && ofdStrength(x, a) >= minStrength
	}
	ocRel := func(x uint64, a, b int, pol Polarity) bool {
		return ocValid(x, a, b, pol) && ocStrength(x, a, b, pol) >= minStrength
	}
	// proper reports whether f holds at some proper subset of x.
	proper := func(x uint64, f func(uint64) bool) bool {
		for y := (x - 1) & x; ; y = (y - 1) & x {
			if y != x && f(y) {
				return true
			}
			if y == 0 {
				return false
			}
		}
	}
	allValid := func(y uint64, valid func(uint64, int) bool) bool {
		for a := 0; a < om.m; a++ {
			if y&(1<<a) == 0 && !valid(y, a) {
				return false
			}
		}
		return true
	}
	searched := func(x uint64) bool {
		if x == 0 {
			return true
		}
		if proper(x, func(y uint64) bool { return allValid(y, ofdValid) }) {
			return false
		}
		return !allValid(x, func(_ uint64, a int) bool {
			return proper(x, func(y uint64) bool { return ofdValid(y, a) })
		})
	}
	name := func(c int) string { return "c" + strconv.Itoa(c) }
	seen := map[string]bool{}
	var out []string
	emit := func(d Dependency, removals int, score, strength float64) {
		line := fmt.Sprintf("%s r=%d s=%.6f rel=%v", d, removals, score, strength >= minStrength)
		strengths[d.String()] = strength
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	for x := uint64(0); x < 1<<om.m; x++ {
		if !searched(x) {
			continue
		}
		ctx := oracleContext(x, om.m)
		if ctx == nil {
			ctx = []string{}
		}
		direct := func(valid func(uint64) bool) bool { return anyDirectSubset(x, om.m, valid) }
		for a := 0; a < om.m; a++ {
			if x&(1<<a) != 0 {
				continue
			}
			key := [2]uint64{x, uint64(a)}
			d := Dependency{Kind: KindOFD, Context: ctx, RHS: name(a)}
			paper := ofdValid(x, a) && !direct(func(y uint64) bool { return ofdValid(y, a) })
			// A rule whose context holds a measurement is listed only as
			// one of the paper's (Summarize steps it back).
			rel := ofdRel(x, a) && !proper(x, func(y uint64) bool { return ofdValid(y, a) }) && x&measured == 0
			if paper || rel {
				emit(d, om.ofd[key], om.score[x], ofdStrength(x, a))
			}
			for b := a + 1; b < om.m; b++ {
				if x&(1<<b) != 0 || !ordered[a] || !ordered[b] {
					continue
				}
				ofdValidSide := func(y uint64) bool { return ofdValid(y, a) || ofdValid(y, b) }
				for pol := Asc; pol <= Desc; pol++ {
					key := [4]uint64{x, uint64(a), uint64(b), uint64(pol)}
					d := Dependency{Kind: KindOC, Context: ctx, Left: name(a), Right: name(b), Polarity: pol}
					paper := ocValid(x, a, b, pol) && !ofdValid(x, a) && !ofdValid(x, b) &&
						!direct(func(y uint64) bool { return ocValid(y, a, b, pol) })
					rel := ocRel(x, a, b, pol) && !ofdRel(x, a) && !ofdRel(x, b) && !proper(x, ofdValidSide) &&
						!proper(x, func(y uint64) bool { return ocValid(y, a, b, pol) }) && x&measured == 0
					if paper || rel {
						emit(d, om.oc[key], om.score[x], ocStrength(x, a, b, pol))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out, strengths
}
