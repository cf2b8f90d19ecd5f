// Package table owns odwatch's encoded tables: the dictionary form the
// stream's window and the readers hand over (DictColumn, TableBuilder),
// the typing rule (Typing: numeric, temporal, ordinal or nominal) and the
// encoding into dense ranks in value order (Encode, EncodeTyped) that
// discovery and the validators compare. It knows nothing of dependencies.
package table

import (
	"errors"
	"fmt"
)

// DictColumn is a column in dictionary form, the way the stream keeps its
// window: Codes[i] is 0 for NULL, otherwise an index+1 into Dict. Dict holds
// each distinct non-NULL value once, in any order.
type DictColumn struct {
	Name  string
	Dict  []string
	Codes []uint32
}

// ColumnType is how a column's values compare (docs/DESIGN.md, "Discovery
// semantics"). Only ordered columns (every type but Nominal) take part in
// OCs; every column takes part in OFDs and contexts.
type ColumnType uint8

const (
	// Nominal text: values are equal or not, never smaller or larger.
	// Its ranks follow byte order only to be deterministic.
	Nominal ColumnType = iota
	// Numeric: every non-NULL value parses as a float64; ordered by value.
	Numeric
	// Temporal: every non-NULL value is an ISO 8601 date or timestamp
	// (RFC 3339 included); ordered by time.
	Temporal
	// Ordinal: text declared ordered (Typing.Ordinal), by a given list of
	// values or by bytes; in order-text mode every text column is Ordinal.
	Ordinal
)

// Ordered reports whether values of this type have an order OCs may use.
func (t ColumnType) Ordered() bool { return t != Nominal }

func (t ColumnType) String() string {
	switch t {
	case Nominal:
		return "nominal"
	case Numeric:
		return "numeric"
	case Temporal:
		return "temporal"
	case Ordinal:
		return "ordinal"
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// Column is one encoded column: dense ranks in value order. Rank 0 is NULL
// when the column has NULLs (NULL is lower than every value); ranks are
// contiguous from 0 to Cardinality-1.
type Column struct {
	Name        string
	Type        ColumnType
	Ranks       []uint32
	Cardinality int
	// Values[r] is the text of rank r ("" for NULL), for printing samples.
	Values []string
}

// EmptyRows counts the rows of c that hold no value: rank 0 when it is
// the empty text (NULL, or an empty string).
func (c *Column) EmptyRows() int {
	if len(c.Values) == 0 || c.Values[0] != "" {
		return 0
	}
	n := 0
	for _, x := range c.Ranks {
		if x == 0 {
			n++
		}
	}
	return n
}

// Table is an encoded table: every column has Rows ranks.
type Table struct {
	Rows    int
	Columns []Column
	// distinct keeps the distinct records once found (see Distinct); nil
	// in a Table written as a literal.
	distinct *distinctCache
}

// ErrInconsistent is returned (wrapped, naming the column) by Check for a
// table whose columns are inconsistent: a length differing from Rows, or a
// rank not below the column's cardinality.
var ErrInconsistent = errors.New("inconsistent table")

// Check rejects a table the validators could index out of range with (a
// nil one too): Encode's tables pass, a literal may not.
func (t *Table) Check() error {
	if t == nil {
		return fmt.Errorf("%w: nil table", ErrInconsistent)
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if len(c.Ranks) != t.Rows {
			return fmt.Errorf("%w: column %q has %d ranks for %d rows", ErrInconsistent, c.Name, len(c.Ranks), t.Rows)
		}
		for _, r := range c.Ranks {
			if int(r) >= c.Cardinality {
				return fmt.Errorf("%w: column %q has rank %d not below its cardinality %d", ErrInconsistent, c.Name, r, c.Cardinality)
			}
		}
	}
	return nil
}
