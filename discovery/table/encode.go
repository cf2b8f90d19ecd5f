package table

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Typing says how Encode types and orders columns (docs/DESIGN.md, "Discovery
// semantics"). The zero value is the default typing: numeric, temporal or
// nominal text, with no text declared ordinal.
type Typing struct {
	// OrderText is the paper's rule: no temporal typing, and every
	// non-numeric column is Ordinal by bytes, so that every column takes
	// part in OCs. Ordinal declarations with a list still apply.
	OrderText bool
	// Ordinal declares text columns ordered: by the given values, lowest
	// first, or by bytes when the list is empty. Every value of a column
	// with a list must be in it. A numeric column declared without a list
	// stays Numeric.
	Ordinal map[string][]string
}

// ErrOrdinal is returned (wrapped, naming the column and the value) when an
// ordinal declaration names a column the table does not have, or a column
// holds a value its declared list lacks.
var ErrOrdinal = errors.New("bad ordinal declaration")

// Encode is EncodeTyped with the default Typing.
func Encode(cols []DictColumn) (*Table, error) {
	return EncodeTyped(cols, Typing{})
}

// EncodeTyped turns dictionary-coded columns into ranked columns following
// the typing rule of docs/DESIGN.md: a column is Numeric when every non-NULL
// dictionary value parses as a float64 (strconv.ParseFloat), Temporal when
// every one is an ISO 8601 date or timestamp (see parseTemporal), otherwise
// Nominal text (Ordinal when ty declares it or ty.OrderText is set), whose
// ranks follow byte order. "NaN" (any spelling ParseFloat accepts) counts as
// text, because NaN has no place in an order. Infinities are ordered numbers
// and stay numeric; literals out of float64 range ("1e400") are numbers too,
// at the nearest float. Values that compare equal ("1", "1.0", "1e0";
// timestamps of one instant) share one rank, and Values keeps the first of
// them in dictionary order.
//
// Rank 0 is NULL when the column has a NULL code; ranks are dense. The cost
// is O(d log d + n) per column: the dictionary is sorted, then codes are
// mapped through a rank table. EncodeTyped fails when columns have different
// lengths, a code points outside its dictionary, or an ordinal declaration
// does not fit the table (ErrOrdinal).
func EncodeTyped(cols []DictColumn, ty Typing) (*Table, error) {
	return EncodeTypedPause(context.Background(), cols, ty, nil)
}

// EncodeTypedPause is EncodeTyped passing pause, when not nil, before each
// column (columns encode independently) and within one every
// encodePauseValues dictionary values typed and between its steps (type,
// sort, rank), as Options.Pause is passed between discovery's units of
// work: typing a column of 100k distinct timestamps takes tens of
// milliseconds. It returns pause's error as it is.
func EncodeTypedPause(ctx context.Context, cols []DictColumn, ty Typing, pause func(context.Context) error) (*Table, error) {
	p := &pacer{ctx: ctx, pause: pause, every: encodePauseValues}
	t := &Table{Columns: make([]Column, len(cols)), distinct: &distinctCache{}}
	if len(cols) > 0 {
		t.Rows = len(cols[0].Codes)
	}
	for name := range ty.Ordinal {
		if !slices.ContainsFunc(cols, func(c DictColumn) bool { return c.Name == name }) {
			return nil, fmt.Errorf("%w: ordinal column %q: no such column", ErrOrdinal, name)
		}
	}
	for i := range cols {
		if err := p.now(); err != nil {
			return nil, err
		}
		if len(cols[i].Codes) != t.Rows {
			return nil, fmt.Errorf("encode: column %q has %d rows, column %q has %d",
				cols[i].Name, len(cols[i].Codes), cols[0].Name, t.Rows)
		}
		order, declared := ty.Ordinal[cols[i].Name]
		c, err := encodeColumn(&cols[i], ty.OrderText, declared, order, p)
		if err != nil {
			return nil, err
		}
		t.Columns[i] = c
	}
	return t, nil
}

// encodePauseValues is how many dictionary values EncodeTypedPause types
// (parses) between two calls of its pause: a millisecond or less.
const encodePauseValues = 2048

// pacer passes an encoding's pause (when not nil) every `every` ticks, and
// keeps the first error it returned: once it failed, tick reports it at
// once and the encoding stops.
type pacer struct {
	ctx   context.Context
	pause func(context.Context) error
	every int
	n     int
	err   error
}

// now calls the pause unless it already failed, and returns its error.
func (p *pacer) now() error {
	if p.pause == nil || p.err != nil {
		return p.err
	}
	p.n = 0
	p.err = p.pause(p.ctx)
	return p.err
}

// tick counts one step and calls the pause every p.every steps; it reports
// whether the pause has failed (the caller stops).
func (p *pacer) tick() bool {
	if p.pause == nil {
		return false
	}
	if p.err == nil {
		if p.n++; p.n >= p.every {
			_ = p.now()
		}
	}
	return p.err != nil
}

// columnKeys types a column from its used dictionary entries idx and returns
// the type with a comparison and an equality of dictionary indices.
type columnOrder struct {
	typ   ColumnType
	cmp   func(a, b int32) int
	equal func(a, b int32) bool
	// keys, when set (a numeric column of at least radixMin values),
	// holds each dictionary entry's place in the order as a number whose
	// order is cmp's (numericKey), so that encodeColumn can sort by it
	// without calling cmp.
	keys []uint64
}

// numericOrder is the Numeric order of the dictionary entries idx, false
// when one is not a number (or p's pause failed).
func numericOrder(dict []string, idx []int32, p *pacer) (columnOrder, bool) {
	if len(idx) == 0 {
		return columnOrder{}, false
	}
	nums := make([]float64, len(dict))
	var keys []uint64 // only a dictionary that is radix sorted needs them
	if len(idx) >= radixMin {
		keys = make([]uint64, len(dict))
	}
	for _, i := range idx {
		if p.tick() {
			return columnOrder{}, false
		}
		f, err := strconv.ParseFloat(dict[i], 64)
		// Out-of-range literals ("1e400") are still numbers: ParseFloat
		// returns the nearest float (±Inf or 0) with ErrRange.
		if err != nil && errors.Is(err, strconv.ErrRange) {
			err = nil
		}
		if err != nil || math.IsNaN(f) {
			return columnOrder{}, false
		}
		nums[i] = f
		if keys != nil {
			keys[i] = numericKey(f)
		}
	}
	return columnOrder{
		typ:   Numeric,
		cmp:   func(a, b int32) int { return cmp.Compare(nums[a], nums[b]) },
		equal: func(a, b int32) bool { return nums[a] == nums[b] },
		keys:  keys,
	}, true
}

// numericKey is f's key in the Numeric order: its bits with the sign bit
// set for a positive number and every bit flipped for a negative one, so
// that the keys order as the numbers do; -0 is keyed as 0, which it
// equals.
func numericKey(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// temporalOrder is the Temporal order of the dictionary entries idx,
// false when one is not a date or timestamp (or p's pause failed).
func temporalOrder(dict []string, idx []int32, p *pacer) (columnOrder, bool) {
	if len(idx) == 0 {
		return columnOrder{}, false
	}
	times := make([]time.Time, len(dict))
	layout := 0
	for _, i := range idx {
		if p.tick() {
			return columnOrder{}, false
		}
		tm, ok := ParseTemporalFrom(dict[i], &layout)
		if !ok {
			return columnOrder{}, false
		}
		times[i] = tm
	}
	return columnOrder{
		typ:   Temporal,
		cmp:   func(a, b int32) int { return times[a].Compare(times[b]) },
		equal: func(a, b int32) bool { return times[a].Equal(times[b]) },
	}, true
}

func textOrder(dict []string, typ ColumnType) columnOrder {
	return columnOrder{
		typ:   typ,
		cmp:   func(a, b int32) int { return strings.Compare(dict[a], dict[b]) },
		equal: func(a, b int32) bool { return dict[a] == dict[b] },
	}
}

func listOrder(dc *DictColumn, idx []int32, list []string) (columnOrder, error) {
	pos := make(map[string]int, len(list))
	for k, v := range list {
		if _, dup := pos[v]; !dup {
			pos[v] = k
		}
	}
	at := make([]int, len(dc.Dict))
	for _, i := range idx {
		k, ok := pos[dc.Dict[i]]
		if !ok {
			return columnOrder{}, fmt.Errorf("%w: ordinal column %q: value %q is not in its list", ErrOrdinal, dc.Name, dc.Dict[i])
		}
		at[i] = k
	}
	return columnOrder{
		typ:   Ordinal,
		cmp:   func(a, b int32) int { return cmp.Compare(at[a], at[b]) },
		equal: func(a, b int32) bool { return at[a] == at[b] },
	}, nil
}

// temporalLayouts are the ISO 8601 / RFC 3339 forms a temporal column may
// use: a month, a date, or a date and a time to the minute, second or fraction of a
// second, with T or a space between, with or without a zone (Z or ±hh:mm).
// A time without a zone is read as UTC.
var temporalLayouts = [...]string{
	"2006-01",
	"2006-01-02",
	"2006-01-02T15:04",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02 15:04",
	"2006-01-02 15:04Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04:05Z07:00",
}

// parseTemporal reads s in one of temporalLayouts (fractional seconds are
// accepted after the seconds by time.Parse): ParseTemporalFrom from the
// first layout.
func parseTemporal(s string) (time.Time, bool) {
	first := 0
	return ParseTemporalFrom(s, &first)
}

// ParseTemporalFrom is parseTemporal trying temporalLayouts[*layout]
// first, and setting *layout to the one that read s: a column's values
// tend to share one layout, and every layout that fails costs a
// time.Parse error. A string reads in at most one of the layouts (they
// differ in what follows the date, the minutes or the seconds, and
// time.Parse rejects text left over), so the result does not depend on
// the layout tried first: it is parseTemporal's.
func ParseTemporalFrom(s string, layout *int) (time.Time, bool) {
	if len(s) < 7 || s[4] != '-' || s[0] < '0' || s[0] > '9' {
		return time.Time{}, false
	}
	if t, err := time.Parse(temporalLayouts[*layout], s); err == nil {
		return t, true
	}
	for k, l := range temporalLayouts {
		if k == *layout {
			continue
		}
		if t, err := time.Parse(l, s); err == nil {
			*layout = k
			return t, true
		}
	}
	return time.Time{}, false
}

// chooseOrder types a column by its used dictionary entries idx: by the
// declared list, else numeric, else temporal (unless order-text or
// declared), else text. A pause error stops the typing and is left in p
// for the caller's next p.now.
func chooseOrder(dc *DictColumn, idx []int32, orderText, declared bool, list []string, p *pacer) (columnOrder, error) {
	if declared && len(list) > 0 {
		return listOrder(dc, idx, list)
	}
	if order, ok := numericOrder(dc.Dict, idx, p); ok || p.err != nil {
		return order, nil
	}
	if !orderText && !declared {
		if order, ok := temporalOrder(dc.Dict, idx, p); ok || p.err != nil {
			return order, nil
		}
	}
	// An all-NULL (or empty) column has no values to type; calling it a
	// text column keeps the output stable.
	typ := Nominal
	if orderText || declared {
		typ = Ordinal
	}
	return textOrder(dc.Dict, typ), nil
}

// encodeColumn types and ranks one column; declared says the column is
// declared ordinal, by list when list is not empty. It passes p's pause
// (when not nil) while typing and between its steps, and returns its
// error as it is.
func encodeColumn(dc *DictColumn, orderText, declared bool, list []string, p *pacer) (Column, error) {
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

	order, err := chooseOrder(dc, idx, orderText, declared, list, p)
	if err != nil {
		return Column{}, err
	}
	if err := p.now(); err != nil {
		return Column{}, err
	}
	// idx ascends: ties by index are the stable sort's order, and pdqsort
	// on distinct keys is faster than a stable sort. A large dictionary
	// with keys is radix sorted (stable, so ties stay by index).
	if order.keys != nil {
		radixSort(idx, order.keys)
	} else {
		slices.SortFunc(idx, func(a, b int32) int {
			if c := order.cmp(a, b); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
	if err := p.now(); err != nil {
		return Column{}, err
	}

	rankOf := make([]uint32, d+1) // by code; code 0 (NULL) stays rank 0
	values := make([]string, 0, len(idx)+1)
	next := uint32(0)
	if used[0] {
		values = append(values, "")
		next = 1
	}
	for k, i := range idx {
		if k > 0 && order.equal(idx[k-1], i) {
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
		Type:        order.typ,
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
	return b.AddColumnUnchecked(name), nil
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

// AppendStrings appends one row of cells, one a column, that may alias a
// reused buffer: the builder keeps copies.
func (b *TableBuilder) AppendStrings(values []string) {
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

// Table encodes the columns built so far (see EncodeTyped).
func (b *TableBuilder) Table(ty Typing) (*Table, error) {
	return EncodeTyped(b.DictColumns(), ty)
}

// AddColumnUnchecked adds a column the caller knows to be new; unlike
// AddColumn it accepts the empty name (a JSON key may be "").
func (b *TableBuilder) AddColumnUnchecked(name string) int {
	b.byName[name] = len(b.cols)
	b.cols = append(b.cols, builderColumn{
		name:  name,
		index: make(map[string]uint32),
		codes: make([]uint32, b.rows, max(b.rows, 1024)),
	})
	return len(b.cols) - 1
}
