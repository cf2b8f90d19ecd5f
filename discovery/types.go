// Package discovery owns the dependency-discovery algorithm of odwatch:
// encoding a table or window into ranked columns, stripped partitions, the
// level-wise set-based lattice (FASTOD) with pruning that stays sound under
// approximation, the validators (LIS-based approximate order compatibility,
// g3 approximate FDs, list-based ODs, and the iterative baseline of Karegar
// et al.), removal sets and interestingness scores.
//
// It opens no files or connections: tables come from an io.Reader the caller
// opens (ReadCSV, ReadJSONLines) or from dictionary-coded columns the stream
// hands over (Encode).
package discovery

import (
	"context"
	"fmt"
	"slices"
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

// Table is an encoded table: every column has Rows ranks.
type Table struct {
	Rows    int
	Columns []Column
}

// Kind is the kind of a dependency.
type Kind int

const (
	// KindOFD is the order functional dependency X: [] -> A (an FD X -> A).
	KindOFD Kind = iota
	// KindOC is the order compatibility X: A ~ B with a polarity.
	KindOC
	// KindListOD is a list-based OD [A,B] -> [C] (validate only).
	KindListOD
	// KindKey is a key: the columns Set identify a distinct record.
	KindKey
	// KindEquivalence is an equivalence: within each class of Context, the
	// columns Set determine each other.
	KindEquivalence
)

func (k Kind) String() string {
	switch k {
	case KindOFD:
		return "ofd"
	case KindOC:
		return "oc"
	case KindListOD:
		return "od"
	case KindKey:
		return "key"
	case KindEquivalence:
		return "equivalence"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Polarity says whether an OC relates A ascending to B ascending (Asc) or to
// B descending (Desc).
type Polarity int

const (
	Asc Polarity = iota
	Desc
)

func (p Polarity) String() string {
	if p == Desc {
		return "desc"
	}
	return "asc"
}

// Dependency names a dependency by column names, so that it stays the same
// dependency across windows whose column sets differ.
//
//   - KindOFD: Context: [] -> RHS
//   - KindOC: Context: Left ~ Right (Polarity); canonical form has Left < Right
//     in table column order as discovered, and Context in table column order.
//   - KindListOD: LHS -> RHSList (list-based, order matters).
//   - KindKey: key(Set), Set in table column order.
//   - KindEquivalence: Context: Set[0] <-> Set[1] <-> ..., in table column
//     order.
type Dependency struct {
	Kind     Kind
	Context  []string
	RHS      string
	Left     string
	Right    string
	Polarity Polarity
	LHSList  []string
	RHSList  []string
	Set      []string // a key's columns, an equivalence's members
}

// String renders the dependency in the text form of the CLI:
// "{zip}: [] -> city", "{}: sal ~ tax (asc)", "[A,B] -> [C]". Names that
// ParseDependency could misread are double-quoted (see formatName), so the
// text always parses back to the same dependency.
func (d Dependency) String() string {
	switch d.Kind {
	case KindOFD:
		return "{" + formatNames(d.Context) + "}: [] -> " + formatName(d.RHS)
	case KindOC:
		return "{" + formatNames(d.Context) + "}: " + formatName(d.Left) + " ~ " + formatName(d.Right) + " (" + d.Polarity.String() + ")"
	case KindListOD:
		return "[" + formatNames(d.LHSList) + "] -> [" + formatNames(d.RHSList) + "]"
	case KindKey, KindEquivalence:
		return ruleString(d)
	}
	return "?"
}

// Columns lists the columns the dependency mentions, context first (for a
// list OD, the left list then the right), in a slice of its own.
func (d Dependency) Columns() []string {
	switch d.Kind {
	case KindOFD:
		return append(slices.Clone(d.Context), d.RHS)
	case KindOC:
		return append(slices.Clone(d.Context), d.Left, d.Right)
	case KindKey, KindEquivalence:
		return append(slices.Clone(d.Context), d.Set...)
	}
	return append(slices.Clone(d.LHSList), d.RHSList...)
}

// NoStrength is the Strength of a dependency measured on a table without
// rows, where no chance correction can be computed. It is below every
// MinStrength, so such a dependency is never Reliable; JSON writes it as
// "strength": null. Strength is never NaN.
const NoStrength = -1.0

// DefaultMinStrength is the strength from which a dependency is Reliable
// unless the caller chooses otherwise (docs/DESIGN.md, "Strength", says
// how the benchmarks chose it).
const DefaultMinStrength = 0.5

// Result is one dependency with its measured error in a table.
type Result struct {
	Dependency
	Removals int     // size of a minimal removal set
	Error    float64 // Removals / Rows
	Score    float64 // sum over context classes c of |c|^2 / n^2
	// Strength in [0,1] is how much better than chance the dependency
	// holds (docs/DESIGN.md, "Strength"): a chance-corrected measure (mu+
	// with pseudo-rows for an OFD; for an OC, removals against those
	// expected when B is shuffled within each context class) less the
	// largest measure of the same dependency in a direct subset of its
	// context, at least 0. It is NoStrength for a table without rows, and 0
	// for a list-based OD (no chance model).
	Strength float64
	// Reliable is Strength >= Options.MinStrength.
	Reliable bool
	// RemovalSample holds up to Options.RemovalSample row numbers (0-based)
	// of a minimal removal set, ascending.
	RemovalSample []int
	// Equivalents names, for a rule stated with the representatives of
	// equivalences (Summarize), the other members of those equivalences;
	// for a key, the columns that are each a key on their own as well.
	Equivalents []string
	// ImpliedBy names, as dependency texts, what a dependency that is not
	// listed as reliable on its own follows from (Summarize): a key, an
	// equivalence, two reliable FDs, or the stronger side of a mirror.
	ImpliedBy []string
}

// ValidatorKind selects the AOC validator.
type ValidatorKind int

const (
	// ValidatorLIS is the O(n log n) longest-non-decreasing-subsequence
	// validator with a provably minimal removal set.
	ValidatorLIS ValidatorKind = iota
	// ValidatorIterative is the paper's Algorithm 1 baseline (comparison only).
	ValidatorIterative
)

// Progress reports lattice progress to a callback.
type Progress struct {
	Level      int
	Candidates int64 // candidates of this level
	Validated  int64 // validated so far in this level
	Found      int   // dependencies found so far in total
}

// Options control a discovery run.
type Options struct {
	Epsilon float64
	// MaxLevel bounds the lattice: a dependency's level is the number of
	// columns it mentions (|X|+1 for an OFD, |X|+2 for an OC), as in FASTOD.
	// 0 means no limit.
	MaxLevel      int
	Workers       int // 0 = GOMAXPROCS
	Validator     ValidatorKind
	RemovalSample int
	Progress      func(Progress)
	// MinStrength is the Strength from which a dependency is Reliable.
	// It is used as given: 0 makes every measured dependency reliable, and
	// then Discover returns exactly the minimal set of docs/DESIGN.md. Callers
	// that want the default pass DefaultMinStrength.
	MinStrength float64
	// Pause, when set, lets the caller take the CPU back from a running
	// Discover: every worker calls it before each unit of work (one
	// node's partition, one candidate's validation), within a long
	// validation every few thousand rows of work (between classes, or
	// buckets of one large class; never per row), and Discover calls it
	// at each level's start. It blocks for as long as
	// the caller wants discovery to wait and returns nil to go on, or an
	// error (typically ctx's) to stop the run, which then ends as a
	// cancel does: the levels completed, Complete false, and an error
	// wrapping Pause's. Waiting changes no result. It is called
	// concurrently and once per candidate, so it must be cheap when there
	// is nothing to wait for (an atomic load).
	Pause func(ctx context.Context) error
}

// Stats describe the work a discovery run did.
type Stats struct {
	Seconds     float64 `json:"seconds"`
	Candidates  int64   `json:"candidates"`
	Validations int64   `json:"validations"`
	Levels      int     `json:"levels"`
}

// Discovery is the result of a discovery run: the minimal approximate
// dependency set of docs/DESIGN.md for Epsilon, sorted by Score descending.
type Discovery struct {
	Rows         int
	Columns      []string
	Epsilon      float64
	Dependencies []Result
	Stats        Stats
	// Complete is false when the run stopped early (time budget, cancel);
	// Dependencies then holds what was found in the levels completed.
	Complete bool
}
