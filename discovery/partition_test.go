package discovery

import (
	"slices"
	"testing"

	"github.com/odwatch/odwatch/discovery/internal/validate"
)

func partitionClasses(p *validate.StrippedPartition) [][]uint32 {
	var out [][]uint32
	for i := 0; i < p.NumClasses(); i++ {
		out = append(out, slices.Clone(p.Class(i)))
	}
	slices.SortFunc(out, func(x, y []uint32) int { return int(x[0]) - int(y[0]) })
	return out
}

func TestPartitions(t *testing.T) {
	tab := tableFromInts([][]int{
		{1, 1, 2, 2, 1, 3},
		{5, 6, 5, 5, 5, 7},
	})
	tests := []struct {
		name string
		p    *validate.StrippedPartition
		want [][]uint32
	}{
		{"empty context", validate.FullPartition(6), [][]uint32{{0, 1, 2, 3, 4, 5}}},
		{"one row", validate.FullPartition(1), nil},
		{"column 0", validate.ColumnPartition(&tab.Columns[0]), [][]uint32{{0, 1, 4}, {2, 3}}},
		{"column 1", validate.ColumnPartition(&tab.Columns[1]), [][]uint32{{0, 2, 3, 4}}},
		{"product", validate.ColumnPartition(&tab.Columns[0]).Product(validate.ColumnPartition(&tab.Columns[1])), [][]uint32{{0, 4}, {2, 3}}},
		{"product with empty", validate.ColumnPartition(&tab.Columns[0]).Product(validate.FullPartition(6)), [][]uint32{{0, 1, 4}, {2, 3}}},
		{"PartitionOf", validate.PartitionOf(tab, []int{1, 0}), [][]uint32{{0, 4}, {2, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := partitionClasses(tc.p)
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("classes %v, want %v", got, tc.want)
			}
			covered := 0
			for _, c := range tc.want {
				covered += len(c)
			}
			if tc.p.Covered() != covered {
				t.Fatalf("covered %d, want %d", tc.p.Covered(), covered)
			}
		})
	}
	// Score counts singletons: column 0 has classes 3, 2, 1 over 6 rows.
	if got, want := validate.ColumnPartition(&tab.Columns[0]).Score(), 14.0/36; got != want {
		t.Fatalf("score %v, want %v", got, want)
	}
}

func TestClassesBySize(t *testing.T) {
	tests := []struct {
		name   string
		starts []uint32
		want   []uint32
	}{
		{"none", nil, []uint32{}},
		{"one", []uint32{0, 3}, []uint32{0}},
		{"ties by index", []uint32{0, 2, 5, 7, 10, 12}, []uint32{1, 3, 0, 2, 4}},
		{"descending", []uint32{0, 2, 4, 9}, []uint32{2, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &validate.StrippedPartition{Starts: tt.starts}
			if len(tt.starts) > 0 {
				p.Rows = make([]uint32, tt.starts[len(tt.starts)-1])
			}
			got := validate.ClassesBySize(p, nil)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ClassesBySize = %v, want %v", got, tt.want)
			}
		})
	}
}
