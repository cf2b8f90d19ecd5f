package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// errUnknownColumn is returned (wrapped, naming the column) when a
// dependency mentions a column the table does not have.
// RemovalBudget is the largest number of removals a dependency may need to
// be valid at eps on n rows: floor(eps*n). A tiny slack absorbs the binary
// rounding of products such as 0.29*100 = 28.999999999999996.
func RemovalBudget(eps float64, n int) int { return validate.RemovalBudget(eps, n) }

var errUnknownColumn = errors.New("unknown column")

// ErrBadDependency is returned for a dependency that is not well formed
// (unknown kind, empty list of a list-based OD).
var ErrBadDependency = errors.New("malformed dependency")

// Validate measures one dependency, named by columns, in t: the exact size
// of a minimal removal set (g3 for an OFD, LNDS for an OC — or the
// iterative baseline's count when opts.Validator asks for it — and the
// list-based LNDS for a list OD), the error Removals/Rows, the score of its
// context, and up to opts.RemovalSample removal rows (all of them when
// opts.RemovalSample < 0), its Strength and whether it is Reliable at
// opts.MinStrength. An empty table measures 0 removals, error 0 and
// NoStrength. opts.Epsilon plays no part in the verdict (the caller
// compares Error with its eps), only in a key's strength (keyStrength).
func Validate(ctx context.Context, t *table.Table, d Dependency, opts Options) (Result, error) {
	rs, err := ValidateAll(ctx, t, []Dependency{d}, opts)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// ValidateAll is Validate for many dependencies of one table (the
// re-validation of a window's tracked dependencies): the partition of each
// distinct context is built once and the validator buffers are shared. It
// stops at the first malformed dependency or when ctx is done.
func ValidateAll(ctx context.Context, t *table.Table, deps []Dependency, opts Options) ([]Result, error) {
	out, errs, err := ValidateEach(ctx, t, deps, opts)
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return out, nil
}

// ValidateEach is ValidateAll without stopping at a dependency it cannot
// validate: errs[i], naming deps[i], is non-nil when deps[i] mentions a
// column t lacks or is malformed, and out[i] is then the zero Result. err
// is the table's or ctx's error, which stops it.
func ValidateEach(ctx context.Context, t *table.Table, deps []Dependency, opts Options) (out []Result, errs []error, err error) {
	if err := t.Check(); err != nil {
		return nil, nil, err
	}
	vs := newDepValidator(t, opts)
	out = make([]Result, len(deps))
	errs = make([]error, len(deps))
	for i, d := range deps {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		r, err := vs.validate(d, opts)
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", d, err)
			continue
		}
		out[i] = r
	}
	return out, errs, nil
}

// RemovalSet is a dependency's minimal removal set on a table, as
// RemovalSets measures it.
type RemovalSet struct {
	// Removals is its size (Validate's Removals), Sample its first rows,
	// ascending (Validate's RemovalSample).
	Removals int
	Sample   []int
}

// RemovalSets measures, for each of deps on t, what Validate measures of
// its minimal removal set at the default validator, without the strength
// and the score Validate also measures: its size and, with sample != 0,
// up to sample of its rows (every row with sample < 0). It is what a
// sample of violating records reads; the strength would cost it more than
// the rows. errs[i], naming deps[i], is non-nil when deps[i] cannot be
// validated, as ValidateEach says; err is the table's or ctx's error,
// which stops it.
func RemovalSets(ctx context.Context, t *table.Table, deps []Dependency, sample int) (out []RemovalSet, errs []error, err error) {
	if err := t.Check(); err != nil {
		return nil, nil, err
	}
	vs := newDepValidator(t, Options{})
	out = make([]RemovalSet, len(deps))
	errs = make([]error, len(deps))
	for i, d := range deps {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		m, err := vs.removalSet(d, sample != 0)
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", d, err)
			continue
		}
		out[i] = RemovalSet{Removals: m.removals, Sample: sampleOf(m.rows, sample)}
	}
	return out, errs, nil
}

// removalSet measures d's minimal removal set as validate does, its rows
// when wantRows, and nothing else (strength 0).
func (vs *depValidator) removalSet(d Dependency, wantRows bool) (measure, error) {
	var m measure
	if err := vs.known(d); err != nil {
		return m, err
	}
	p, err := vs.partition(d.Context)
	if err != nil {
		return m, err
	}
	switch d.Kind {
	case KindOFD:
		a, _ := vs.column(d.RHS)
		m.removals = vs.v.OFDRemovals(p, a, -1)
		if wantRows {
			m.rows = validate.OFDRemovalRows(p, a)
		}
		return m, nil
	case KindOC:
		a, _ := vs.column(d.Left)
		b, _ := vs.column(d.Right)
		m.removals = vs.v.OCRemovals(p, a, b, d.Polarity, -1)
		if wantRows {
			m.rows = validate.OCRemovalRows(p, a, b, d.Polarity)
		}
		return m, nil
	case KindListOD:
		return vs.measureListOD(p, d)
	case KindKey:
		return vs.keyRemovals(d, wantRows)
	case KindEquivalence:
		return vs.equivalenceRemovals(d, wantRows, false)
	}
	return m, fmt.Errorf("%w: kind %v", ErrBadDependency, d.Kind)
}

