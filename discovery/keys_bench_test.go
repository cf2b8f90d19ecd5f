package discovery

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/benchstream"
)

// BenchmarkFindKeys is Summarize's key search (findKeys, at most three
// columns, eps 0.01, DefaultMinStrength: the monitor's defaults) on a
// window of the stream's end-to-end benchmark (internal/benchstream, 100k
// records, 20 fields), where it runs at each discovery.
func BenchmarkFindKeys(b *testing.B) {
	tab := benchStreamWindow(b)
	var keys []foundKey
	var err error
	for b.Loop() {
		if keys, err = findKeys(context.Background(), tab, 0.01, defaultListing.maxKeyColumns, DefaultMinStrength, defaultListing, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(keys)), "keys")
}

// BenchmarkDiscoverStreamWindow is a monitor's discovery of a window of
// the end-to-end stream (100k records, 20 fields, eps 0.01, three levels,
// one worker) at min-strength 0 and at the CLI's 0.5, with Summarize.
func BenchmarkDiscoverStreamWindow(b *testing.B) {
	tab := benchStreamWindow(b)
	for _, ms := range []float64{0, DefaultMinStrength} {
		b.Run(fmt.Sprintf("min-strength-%g", ms), func(b *testing.B) {
			opts := Options{Epsilon: 0.01, MaxLevel: 3, Workers: 1, MinStrength: ms}
			for b.Loop() {
				discoverSummarized(b, tab, opts)
			}
		})
	}
}

// benchStreamWindow is the first 100k records of the end-to-end stream,
// encoded as the monitor's discovery encodes its window.
func benchStreamWindow(b *testing.B) *table.Table {
	s := benchstream.New(1)
	row := make([]string, len(benchstream.Fields))
	return encodeRows(b, benchstream.Fields, 100_000, func(int) []string {
		s.Row(row, false)
		return row
	})
}

// encodeRows encodes n rows of the named columns, row(j) giving the j-th
// (its slice may be reused), with a dictionary per column in order of
// first appearance and the default typing, as the monitor's discovery
// encodes its window.
func encodeRows(b testing.TB, names []string, n int, row func(j int) []string) *table.Table {
	cols := make([]table.DictColumn, len(names))
	dicts := make([]map[string]uint32, len(cols))
	for i, name := range names {
		cols[i] = table.DictColumn{Name: name, Codes: make([]uint32, n)}
		dicts[i] = map[string]uint32{}
	}
	for j := range n {
		for i, v := range row(j) {
			code, ok := dicts[i][v]
			if !ok { // 0 is NULL: the k-th value is code k
				cols[i].Dict = append(cols[i].Dict, v)
				code = uint32(len(cols[i].Dict))
				dicts[i][v] = code
			}
			cols[i].Codes[j] = code
		}
	}
	tab, err := table.EncodeTyped(cols, table.Typing{})
	if err != nil {
		b.Fatal(err)
	}
	return tab
}

// BenchmarkRemovalSamples takes a 5-row removal sample of the rules a
// fault on age_group breaks in the end-to-end stream (its first 100k
// records, the last 2k faulty: the rules of the violated event and its
// related ones), as the monitor's samples do: RemovalSets, and
// ValidateEach with a removal sample, which measures strength and score
// besides.
func BenchmarkRemovalSamples(b *testing.B) {
	s := benchstream.New(1)
	row := make([]string, len(benchstream.Fields))
	tab := encodeRows(b, benchstream.Fields, 100_000, func(j int) []string {
		s.Row(row, j >= 98_000)
		return row
	})
	var deps []Dependency
	for _, r := range []string{"{}: age ~ age_group (asc)", "{flag}: age ~ age_group (asc)", "{age}: [] -> age_group", "{age,flag}: [] -> age_group"} {
		d, err := ParseDependency(r)
		if err != nil {
			b.Fatal(err)
		}
		deps = append(deps, d)
	}
	b.Run("RemovalSets", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := RemovalSets(context.Background(), tab, deps, 5); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ValidateEach", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := ValidateEach(context.Background(), tab, deps, Options{Epsilon: 0.01, RemovalSample: 5}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEncodeRowsMatchesTheBuilder: the benchmarks' window encoder gives
// the table the table builder gives the same rows (codes once shifted by
// one made every value its predecessor's and the first NULL, which kept
// the FDs and broke the OCs).
func TestEncodeRowsMatchesTheBuilder(t *testing.T) {
	s := benchstream.New(3)
	rows := make([][]string, 2000)
	tb, err := table.NewTableBuilder(benchstream.Fields)
	if err != nil {
		t.Fatal(err)
	}
	for j := range rows {
		rows[j] = make([]string, len(benchstream.Fields))
		s.Row(rows[j], j%50 == 0)
		tb.AppendStrings(rows[j])
	}
	want, err := table.EncodeTyped(tb.DictColumns(), table.Typing{})
	if err != nil {
		t.Fatal(err)
	}
	got := encodeRows(t, benchstream.Fields, len(rows), func(j int) []string { return rows[j] })
	for i := range want.Columns {
		g, w := got.Columns[i], want.Columns[i]
		if g.Type != w.Type || !slices.Equal(g.Values, w.Values) || !slices.Equal(g.Ranks, w.Ranks) {
			t.Errorf("column %s: encodeRows %v %v..., the builder %v %v...", w.Name, g.Type, g.Values[:min(3, len(g.Values))], w.Type, w.Values[:min(3, len(w.Values))])
		}
	}
}
