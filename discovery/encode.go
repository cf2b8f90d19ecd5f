package discovery

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Encode turns dictionary-coded columns into ranked columns following the
// typing rule of docs/DESIGN.md: a column is numeric when every non-NULL
// dictionary value parses as a float64 (strconv.ParseFloat), otherwise its
// values compare as byte strings. "NaN" (any spelling ParseFloat accepts)
// counts as text, because NaN has no place in an order: a column holding it
// is a string column. Infinities are ordered numbers and stay numeric.
// Numerically equal texts ("1", "1.0", "1e0") share one rank, and Values
// keeps the first of them in dictionary order.
//
// Rank 0 is NULL when the column has a NULL code; ranks are dense. The cost
// Literals out of float64 range ("1e400") are numbers too, at the nearest
// float. The cost
// is O(d log d + n) per column: the dictionary is sorted, then codes are
// mapped through a rank table. Encode fails when columns have different
// lengths or a code points outside its dictionary.
func Encode(cols []DictColumn) (*Table, error) {
	t := &Table{Columns: make([]Column, len(cols))}
	if len(cols) > 0 {
		t.Rows = len(cols[0].Codes)
	}
	for i := range cols {
		if len(cols[i].Codes) != t.Rows {
			return nil, fmt.Errorf("encode: column %q has %d rows, column %q has %d",
				cols[i].Name, len(cols[i].Codes), cols[0].Name, t.Rows)
		}
		c, err := encodeColumn(&cols[i])
		if err != nil {
			return nil, err
		}
		t.Columns[i] = c
	}
	return t, nil
}

func encodeColumn(dc *DictColumn) (Column, error) {
	d := len(dc.Dict)
	// Which codes occur decides whether rank 0 is NULL; unused dictionary
	// entries would leave holes in the ranks, so they are skipped.
	used := make([]bool, d+1)
	for _, c := range dc.Codes {
		if int64(c) > int64(d) {
			return Column{}, fmt.Errorf("encode: column %q: code %d outside a dictionary of %d values", dc.Name, c, d)
		}
		used[c] = true
	}
	idx := make([]int32, 0, d)
	for i := 0; i < d; i++ {
		if used[i+1] {
			idx = append(idx, int32(i))
		}
	}

	numeric := true
	var nums []float64
	for _, i := range idx {
		f, err := strconv.ParseFloat(dc.Dict[i], 64)
		// Out-of-range literals ("1e400") are still numbers: ParseFloat
		// returns the nearest float (±Inf or 0) with ErrRange.
		if err != nil && errors.Is(err, strconv.ErrRange) {
			err = nil
		}
		if err != nil || math.IsNaN(f) {
			numeric = false
			nums = nil
			break
		}
		if nums == nil {
			nums = make([]float64, d)
		}
		nums[i] = f
	}
	// An all-NULL (or empty) column has no values to type; calling it a
	// string column keeps the output stable.
	if len(idx) == 0 {
		numeric = false
	}

	var equal func(a, b int32) bool
	if numeric {
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(nums[a], nums[b]) })
		equal = func(a, b int32) bool { return nums[a] == nums[b] }
	} else {
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(dc.Dict[a], dc.Dict[b]) })
		equal = func(a, b int32) bool { return dc.Dict[a] == dc.Dict[b] }
	}

	rankOf := make([]uint32, d+1) // by code; code 0 (NULL) stays rank 0
	values := make([]string, 0, len(idx)+1)
	next := uint32(0)
	if used[0] {
		values = append(values, "")
		next = 1
	}
	for k, i := range idx {
		if k > 0 && equal(idx[k-1], i) {
			rankOf[i+1] = next - 1
			continue
		}
		rankOf[i+1] = next
		values = append(values, dc.Dict[i])
		next++
	}

	ranks := make([]uint32, len(dc.Codes))
	for r, c := range dc.Codes {
		ranks[r] = rankOf[c]
	}
	return Column{
		Name:        dc.Name,
		Numeric:     numeric,
		Ranks:       ranks,
		Cardinality: len(values),
		Values:      values,
	}, nil
}

// TableBuilder builds dictionary-coded columns row by row, for the readers
// and for anyone assembling a table in memory. An empty value is NULL, as an
// empty CSV cell is. Values are copied on first sight only: looking up a
// value already in a column's dictionary does not allocate.
type TableBuilder struct {
	cols   []builderColumn
	byName map[string]int
	rows   int
}

type builderColumn struct {
	name  string
	index map[string]uint32
	dict  []string
	codes []uint32
}

