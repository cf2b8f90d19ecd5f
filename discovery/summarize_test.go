package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
)

// oracleKeys enumerates docs/DESIGN.md's minimal keys of at most maxCols
// columns by brute force, as "key(c0,c1) r=removals s=strength" lines in
// the order of their column sets: X is a key when n - |values of X| is
// within the budget on all records, minimal when no proper subset is; its
// strength compares, on the distinct records, the records beyond the first
// of each class of X with, for the column C of X that earns least, the
// sum over the classes of X\{C} of min(m-1, m(m-1)/2 pdep(C)), and is 0
// when that sum is within the eps budget of the distinct records. Only the
// keys of at least minStrength are listed.
func oracleKeys(cols [][]int, n int, eps float64, maxCols int, minStrength float64) []string {
	m := len(cols)
	budget := RemovalBudget(eps, n)
	keep, nd := oracleDistinct(cols, n)
	classes := func(x uint64, rows []bool) map[string]int {
		out := map[string]int{}
		for r := 0; r < n; r++ {
			if rows != nil && !rows[r] {
				continue
			}
			var k strings.Builder
			for c := 0; c < m; c++ {
				if x&(1<<c) != 0 {
					fmt.Fprintf(&k, "%d,", cols[c][r])
				}
			}
			out[k.String()]++
		}
		return out
	}
	isKey := func(x uint64) bool { return n-len(classes(x, nil)) <= budget }
	var out []string
	for x := uint64(1); x < 1<<m; x++ {
		size := 0
		for c := 0; c < m; c++ {
			if x&(1<<c) != 0 {
				size++
			}
		}
		if size > maxCols || !isKey(x) {
			continue
		}
		minimal := true
		for y := (x - 1) & x; y != 0; y = (y - 1) & x {
			minimal = minimal && !isKey(y)
		}
		if !minimal {
			continue
		}
		observed := float64(nd - len(classes(x, keep)))
		expected := math.Inf(1)
		var names []string
		for c := 0; c < m; c++ {
			if x&(1<<c) == 0 {
				continue
			}
			names = append(names, "c"+fmt.Sprint(c))
			pdep := 0.0
			for _, k := range classes(1<<c, keep) {
				pdep += float64(k*k) / float64(nd*nd)
			}
			e := 0.0
			for _, k := range classes(x&^(1<<c), keep) {
				mm := float64(k)
				e += math.Min(mm-1, mm*(mm-1)/2*pdep)
			}
			expected = math.Min(expected, e)
		}
		s := math.Max(0, math.Min(1, 1-(observed+10)/(expected+10)))
		if b := RemovalBudget(eps, nd); b > 0 && expected <= float64(b) {
			s = 0 // chance alone would pass the key's eps test
		}
		if s < minStrength {
			continue
		}
		out = append(out, fmt.Sprintf("key(%s) r=%d s=%.6f", strings.Join(names, ","), n-len(classes(x, nil)), s))
	}
	slices.Sort(out)
	return out
}

// TestKeysMatchBruteForce: findKeys returns exactly the oracle's minimal
// keys of at least a strength with their removals and strengths, on
// random tables, with the bounds of the key search and without them.
func TestKeysMatchBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2026))
	for i := range 200 {
		cols := randomTable(rng)
		n := 0
		if len(cols) > 0 {
			n = len(cols[0])
		}
		if n == 0 {
			continue
		}
		// Make some columns near-unique, so that keys exist.
		if i%2 == 0 {
			for r := range cols[0] {
				cols[len(cols)-1][r] = r % max(1, n-i%3)
			}
		}
		tab := tableFromInts(cols)
		unbounded := defaultListing
		unbounded.noKeyBound = true
		for _, tc := range []struct {
			eps, minStrength float64
			tune             listingTuning
		}{{0, 1e-9, defaultListing}, {0.1, 1e-9, defaultListing}, {0.1, 1e-9, unbounded}, {0.1, DefaultMinStrength, defaultListing}} {
			eps := tc.eps
			keys, err := findKeys(context.Background(), tab, eps, 3, tc.minStrength, tc.tune, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range keys {
				var names []string
				for _, c := range k.Cols {
					names = append(names, "c"+fmt.Sprint(c))
				}
				got = append(got, fmt.Sprintf("key(%s) r=%d s=%.6f", strings.Join(names, ","), k.Removals, k.Strength))
			}
			slices.Sort(got)
			if want := oracleKeys(cols, n, eps, 3, tc.minStrength); !slices.Equal(got, want) {
				t.Fatalf("table %d eps %v noKeyBound %v:\ncols %v\ngot  %q\nwant %q", i, eps, tc.tune.noKeyBound, cols, got, want)
			}
		}
	}
}

