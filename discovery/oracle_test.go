package discovery

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The oracle: a direct, slow reading of docs/DESIGN.md's definitions, used as
// the judge of the validators and the lattice. Nothing here shares code
// with the implementation except RemovalBudget (the definition of "valid").

// tableFromInts builds a Table from columns of ints: ranks are the dense
// ranks of the ints in each column; nullValue cells become NULL, the lowest
// rank, as the encoder does with empty cells.
const nullValue = -1

func tableFromInts(cols [][]int) *Table {
	t := &Table{}
	if len(cols) > 0 {
		t.Rows = len(cols[0])
	}
	for i, vals := range cols {
		distinct := slices.Clone(vals)
		slices.Sort(distinct)
		distinct = slices.Compact(distinct)
		c := Column{Name: "c" + strconv.Itoa(i), Type: Numeric, Cardinality: len(distinct)}
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
}

func measureAll(cols [][]int, n int) *oracleMeasures {
	m := len(cols)
	om := &oracleMeasures{m: m, n: n, score: map[uint64]float64{}, ofd: map[[2]uint64]int{}, oc: map[[4]uint64]int{}}
	for x := uint64(0); x < 1<<m; x++ {
		var ctx []int
		for c := 0; c < m; c++ {
			if x&(1<<c) != 0 {
				ctx = append(ctx, c)
			}
		}
		classes := oracleClasses(cols, n, ctx)
		om.score[x] = oracleScore(classes, n)
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
		var ctx []string
		for c := 0; c < om.m; c++ {
			if x&(1<<c) != 0 {
				ctx = append(ctx, name(c))
			}
		}
		subsets := func(valid func(uint64) bool) bool {
			for c := 0; c < om.m; c++ {
				if x&(1<<c) != 0 && valid(x&^(1<<c)) {
					return true
				}
			}
			return false
		}
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