// NewTableBuilder starts a table with the given column names, which must be
// non-empty and distinct.
func NewTableBuilder(names []string) (*TableBuilder, error) {
	b := &TableBuilder{byName: make(map[string]int, len(names))}
	for _, n := range names {
		if _, err := b.AddColumn(n); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// AddColumn appends a column and returns its index; the rows already
// appended get NULL in it.
func (b *TableBuilder) AddColumn(name string) (int, error) {
	if name == "" {
		return 0, fmt.Errorf("column %d has an empty name", len(b.cols)+1)
	}
	if _, dup := b.byName[name]; dup {
		return 0, fmt.Errorf("duplicate column name %q", name)
	}
	return b.addColumnUnchecked(name), nil
}

// Column returns the index of the named column; name may be a byte slice
// converted in the call (b.Column(string(name))) without allocating.
func (b *TableBuilder) Column(name string) (int, bool) {
	i, ok := b.byName[name]
	return i, ok
}

// NumColumns is the number of columns so far.
func (b *TableBuilder) NumColumns() int { return len(b.cols) }

// Rows is the number of rows appended so far.
func (b *TableBuilder) Rows() int { return b.rows }

// Code returns the dictionary code of v in column col (0 for the empty value,
// NULL), adding v to the dictionary on first sight.
func (b *TableBuilder) Code(col int, v []byte) uint32 {
	if len(v) == 0 {
		return 0
	}
	c := &b.cols[col]
	if code, ok := c.index[string(v)]; ok {
		return code
	}
	s := string(v)
	c.dict = append(c.dict, s)
	code := uint32(len(c.dict))
	c.index[s] = code
	return code
}

// codeString is Code for a string that may share memory with a larger
// buffer: it is cloned before being kept.
func (b *TableBuilder) codeString(col int, v string) uint32 {
	if v == "" {
		return 0
	}
	c := &b.cols[col]
	if code, ok := c.index[v]; ok {
		return code
	}
	s := strings.Clone(v)
	c.dict = append(c.dict, s)
	code := uint32(len(c.dict))
	c.index[s] = code
	return code
}

// AppendCodes appends one row given as codes from Code, one per column.
func (b *TableBuilder) AppendCodes(codes []uint32) error {
	if len(codes) != len(b.cols) {
		return fmt.Errorf("row has %d values, table has %d columns", len(codes), len(b.cols))
	}
	for i, code := range codes {
		if int64(code) > int64(len(b.cols[i].dict)) {
			return fmt.Errorf("column %q: code %d not in its dictionary", b.cols[i].name, code)
		}
		b.cols[i].codes = append(b.cols[i].codes, code)
	}
	b.rows++
	return nil
}

// AppendRow appends one row of values; null[i] (when null is not nil) or an
// empty value makes cell i NULL.
func (b *TableBuilder) AppendRow(values [][]byte, null []bool) error {
	if len(values) != len(b.cols) {
		return fmt.Errorf("row has %d values, table has %d columns", len(values), len(b.cols))
	}
	if null != nil && len(null) != len(values) {
		return fmt.Errorf("row has %d values and %d null flags", len(values), len(null))
	}
	for i, v := range values {
		var code uint32
		if null == nil || !null[i] {
			code = b.Code(i, v)
		}
		b.cols[i].codes = append(b.cols[i].codes, code)
	}
	b.rows++
	return nil
}

// appendStrings appends one row of cells that may alias a reused buffer.
func (b *TableBuilder) appendStrings(values []string) {
	for i, v := range values {
		b.cols[i].codes = append(b.cols[i].codes, b.codeString(i, v))
	}
	b.rows++
}

// DictColumns returns the columns built so far. They share memory with the
// builder: append nothing more after using them.
func (b *TableBuilder) DictColumns() []DictColumn {
	out := make([]DictColumn, len(b.cols))
	for i, c := range b.cols {
		out[i] = DictColumn{Name: c.name, Dict: c.dict, Codes: c.codes}
	}
	return out
}

// Table encodes the columns built so far (see Encode).
func (b *TableBuilder) Table() (*Table, error) {
	return Encode(b.DictColumns())
}

// addColumnUnchecked adds a column the caller knows to be new; unlike
// AddColumn it accepts the empty name (a JSON key may be "").
func (b *TableBuilder) addColumnUnchecked(name string) int {
	b.byName[name] = len(b.cols)
	b.cols = append(b.cols, builderColumn{
		name:  name,
		index: make(map[string]uint32),
		codes: make([]uint32, b.rows, max(b.rows, 1024)),
	})
	return len(b.cols) - 1
}