// TestSummarize: on a table with an id, two copies of a code, a code that
// determines a group and a city that the group determines and sorts with
// it, Summarize lists the key, the equivalence and the rules once (the
// group's FD and order as one order dependency), and what steps back
// names what it follows from.
func TestSummarize(t *testing.T) {
	var id, code, copyOf, group, city []int
	for r := range 400 {
		id = append(id, r)
		c := r % 40
		code, copyOf = append(code, c), append(copyOf, c+100)
		group = append(group, c%8)
		city = append(city, c%8/2)
	}
	var reliable []string
	stepped := map[string][]string{}
	for _, r := range summarize(t, tableFromInts([][]int{id, code, copyOf, group, city}), defaultListing) {
		if r.Reliable {
			reliable = append(reliable, r.String()+" eq="+strings.Join(r.Equivalents, ",")+" with="+strings.Join(r.With, ","))
		}
		if len(r.ImpliedBy) > 0 {
			stepped[r.String()] = r.ImpliedBy
		}
		if r.StatedIn != "" {
			stepped[r.String()] = []string{"in " + r.StatedIn}
		}
	}
	slices.Sort(reliable)
	want := []string{
		"key(c0) eq= with=",
		"{c1}: [] -> c3 eq=c2 with=",
		"{c3}: [] -> c4 eq= with={}: c3 ~ c4 (asc)",
		"{}: c1 <-> c2 eq= with=",
	}
	if !slices.Equal(reliable, want) {
		t.Errorf("reliable %q, want %q", reliable, want)
	}
	for dep, by := range map[string][]string{
		"{c2}: [] -> c1":    {"{}: c1 <-> c2"},
		"{c2}: [] -> c3":    {"{c1}: [] -> c3"},
		"{c1}: [] -> c4":    {"{c1}: [] -> c3", "{c3}: [] -> c4"},
		"{c0}: [] -> c1":    {"key(c0)"},
		"{}: c3 ~ c4 (asc)": {"in {c3}: [] -> c4"},
	} {
		if got := stepped[dep]; !slices.Equal(got, by) {
			t.Errorf("%s implied_by %q, want %q", dep, got, by)
		}
	}
}

