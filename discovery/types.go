// Package discovery owns the dependency-discovery algorithm of odwatch:
// the level-wise set-based lattice (FASTOD) with pruning that stays sound
// under approximation (Discover), the validation of given dependencies
// (Validate), removal sets, interestingness scores and strengths judged on
// the distinct records, the summary of a discovery in keys, equivalences
// and implied rules (Summarize), and the dependencies' text and JSON forms. The validators it runs (LIS-based
// approximate order compatibility, g3 approximate FDs, list-based ODs, the
// iterative baseline of Karegar et al.) and the stripped partitions they
// read are its machinery, in internal/validate.
//
// It opens no files or connections: tables come encoded (package table),
// read from an io.Reader the caller opens (package tableio) or from
// dictionary-coded columns the stream hands over (table.Encode). The
// incremental checks of tracked dependencies over a sliding window are
// package incremental, which builds on this one.
package discovery

import (
	"context"
	"fmt"
	"slices"

	"github.com/odwatch/odwatch/discovery/internal/deptext"
)

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
// ParseDependency could misread are double-quoted (see deptext.FormatName), so the
// text always parses back to the same dependency.
func (d Dependency) String() string {
	switch d.Kind {
	case KindOFD:
		return "{" + deptext.FormatNames(d.Context) + "}: [] -> " + deptext.FormatName(d.RHS)
	case KindOC:
		return "{" + deptext.FormatNames(d.Context) + "}: " + deptext.FormatName(d.Left) + " ~ " + deptext.FormatName(d.Right) + " (" + d.Polarity.String() + ")"
	case KindListOD:
		return "[" + deptext.FormatNames(d.LHSList) + "] -> [" + deptext.FormatNames(d.RHSList) + "]"
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
	// StrengthBound reports that Strength is an upper bound of the
	// strength, below Options.MinStrength, and not the strength: only
	// with Options.BoundUnreliable.
	StrengthBound bool
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
	// equivalence (a mirror pair's within its context), two reliable FDs,
	// or the strongest FD of a triangle.
	ImpliedBy []string
	// With names, as dependency texts, the rules an entry states together
	// with its own (Summarize): the other reliable FDs of its left-hand
	// side and the OCs that make them order dependencies.
	With []string
	// StatedIn is, for a rule stated together with another entry, that
	// entry's text; the rule is then not listed as reliable on its own.
	StatedIn string
}

// Stated reports whether r is a reliable rule: listed as reliable on its
// own, or stated together with a reliable entry (StatedIn), which the
// stream checks as a rule of its own all the same.
func (r Result) Stated() bool { return r.Reliable || r.StatedIn != "" }

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
	// BoundUnreliable lets Discover stop measuring a dependency once a
	// bound shows that it cannot reach MinStrength: such a result carries
	// that upper bound as its Strength and StrengthBound set, instead of
	// the strength itself. For callers that read the strength of reliable
	// results only (the text listing without --all); every other field,
	// Reliable and the order of the results are as without it. It has no
	// effect with MinStrength 0.
	BoundUnreliable bool
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
	// is nothing to wait for (an atomic load). Summarize calls it too,
	// before each candidate key's partition and each validation, and stops
	// with its error.
	Pause func(ctx context.Context) error
	// tune, when set (by a test), replaces defaultListing.
	tune *listingTuning
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
