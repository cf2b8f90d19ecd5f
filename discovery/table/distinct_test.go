package table

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDistinct: Distinct marks the first row of each set of identical rows,
// as a brute-force comparison of the rows' values does, on random tables
// with few values (many repeats) and many (none); a table keeps what it
// found, and finds it again over the columns appended since.
func TestDistinct(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 21))
	for i := range 300 {
		rows, cols := rng.IntN(40), rng.IntN(4)
		dc := make([]DictColumn, cols)
		for c := range dc {
			dc[c] = DictColumn{Name: fmt.Sprint("c", c), Dict: []string{"a", "b", "c"}}
			values := 1 + rng.IntN(3)
			if i%5 == 0 {
				values = 3
			}
			for range rows {
				dc[c].Codes = append(dc[c].Codes, uint32(rng.IntN(values+1)))
			}
		}
		tab, err := Encode(dc)
		if err != nil {
			t.Fatal(err)
		}
		tab.Rows = rows
		check := func(what string) {
			got := tab.Distinct()
			want, n := bruteDistinct(tab)
			if got.N != n || (got.First == nil) != (n == rows) || got.First != nil && !slices.Equal(got.First, want) {
				t.Fatalf("table %d %s: got %v (%d), want %v (%d)", i, what, got.First, got.N, want, n)
			}
		}
		check("fresh")
		if tab.Distinct() != tab.Distinct() {
			t.Fatalf("table %d: Distinct found again", i)
		}
		more, err := Encode([]DictColumn{{Name: "x", Dict: []string{"p", "q"}, Codes: make([]uint32, rows)}})
		if err != nil {
			t.Fatal(err)
		}
		for r := range rows {
			more.Columns[0].Ranks[r] = uint32(r % 2)
		}
		tab.Columns = append(tab.Columns, more.Columns...)
		check("after a column appended")
	}
}

// bruteDistinct compares every row with every earlier one.
func bruteDistinct(t *Table) ([]bool, int) {
	first := make([]bool, t.Rows)
	n := 0
	for r := range t.Rows {
		first[r] = true
		for q := 0; q < r && first[r]; q++ {
			if sameRow(t, q, r) {
				first[r] = false
			}
		}
		if first[r] {
			n++
		}
	}
	return first, n
}

// TestMarkDistinct: a marked table finds no repeated row, though its
// rows repeat, and columns appended later keep the mark.
func TestMarkDistinct(t *testing.T) {
	col := DictColumn{Name: "a", Dict: []string{"x"}, Codes: []uint32{1, 1, 1}}
	tab, err := Encode([]DictColumn{col})
	if err != nil {
		t.Fatal(err)
	}
	if d := tab.Distinct(); d.N != 1 {
		t.Fatalf("unmarked: %d distinct records, want 1", d.N)
	}
	tab.MarkDistinct()
	more, err := Encode([]DictColumn{{Name: "b", Dict: []string{"y"}, Codes: []uint32{1, 1, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	tab.Columns = append(tab.Columns, more.Columns...)
	if d := tab.Distinct(); d.N != 3 || d.First != nil {
		t.Fatalf("marked: %+v, want 3 distinct records", d)
	}
}