// TestRuleTextAndJSON: keys and equivalences print, parse and encode back
// to themselves.
func TestRuleTextAndJSON(t *testing.T) {
	for _, d := range []Dependency{
		{Kind: KindKey, Context: []string{}, Set: []string{"order_id"}},
		{Kind: KindKey, Context: []string{}, Set: []string{"name", "year"}},
		{Kind: KindKey, Context: []string{}, Set: []string{"a,b", "x)"}},
		{Kind: KindEquivalence, Context: []string{}, Set: []string{"education", "education_num"}},
		{Kind: KindEquivalence, Context: []string{"origin"}, Set: []string{"a<", "b c", "d"}},
	} {
		text := d.String()
		got, err := ParseDependency(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got.String() != text || !slices.Equal(got.Set, d.Set) || got.Kind != d.Kind {
			t.Errorf("%s parsed as %#v", text, got)
		}
		data, err := json.Marshal(Result{Dependency: d, Strength: 0.5, Equivalents: []string{"x"}, ImpliedBy: []string{"key(y)"}})
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if back.String() != text || !slices.Equal(back.Equivalents, []string{"x"}) || !slices.Equal(back.ImpliedBy, []string{"key(y)"}) {
			t.Errorf("%s decoded as %#v", data, back)
		}
	}
	for _, bad := range []string{"key()", "a <->", "{x: a <-> b", "a <-> b <-> "} {
		if _, err := ParseDependency(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if got := Describe(Dependency{Kind: KindKey, Set: []string{"order_id"}}); got != "order_id identifies a record" {
		t.Errorf("describe key: %q", got)
	}
}

// summarize runs Discover and Summarize on tab at eps 0.05 and the
// default threshold with the given tuning.
func summarize(t *testing.T, tab *table.Table, tune listingTuning) []Result {
	t.Helper()
	opts := Options{Epsilon: 0.05, MinStrength: DefaultMinStrength, tune: &tune}
	d, err := Discover(context.Background(), tab, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := Summarize(context.Background(), tab, d, opts); err != nil {
		t.Fatal(err)
	}
	return d.Dependencies
}

// summarized is summarize on cols, the columns nominal typed so, and
// returns the reliable entries' texts and what each other entry names.
func summarized(t *testing.T, cols [][]int, nominal []int, tune listingTuning) ([]string, map[string][]string) {
	t.Helper()
	tab := tableFromInts(cols)
	for _, c := range nominal {
		tab.Columns[c].Type = table.Nominal
	}
	var reliable []string
	by := map[string][]string{}
	for _, r := range summarize(t, tab, tune) {
		if r.Reliable {
			reliable = append(reliable, r.String())
		} else {
			by[r.String()] = r.ImpliedBy
		}
	}
	return reliable, by
}

// TestListingTuning forces each threshold of the reliable listing that
// Summarize applies (listingTuning; minSupport is forced against the
// oracle in TestLatticeTypedReliableMatchesBruteForce) and checks the
// listing on either side of it.
func TestListingTuning(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	const n = 400
	// c0 a measurement (numeric, 320 values in 400 distinct records:
	// pairs in the first 160, unique after), c1 what c0's pairs agree on,
	// c2 what tells the records of a pair apart.
	var m, y, z []int
	for r := range n {
		if r < 160 {
			m, y = append(m, r/2), append(y, r/2%3)
		} else {
			m, y = append(m, 1000+r), append(y, rng.IntN(3))
		}
		z = append(z, r%2)
	}
	rule := "{c0}: [] -> c1"
	for _, tc := range []struct {
		name    string
		share   float64
		nominal []int
		want    bool
	}{
		{"measurement at the default share", defaultListing.measurementShare, nil, false},
		{"share above the column's", 0.9, nil, true},
		{"share at the column's", 0.8, nil, false},
		{"text labels are no measurement", defaultListing.measurementShare, []int{0}, true},
	} {
		tune := defaultListing
		tune.measurementShare = tc.share
		reliable, by := summarized(t, [][]int{m, y, z}, tc.nominal, tune)
		if got := slices.Contains(reliable, rule); got != tc.want {
			t.Errorf("%s: %s reliable %v, want %v (reliable %q, stepped back %v)", tc.name, rule, got, tc.want, reliable, by)
		}
	}

	// c0 and c1 together identify a record, neither alone does.
	var a, b, v []int
	for r := range n {
		a, b, v = append(a, r%20), append(b, r/20), append(v, rng.IntN(5))
	}
	for _, k := range []int{1, 2, 3} {
		tune := defaultListing
		tune.maxKeyColumns = k
		reliable, _ := summarized(t, [][]int{a, b, v}, []int{0, 1}, tune)
		if got, want := slices.Contains(reliable, "key(c0,c1)"), k >= 2; got != want {
			t.Errorf("maxKeyColumns %d: key(c0,c1) listed %v, want %v (%q)", k, got, want, reliable)
		}
	}
}

// TestSummarizeStepsBack: an order by a key steps back, naming the key;
// a rule onto a column that is empty within eps is not listed at all,
// since the constant {}: [] -> c3 holds at a smaller context.
func TestSummarizeStepsBack(t *testing.T) {
	const n = 400
	// c0 an id, c1 growing with it; c3 empty but in the 10 records
	// (2.5%) of one class of c2, which determines it.
	var id, w, g, e []int
	for r := range n {
		id, w, g = append(id, r), append(w, r/10), append(g, r%40)
		if r%40 == 0 {
			e = append(e, 5)
		} else {
			e = append(e, nullValue)
		}
	}
	reliable, by := summarized(t, [][]int{id, w, g, e}, []int{2}, defaultListing)
	if dep, want := "{}: c0 ~ c1 (asc)", "key(c0)"; slices.Contains(reliable, dep) || !slices.Contains(by[dep], want) {
		t.Errorf("%s: reliable %v, implied by %q, want it stepping back for %s (reliable %q)", dep, slices.Contains(reliable, dep), by[dep], want, reliable)
	}
	if dep := "{c2}: [] -> c3"; slices.Contains(reliable, dep) {
		t.Errorf("%s listed as reliable, want it not listed (reliable %q)", dep, reliable)
	} else if _, listed := by[dep]; listed {
		t.Errorf("%s listed, implied by %q, want it not listed", dep, by[dep])
	}
}

// TestStateTogether: the reliable FDs of one left side are one entry, and
// an FD with the OC that makes it an order dependency is one entry; the
// parts name it (stated_in), are not reliable on their own, are stated in
// its words and survive JSON.
func TestStateTogether(t *testing.T) {
	const n = 400
	var label, a, b, sorted, coarse []int
	for r := range n {
		label, a, b = append(label, r%50), append(a, r%50%3), append(b, r%50/10)
		sorted, coarse = append(sorted, r%40), append(coarse, r%40/10)
	}
	tab := tableFromInts([][]int{label, a, b, sorted, coarse})
	for _, c := range []int{0, 1, 2} {
		tab.Columns[c].Type = table.Nominal
	}
	words := map[string]string{}
	in := map[string]string{}
	for _, r := range summarize(t, tab, defaultListing) {
		if r.Reliable && len(r.With) > 0 {
			words[r.String()] = describeTogether(&r)
		}
		if r.StatedIn != "" {
			if r.Reliable {
				t.Errorf("%s is stated in %s and reliable", r, r.StatedIn)
			}
			in[r.String()] = r.StatedIn
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back Result
			if err := json.Unmarshal(data, &back); err != nil || back.StatedIn != r.StatedIn {
				t.Errorf("%s: stated_in decoded as %q (%v)", data, back.StatedIn, err)
			}
		}
	}
	for head, want := range map[string]string{
		"{c0}: [] -> c2": "c0 determines c2 and c1",
		"{c3}: [] -> c4": "sorting by c3 sorts c4",
	} {
		if words[head] != want {
			t.Errorf("%s: words %q, want %q (all %q)", head, words[head], want, words)
		}
	}
	for part, head := range map[string]string{"{c0}: [] -> c1": "{c0}: [] -> c2", "{}: c3 ~ c4 (asc)": "{c3}: [] -> c4"} {
		if in[part] != head {
			t.Errorf("%s stated in %q, want %q", part, in[part], head)
		}
	}
}

// TestKeyByChance: a near-unique column with a small one is a key that
// chance would have made (its strength is 0 and it is not listed), while
// a grid of two columns, every combination once, is listed: chance would
// have repeated its combinations far beyond eps.
func TestKeyByChance(t *testing.T) {
	const n = 1000
	var near, small, day, place []int
	for r := range n {
		// near: 940 values, its 60 repeats (over the budget of 50) told
		// apart by small, of 3 values: chance would leave 20 together.
		near, small = append(near, r%940), append(small, r/2%3)
		day, place = append(day, r/2), append(place, r%2)
	}
	tab := tableFromInts([][]int{near, small, day, place})
	for _, c := range []int{1, 3} {
		tab.Columns[c].Type = table.Nominal
	}
	opts := Options{Epsilon: 0.05, MinStrength: DefaultMinStrength}
	for key, reliable := range map[string]bool{"key(c0,c1)": false, "key(c2,c3)": true} {
		d, err := ParseDependency(key)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Validate(context.Background(), tab, d, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.Removals != 0 || r.Reliable != reliable || !reliable && r.Strength != 0 {
			t.Errorf("%s: removals %d, strength %.3f, reliable %v; want 0 removals, reliable %v", key, r.Removals, r.Strength, r.Reliable, reliable)
		}
	}
	var listed []string
	for _, r := range summarize(t, tab, defaultListing) {
		if r.Reliable && r.Kind == KindKey {
			listed = append(listed, r.String())
		}
	}
	if !slices.Equal(listed, []string{"key(c2,c3)"}) {
		t.Errorf("keys listed %q, want [key(c2,c3)]", listed)
	}
}

// TestMirrorsAndTriangles: X,A -> B with its mirror X,B -> A is one
// equivalence {X}: A <-> B, which both FDs name; of three FDs any two of
// whose columns determine the third, the strongest is listed and the
// other two name it.
func TestMirrorsAndTriangles(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 9))
	const n = 400
	// Within each c0 (a city), c1 (a state) and c2 (a county) name each
	// other; across cities they do not. c3 is noise that keeps the
	// records distinct.
	var city, state, county, noise []int
	for range n {
		c, s := rng.IntN(20), rng.IntN(5)
		city, state, county, noise = append(city, c), append(state, s), append(county, (s+c)%5), append(noise, rng.IntN(50))
	}
	reliable, by := summarized(t, [][]int{city, state, county, noise}, []int{0, 1, 2, 3}, defaultListing)
	eq := "{c0}: c1 <-> c2"
	if !slices.Contains(reliable, eq) {
		t.Errorf("%s not reliable (reliable %q)", eq, reliable)
	}
	for _, fd := range []string{"{c0,c1}: [] -> c2", "{c0,c2}: [] -> c1"} {
		if !slices.Contains(by[fd], eq) {
			t.Errorf("%s names %q, want %s (reliable %q)", fd, by[fd], eq, reliable)
		}
	}

	// c0 and c1 are the ends of a route, c2 its distance, the same both
	// ways: any two of them determine the third, and distance alone names
	// neither end.
	var from, to, dist []int
	noise = noise[:0]
	for range n {
		a, b := rng.IntN(8), rng.IntN(7)
		if b >= a {
			b++
		}
		from, to, dist, noise = append(from, a), append(to, b), append(dist, min(a, b)*8+max(a, b)), append(noise, rng.IntN(50))
	}
	reliable, by = summarized(t, [][]int{from, to, dist, noise}, []int{0, 1, 3}, defaultListing)
	fds := []string{"{c0,c1}: [] -> c2", "{c0,c2}: [] -> c1", "{c1,c2}: [] -> c0"}
	var head []string
	for _, fd := range fds {
		if slices.Contains(reliable, fd) {
			head = append(head, fd)
		}
	}
	if len(head) != 1 {
		t.Fatalf("reliable %q, want one of %q", reliable, fds)
	}
	for _, fd := range fds {
		if fd != head[0] && !slices.Equal(by[fd], head) {
			t.Errorf("%s names %q, want %q (reliable %q)", fd, by[fd], head, reliable)
		}
	}
	if slices.ContainsFunc(reliable, func(s string) bool { return strings.Contains(s, "<->") }) {
		t.Errorf("a triangle is stated as an equivalence: %q", reliable)
	}
}

// TestSummarizeKeepsTheOrder: Summarize's listing is in sortResults'
// order whether a step changed it (an entry added, a reliable one
// stepping back: sorted again) or not (the sort skipped), on random tables
// of both kinds.
func TestSummarizeKeepsTheOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 3))
	sorted, skipped := 0, 0
	for i := range 60 {
		cols := strengthTable(rng)
		if i%2 == 1 {
			cols = repairTable(rng)
		}
		tab := tableFromInts(cols)
		opts := Options{Epsilon: 0.1, MinStrength: 0.4}
		d, err := Discover(context.Background(), tab, opts)
		if err != nil {
			t.Fatal(err)
		}
		before, reliable := len(d.Dependencies), reliableEntries(d.Dependencies)
		if err := Summarize(context.Background(), tab, d, opts); err != nil {
			t.Fatal(err)
		}
		if len(d.Dependencies) != before || !slices.Equal(reliableEntries(d.Dependencies), reliable) {
			sorted++
		} else {
			skipped++
		}
		want := slices.Clone(d.Dependencies)
		sortResults(want)
		if !reflect.DeepEqual(d.Dependencies, want) {
			t.Fatalf("table %d: Summarize's listing is not in order", i)
		}
	}
	if sorted == 0 || skipped == 0 {
		t.Fatalf("%d listings sorted again, %d not: want both", sorted, skipped)
	}
}

