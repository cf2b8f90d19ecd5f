package discovery

import (
	"context"
	"testing"

	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/benchstream"
)

// BenchmarkFindKeys is Summarize's key search (findKeys, at most three
// columns, eps 0.01: the monitor's defaults) on a window of the stream's
// end-to-end benchmark (internal/benchstream, 100k records, 20 fields),
// where it ran at each discovery at min-strength 0.5.
func BenchmarkFindKeys(b *testing.B) {
	const window = 100_000
	s := benchstream.New(1)
	cols := make([]table.DictColumn, len(benchstream.Fields))
	dicts := make([]map[string]uint32, len(cols))
	for i, name := range benchstream.Fields {
		cols[i] = table.DictColumn{Name: name, Codes: make([]uint32, window)}
		dicts[i] = map[string]uint32{}
	}
	row := make([]string, len(benchstream.Fields))
	for r := range window {
		s.Row(row, false)
		for i, v := range row {
			code, ok := dicts[i][v]
			if !ok {
				code = uint32(len(cols[i].Dict))
				dicts[i][v] = code
				cols[i].Dict = append(cols[i].Dict, v)
			}
			cols[i].Codes[r] = code
		}
	}
	tab, err := table.EncodeTyped(cols, table.Typing{})
	if err != nil {
		b.Fatal(err)
	}
	var keys []foundKey
	for b.Loop() {
		if keys, err = findKeys(context.Background(), tab, 0.01, defaultListing.maxKeyColumns, defaultListing, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(keys)), "keys")
}
