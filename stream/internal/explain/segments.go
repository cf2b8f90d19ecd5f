package explain

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// segments finds the segments of the violating rows among cols (but the
// columns named in skip): per column, each value (NULL included) holding
// at least o.MinViolating violating rows and a larger share of them than
// of the window is a candidate; a candidate is kept when its
// hypergeometric tail is at most o.Alpha over the number of values that
// could have been one (those with o.MinViolating records in the window:
// Bonferroni over every test the data could have made, not only the ones
// it did), and the kept ones are ranked by the excess of their share of
// the violating rows over their share of the window. It counts in b's
// buffers.
func segments(w *Window, violating []int, skip []string, o Options, b *buffers) []Segment {
	if len(violating) == 0 || len(w.Columns) == 0 || o.MaxSegments <= 0 {
		return nil
	}
	n, v := w.Rule.Rows, len(violating)
	var cands []Segment
	tests, largest := 0, 0
	for _, c := range w.Columns {
		largest = max(largest, len(c.Dict))
	}
	in := b.counts(largest) // columnCandidates' counts, all 0 between columns
	slots := make([]int, len(violating))
	for j, row := range violating {
		slots[j] = w.slot(row)
	}
	for i := range w.Columns {
		if !slices.Contains(skip, w.Columns[i].Name) {
			c, k := columnCandidates(w, i, slots, o, in)
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
// the violating rows (at slots of w's codes) and returns the candidates (at least o.MinViolating
// violating rows and a larger share of them than of the window) and the
// number of values with o.MinViolating records in the window. in (a
// count per code, at least the dictionary's) is all 0 on entry and on
// return: only the violating rows' codes are counted and reset, since a
// near-unique column's dictionary is the size of the window.
func columnCandidates(w *Window, i int, slots []int, o Options, in []int) (out []Segment, tests int) {
	c := &w.Columns[i]
	all := windowCounts(w, i)
	for _, k := range all {
		if int(k) >= o.MinViolating {
			tests++
		}
	}
	for _, at := range slots {
		in[c.Codes[at]]++
	}
	n, v := float64(w.Rule.Rows), float64(len(slots))
	for _, at := range slots {
		code := c.Codes[at]
		k := in[code]
		in[code] = 0 // each code once, and in left all 0
		if k < o.MinViolating {
			continue
		}
		s := Segment{Column: c.Name, Null: code == 0, Violating: k, Records: int(all[code])}
		if code > 0 {
			s.Value = c.Dict[code-1]
		}
		s.ViolatingShare, s.WindowShare = float64(k)/v, float64(all[code])/n
		if s.ViolatingShare <= s.WindowShare {
			continue
		}
		s.Lift = s.ViolatingShare / s.WindowShare
		out = append(out, s)
	}
	return out, tests
}

// windowCounts is column i's rows per code over w: w.Counts's, or
// counted from the codes.
func windowCounts(w *Window, i int) []uint32 {
	if w.Slot != nil {
		return w.Counts[i]
	}
	c := &w.Columns[i]
	all := make([]uint32, len(c.Dict)+1)
	for _, code := range c.Codes {
		all[code]++
	}
	return all
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