// TestMirrorFallback: two reliable mirror FDs X,A -> B and X,B -> A whose
// equivalence {X}: A <-> B is not reliable on the table (here the FDs are
// reliable only because the discovery handed to Summarize says so, on
// independent columns) are not made one: the stronger stays, the other
// steps back naming it, equal strengths going by text.
func TestMirrorFallback(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 21))
	cols := make([][]int, 3)
	for range 400 {
		for c := range cols {
			cols[c] = append(cols[c], rng.IntN(3))
		}
	}
	tab := tableFromInts(cols)
	ab, ba := "{c0,c1}: [] -> c2", "{c0,c2}: [] -> c1"
	for _, tc := range []struct {
		abStrength, baStrength float64
		kept, back             string
	}{
		{0.8, 0.9, ba, ab},
		{0.9, 0.8, ab, ba},
		{0.8, 0.8, ab, ba}, // a tie: the smaller text stays
	} {
		fd := func(text string, strength float64) Result {
			d, err := ParseDependency(text)
			if err != nil {
				t.Fatal(err)
			}
			return Result{Dependency: d, Strength: strength, Reliable: true, Score: 0.3}
		}
		d := &Discovery{Rows: tab.Rows, Columns: []string{"c0", "c1", "c2"}, Epsilon: 0.1, Complete: true,
			Dependencies: []Result{fd(ab, tc.abStrength), fd(ba, tc.baStrength)}}
		if err := Summarize(context.Background(), tab, d, Options{Epsilon: 0.1, MinStrength: 0.5}); err != nil {
			t.Fatal(err)
		}
		got := map[string]Result{}
		for _, r := range d.Dependencies {
			got[r.String()] = r
			if r.Kind == KindEquivalence {
				t.Errorf("strengths %v/%v: equivalence %s added (reliable %v)", tc.abStrength, tc.baStrength, r, r.Reliable)
			}
		}
		if k := got[tc.kept]; !k.Reliable {
			t.Errorf("strengths %v/%v: %s not reliable (implied by %q)", tc.abStrength, tc.baStrength, tc.kept, k.ImpliedBy)
		}
		if b := got[tc.back]; b.Reliable || !slices.Equal(b.ImpliedBy, []string{tc.kept}) {
			t.Errorf("strengths %v/%v: %s reliable %v, implied by %q; want stepped back naming %s", tc.abStrength, tc.baStrength, tc.back, b.Reliable, b.ImpliedBy, tc.kept)
		}
	}
}

