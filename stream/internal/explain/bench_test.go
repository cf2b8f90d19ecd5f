package explain

import (
	"testing"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/benchstream"
	"github.com/odwatch/odwatch/internal/testkit"
)

// benchWindow is a 100k-record window of benchstream's 20 fields, 5% of
// its records faulty (benchstream.FaultRule breaks), in dictionary form,
// and the encoded columns of rule.
func benchWindow(b *testing.B, rule string) (Window, discovery.Dependency) {
	d, err := discovery.ParseDependency(rule)
	if err != nil {
		b.Fatal(err)
	}
	tb, err := table.NewTableBuilder(benchstream.Fields)
	if err != nil {
		b.Fatal(err)
	}
	s, vals := benchstream.New(1), make([]string, len(benchstream.Fields))
	for i := range 100_000 {
		s.Row(vals, i%20 == 0)
		tb.AppendStrings(vals)
	}
	cols := tb.DictColumns()
	var ruleCols []table.DictColumn
	for _, c := range cols {
		for _, n := range d.Columns() {
			if c.Name == n {
				ruleCols = append(ruleCols, c)
			}
		}
	}
	enc, err := table.EncodeTyped(ruleCols, table.Typing{})
	if err != nil {
		b.Fatal(err)
	}
	return Window{Columns: cols, Rule: enc}, d
}

// BenchmarkExplain: an explanation of a 100k-record window of 20 fields
// (issue 23: at most 50 ms), for an FD and an OC. cpu-ms is the process's
// CPU time (all threads, the collector's too) per explanation: a bound on
// the wall time of an idle machine whatever the load now.
func BenchmarkExplain(b *testing.B) {
	for _, rule := range []string{benchstream.FaultRule, "{}: age ~ age_group (asc)"} {
		b.Run(rule, func(b *testing.B) {
			w, d := benchWindow(b, rule)
			b.ResetTimer()
			c0 := testkit.CPUTime(b)
			for b.Loop() {
				r, err := Explain(w, d, DefaultOptions)
				if err != nil || len(r.Violating) == 0 {
					b.Fatal(err, len(r.Violating))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/explanation")
			b.ReportMetric(float64((testkit.CPUTime(b)-c0).Milliseconds())/float64(b.N), "cpu-ms/explanation")
		})
	}
}