// newDepValidator is a depValidator of t at opts.
func newDepValidator(t *table.Table, opts Options) *depValidator {
	vs := &depValidator{
		t:     t,
		index: make(map[string]int, len(t.Columns)),
		parts: map[uint64]*validate.StrippedPartition{},
		v:     validate.NewValidator(),
		tune:  opts.listing(),
		eps:   opts.Epsilon,
	}
	for i := len(t.Columns) - 1; i >= 0; i-- {
		vs.index[t.Columns[i].Name] = i // the first of duplicate names wins
	}
	return vs
}

// depValidator validates dependencies named by columns against one table.
type depValidator struct {
	t     *table.Table
	index map[string]int
	parts map[uint64]*validate.StrippedPartition // by context column set, when <= 64 columns
	v     *validate.Validator
	ev    *evidence // the distinct records, found when first needed
	tune  listingTuning
	eps   float64 // a key's chance budget (keyStrength)
}

func (vs *depValidator) column(name string) (*table.Column, error) {
	i, ok := vs.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", errUnknownColumn, name)
	}
	return &vs.t.Columns[i], nil
}

// known returns an error naming every column d mentions that the table
// lacks, in d's order, or nil.
func (vs *depValidator) known(d Dependency) error {
	var missing []string
	for _, name := range d.Columns() {
		q := strconv.Quote(name)
		if _, ok := vs.index[name]; !ok && !slices.Contains(missing, q) {
			missing = append(missing, q)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", errUnknownColumn, strings.Join(missing, ", "))
}

func (vs *depValidator) columns(names []string) ([]*table.Column, error) {
	out := make([]*table.Column, 0, len(names))
	for _, name := range names {
		c, err := vs.column(name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// partition returns the stripped partition of the named context, cached.
func (vs *depValidator) partition(names []string) (*validate.StrippedPartition, error) {
	var cols []int
	var set uint64
	for _, name := range names {
		if _, err := vs.column(name); err != nil {
			return nil, err
		}
		i := vs.index[name]
		cols = append(cols, i)
		set |= 1 << (i % 64)
	}
	cacheable := len(vs.t.Columns) <= 64
	if p, ok := vs.parts[set]; ok && cacheable {
		return p, nil
	}
	p := validate.PartitionOf(vs.t, cols)
	if cacheable {
		vs.parts[set] = p
	}
	return p, nil
}

// gain turns the chance-corrected measure s of a dependency with the given
// context into its Strength: s less the largest measure of the dependency
// in a direct subset of the context (measure(partition of the subset)), at
// least 0.
func (vs *depValidator) gain(context []string, s float64, measure func(*validate.StrippedPartition) float64) (float64, error) {
	if s <= 0 {
		return s, nil
	}
	gain := s
	for i := range context {
		sub := append(slices.Clone(context[:i]), context[i+1:]...)
		q, err := vs.partition(sub)
		if err != nil {
			return 0, err
		}
		gain = min(gain, s-measure(q))
	}
	return max(gain, 0), nil
}

// within turns the chance-corrected measure s of an OFD with the given
// context into its Strength: the least of s and of its measure when chance
// permutes the right side within the classes of each direct subset of the
// context (measure(partition of the subset)); a context of one column has
// {} for its subset, the model s took.
func (vs *depValidator) within(context []string, s float64, measure func(*validate.StrippedPartition) float64) (float64, error) {
	if s <= 0 || len(context) < 2 {
		return s, nil
	}
	for i := range context {
		q, err := vs.partition(append(slices.Clone(context[:i]), context[i+1:]...))
		if err != nil {
			return 0, err
		}
		s = min(s, measure(q))
	}
	return max(s, 0), nil
}

// validate measures d as Validate documents: the partition of its context,
// the measure of its kind (measureOFD, measureOC, measureListOD), then what
// they share: the error, reliability and removal sample.
func (vs *depValidator) validate(d Dependency, opts Options) (Result, error) {
	if err := vs.known(d); err != nil {
		return Result{}, err
	}
	p, err := vs.partition(d.Context)
	if err != nil {
		return Result{}, err
	}
	sp, err := vs.scorePartition(d, p)
	if err != nil {
		return Result{}, err
	}
	res := Result{Dependency: d, Score: vs.evidence().Of(sp).Score()}
	wantRows := opts.RemovalSample != 0
	var m measure
	switch d.Kind {
	case KindOFD:
		m, err = vs.measureOFD(p, d, wantRows)
	case KindOC:
		m, err = vs.measureOC(p, d, opts.Validator, wantRows)
	case KindListOD:
		m, err = vs.measureListOD(p, d)
	case KindKey:
		m, err = vs.measureKey(d, wantRows)
	case KindEquivalence:
		m, err = vs.measureEquivalence(d, wantRows)
	default:
		err = fmt.Errorf("%w: kind %v", ErrBadDependency, d.Kind)
	}
	if err != nil {
		return Result{}, err
	}
	res.Removals, res.Strength = m.removals, m.strength
	if vs.t.Rows > 0 {
		res.Error = float64(res.Removals) / float64(vs.t.Rows)
	}
	res.Reliable = res.Strength >= opts.MinStrength
	if wantRows {
		res.RemovalSample = sampleOf(m.rows, opts.RemovalSample)
	}
	return res, nil
}

// measure is what validating one dependency in its context's partition
// gives: the size of a minimal removal set, the Strength, and the rows of
// that set when they were asked for or are how it is counted.
type measure struct {
	removals int
	strength float64
	rows     []int
}

// measureOFD measures the OFD d in p, its context's partition: g3, and the
// strength gain of the chance-corrected measure over the direct subsets.
func (vs *depValidator) measureOFD(p *validate.StrippedPartition, d Dependency, wantRows bool) (measure, error) {
	var m measure
	a, err := vs.column(d.RHS)
	if err != nil {
		return m, err
	}
	m.removals = vs.v.OFDRemovals(p, a, -1)
	ev := vs.evidenceOf(d.Context, []string{d.RHS})
	xp := ev.Of(p)
	m.strength, err = vs.within(d.Context, ev.OFDMeasure(vs.v, xp, a, ev.Pdep(a)), func(q *validate.StrippedPartition) float64 {
		return vs.v.OFDStrengthWithin(xp, ev.Of(q), a)
	})
	if err != nil {
		return m, err
	}
	if wantRows {
		m.rows = validate.OFDRemovalRows(p, a)
	}
	return m, nil
}

// measureOC measures the OC d in p, its context's partition, with the
// given validator (LNDS, or the iterative baseline, which counts by
// listing its rows), and the strength gain over the direct subsets,
// measured with the same validator.
func (vs *depValidator) measureOC(p *validate.StrippedPartition, d Dependency, validator ValidatorKind, wantRows bool) (measure, error) {
	var m measure
	a, err := vs.column(d.Left)
	if err != nil {
		return m, err
	}
	b, err := vs.column(d.Right)
	if err != nil {
		return m, err
	}
	if validator == ValidatorIterative {
		m.rows = validate.OCIterativeRemovalRows(p, a, b, d.Polarity)
		m.removals = len(m.rows)
	} else {
		m.removals = vs.v.OCRemovals(p, a, b, d.Polarity, -1)
		if wantRows {
			m.rows = validate.OCRemovalRows(p, a, b, d.Polarity)
		}
	}
	ev, sub := vs.evidenceOf(d.Context, []string{d.Left, d.Right}), vs.evidence()
	counts := ocCounts(vs.v, a, b, d.Polarity, validator)
	m.strength, err = vs.gain(d.Context, ev.OCMeasure(ev.Of(p), m.removals, counts), func(q *validate.StrippedPartition) float64 {
		return sub.OCMeasure(sub.Of(q), -1, counts)
	})
	return m, err
}

// measureListOD measures the list-based OD d in p, its context's
// partition, by listing a minimal removal set; it has no strength measure
// (0, or NoStrength on an empty table).
func (vs *depValidator) measureListOD(p *validate.StrippedPartition, d Dependency) (measure, error) {
	var m measure
	if len(d.LHSList) == 0 || len(d.RHSList) == 0 {
		return m, fmt.Errorf("%w: list-based OD needs columns on both sides", ErrBadDependency)
	}
	lhs, err := vs.columns(d.LHSList)
	if err != nil {
		return m, err
	}
	rhs, err := vs.columns(d.RHSList)
	if err != nil {
		return m, err
	}
	m.rows = validate.ListODRemovalRows(p, lhs, rhs)
	m.removals = len(m.rows)
	if vs.t.Rows == 0 {
		m.strength = NoStrength
	}
	return m, nil
}
