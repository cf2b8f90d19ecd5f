package explain

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/odwatch/odwatch/discovery/table"
)

// segments finds the segments of the violating rows among cols (but the
// columns named in skip): per column, each value (NULL included) holding
// at least o.MinViolating violating rows and a larger share of them than
// of the window is a candidate; a candidate is kept when its
// hypergeometric tail is at most o.Alpha over the number of values that
// could have been one (those with o.MinViolating records in the window:
// Bonferroni over every test the data could have made, not only the ones
// it did), and the kept ones are ranked by the excess of their share of
// the violating rows over their share of the window.
func segments(cols []table.DictColumn, violating []int, skip []string, o Options) []Segment {
	if len(violating) == 0 || len(cols) == 0 || o.MaxSegments <= 0 {
		return nil
	}
	n, v := len(cols[0].Codes), len(violating)
	var cands []Segment
	tests := 0
	for i := range cols {
		if !slices.Contains(skip, cols[i].Name) {
			c, k := columnCandidates(&cols[i], violating, o)
			cands, tests = append(cands, c...), tests+k
		}
	}
	kept := cands[:0]
	for _, s := range cands {
		s.P = hypergeomTail(n, s.Records, v, s.Violating)
		if s.P <= o.Alpha/float64(tests) {
			kept = append(kept, s)
		}
	}
	slices.SortFunc(kept, func(x, y Segment) int {
		return cmp.Or(cmp.Compare(y.ViolatingShare-y.WindowShare, x.ViolatingShare-x.WindowShare),
			cmp.Compare(x.P, y.P), strings.Compare(x.Column, y.Column), strings.Compare(x.Value, y.Value))
	})
	if len(kept) > o.MaxSegments {
		kept = kept[:o.MaxSegments]
	}
	return slices.Clip(kept)
}

// columnCandidates counts one column's values over the window and over
// the violating rows and returns the candidates (at least o.MinViolating
// violating rows and a larger share of them than of the window) and the
// number of values with o.MinViolating records in the window.
func columnCandidates(c *table.DictColumn, violating []int, o Options) (out []Segment, tests int) {
	all := make([]int, len(c.Dict)+1)
	for _, code := range c.Codes {
		all[code]++
	}
	in := make([]int, len(c.Dict)+1)
	for _, row := range violating {
		in[c.Codes[row]]++
	}
	n, v := float64(len(c.Codes)), float64(len(violating))
	for code := range in {
		if all[code] >= o.MinViolating {
			tests++
		}
		if in[code] < o.MinViolating {
			continue
		}
		s := Segment{Column: c.Name, Null: code == 0, Violating: in[code], Records: all[code]}
		if code > 0 {
			s.Value = c.Dict[code-1]
		}
		s.ViolatingShare, s.WindowShare = float64(in[code])/v, float64(all[code])/n
		if s.ViolatingShare <= s.WindowShare {
			continue
		}
		s.Lift = s.ViolatingShare / s.WindowShare
		out = append(out, s)
	}
	return out, tests
}

// hypergeomTail is P(X >= x) for X the number of marked items among
// draws items drawn without replacement from n items of which marked are
// marked: the chance that a segment of marked records of the window holds
// x or more of draws violating records drawn at random.
func hypergeomTail(n, marked, draws, x int) float64 {
	hi := min(marked, draws)
	if x > hi {
		return 0
	}
	if x <= max(0, draws-(n-marked)) {
		return 1
	}
	// the first term through log-gamma, the next ones by their ratio
	lt := lchoose(marked, x) + lchoose(n-marked, draws-x) - lchoose(n, draws)
	term, sum := math.Exp(lt), 0.0
	for k := x; k <= hi && term > 0; k++ {
		sum += term
		if term < sum*1e-15 {
			break
		}
		term *= float64(marked-k) * float64(draws-k) / (float64(k+1) * float64(n-marked-draws+k+1))
	}
	return min(sum, 1)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
