package discovery

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
)

// costTable is issue 7's example: repair and total are 0 in 98% of rows and
// ordered together otherwise; noise is unrelated to both.
func costTable(n int) *table.Table {
	rng := rand.New(rand.NewPCG(1, 7))
	b, _ := table.NewTableBuilder([]string{"repair", "total", "noise"})
	for r := range n {
		repair, total := 0, 0
		if r%50 == 0 {
			repair = 100 + rng.IntN(900)
			total = repair + 50
		}
		b.AppendRow([][]byte{[]byte(strconv.Itoa(repair)), []byte(strconv.Itoa(total)), []byte(strconv.Itoa(rng.IntN(1000)))}, nil)
	}
	tab, err := b.Table(table.Typing{})
	if err != nil {
		panic(err)
	}
	return tab
}

func findResult(d *Discovery, text string) (Result, bool) {
	for _, r := range d.Dependencies {
		if r.Dependency.String() == text {
			return r, true
		}
	}
	return Result{}, false
}

// TestNearConstantDoesNotHideReliable: {}: [] -> total holds at eps 0.05
// but is not reliable, so it does not keep {}: repair ~ total out; and the
// OC is strong.
func TestNearConstantDoesNotHideReliable(t *testing.T) {
	tab := costTable(5000)
	d, err := Discover(context.Background(), tab, Options{Epsilon: 0.05, MinStrength: DefaultMinStrength})
	if err != nil {
		t.Fatal(err)
	}
	fd, ok := findResult(d, "{}: [] -> total")
	if !ok || fd.Reliable || fd.Strength > 0.1 {
		t.Errorf("{}: [] -> total: found %v, %+v; want it unreliable with strength near 0", ok, fd)
	}
	oc, ok := findResult(d, "{}: repair ~ total (asc)")
	if !ok || !oc.Reliable || oc.Strength < 0.9 {
		t.Errorf("{}: repair ~ total (asc): found %v, %+v; want it reliable and strong\n%v", ok, oc, d.Dependencies)
	}
	if !d.Dependencies[0].Reliable {
		t.Errorf("first result %v not reliable", d.Dependencies[0])
	}
	for _, r := range d.Dependencies {
		if r.Reliable && (r.Kind == KindOC && (r.Left == "noise" || r.Right == "noise")) {
			t.Errorf("%s (strength %v) relates noise and is called reliable", r.Dependency, r.Strength)
		}
	}
	// The paper's minimal set alone does not have the OC.
	d0, err := Discover(context.Background(), tab, Options{Epsilon: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := findResult(d0, "{}: repair ~ total (asc)"); ok {
		t.Errorf("with every dependency reliable, the OC is not minimal, yet it was returned")
	}
}

// TestShuffledRemovalsDistinct checks the OC chance model against its
// closed form: for m distinct A and B values, a random order keeps about
// 2*sqrt(m) - 1.77*m^(1/6) rows (Baik, Deift and Johansson).
func TestShuffledRemovalsDistinct(t *testing.T) {
	for _, m := range []int{1000, 10000, 100000} {
		a := make([]int, m)
		for i := range a {
			a[i] = i
		}
		tab := tableFromInts([][]int{a, slices.Clone(a)})
		v := validate.NewValidator()
		p := validate.FullPartition(m)
		kept := m - v.OCShuffledRemovals(p, &tab.Columns[0], &tab.Columns[1], Asc)
		want := 2*math.Sqrt(float64(m)) - 1.77*math.Pow(float64(m), 1.0/6)
		if math.Abs(float64(kept)-want) > 4*math.Pow(float64(m), 1.0/6) {
			t.Errorf("m=%d: shuffle keeps %d rows, theory %.0f", m, kept, want)
		}
		if s := v.OCStrength(p, &tab.Columns[0], &tab.Columns[1], Asc, 0); s < 0.98 {
			t.Errorf("m=%d: a perfect order has strength %v", m, s)
		}
		if s := v.OCStrength(p, &tab.Columns[0], &tab.Columns[1], Asc, m-kept); s > 0.01 {
			t.Errorf("m=%d: an order as bad as chance has strength %v", m, s)
		}
	}
}

// TestStrengthEdges: no rows is NoStrength (never NaN), a key context and a
// constant right side are 0, and a near-key context with an exact FD is
// near 0.
func TestStrengthEdges(t *testing.T) {
	v := validate.NewValidator()
	empty := tableFromInts([][]int{{}, {}})
	p := validate.FullPartition(0)
	if s := v.OFDStrength(p, &empty.Columns[1], validate.ColumnPdep(&empty.Columns[1])); s != NoStrength {
		t.Errorf("empty OFD strength %v", s)
	}
	if s := v.OCStrength(p, &empty.Columns[0], &empty.Columns[1], Asc, 0); s != NoStrength {
		t.Errorf("empty OC strength %v", s)
	}
	n := 500
	key, near, constant, other := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	for r := range n {
		key[r], near[r] = r, r
		if r < 4 {
			near[r] = r / 2 // two pairs, the only classes of more than one row
		}
		other[r] = near[r] % 7
	}
	tab := tableFromInts([][]int{key, near, constant, other})
	for _, tc := range []struct {
		ctx, a int
		max    float64
	}{
		{0, 3, 0},   // key context
		{1, 3, 0.2}, // exact on a near key: two pairs of evidence
		{3, 2, 0},   // constant right side
	} {
		part := validate.ColumnPartition(&tab.Columns[tc.ctx])
		s := v.OFDStrength(part, &tab.Columns[tc.a], validate.ColumnPdep(&tab.Columns[tc.a]))
		if math.IsNaN(s) || s < 0 || s > tc.max {
			t.Errorf("c%d -> c%d: strength %v, want in [0, %v]", tc.ctx, tc.a, s, tc.max)
		}
	}
}

// TestBoundUnreliableKeepsTheListing runs Discover and Summarize on real
// tables with and without Options.BoundUnreliable: the text listing
// without --all (what the discover command prints with it) must be the
// same, and the bounds must bound the strengths they replace.
func TestBoundUnreliableKeepsTheListing(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cars.csv", "species.csv", "bench/abalone.csv", "bench/echocardiogram.csv", "bench/horse10.csv"} {
		tab := readShared(t, name, tableio.CSVOptions{})
		listing := func(bound bool) (*Discovery, string) {
			opts := Options{Epsilon: 0.1, MaxLevel: 4, MinStrength: DefaultMinStrength, BoundUnreliable: bound}
			d, err := Discover(context.Background(), tab, opts)
			if err == nil {
				err = Summarize(context.Background(), tab, d, opts)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			d.Stats.Seconds = 0
			var buf strings.Builder
			if err := d.WriteText(&buf, false); err != nil {
				t.Fatal(err)
			}
			return d, buf.String()
		}
		exact, want := listing(false)
		bounded, got := listing(true)
		if got != want {
			t.Fatalf("%s: listing with strength bounds\n%s\nwithout\n%s", name, got, want)
		}
		strengths := map[string]float64{}
		for _, r := range exact.Dependencies {
			strengths[r.String()] = r.Strength
		}
		n := 0
		for _, r := range bounded.Dependencies {
			if r.StrengthBound {
				n++
				checkStrengthBound(t, r, strengths[r.String()], DefaultMinStrength, true)
			}
		}
		t.Logf("%s: %d of %d strengths bounded", name, n, len(bounded.Dependencies))
	}
}