// TestSummarizePauses: Summarize passes Options.Pause before each
// candidate key's partition and each validation (the monitor's check gate
// holds it there), gives the listing it gives without one, and stops with
// the pause's error at any of its calls.
func TestSummarizePauses(t *testing.T) {
	var id, code, copyOf, group, city []int
	for r := range 400 {
		c := r % 40
		id, code, copyOf = append(id, r), append(code, c), append(copyOf, c+100)
		group, city = append(group, c%8), append(city, c%8/2)
	}
	tab := tableFromInts([][]int{id, code, copyOf, group, city})
	opts := Options{Epsilon: 0.05, MinStrength: DefaultMinStrength}
	run := func(pause func(context.Context) error) ([]Result, error) {
		d, err := Discover(context.Background(), tab, opts)
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Pause = pause
		err = Summarize(context.Background(), tab, d, o)
		return d.Dependencies, err
	}
	want, err := run(nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, err := run(func(context.Context) error { calls++; return nil })
	if err != nil || !slices.EqualFunc(got, want, func(a, b Result) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("with a pause: err %v, the same listing %v", err, slices.EqualFunc(got, want, func(a, b Result) bool { return fmt.Sprint(a) == fmt.Sprint(b) }))
	}
	// Five columns: 15 key candidates of up to 3 columns at least, and the
	// validation of the equivalence c1 <-> c2.
	if calls < 6 {
		t.Fatalf("%d pauses, want one per candidate key and validation", calls)
	}
	stop := errors.New("stop")
	for k := 1; k <= calls; k++ {
		n := 0
		_, err := run(func(context.Context) error {
			if n++; n == k {
				return stop
			}
			return nil
		})
		if err != stop || n != k {
			t.Fatalf("pause %d of %d failing: err %v after %d pauses, want its error at once", k, calls, err, n)
		}
	}
}
