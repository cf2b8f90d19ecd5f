package discovery

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnknownColumn is returned (wrapped, naming the column) when a
// dependency mentions a column the table does not have.
var ErrUnknownColumn = errors.New("unknown column")

// ErrBadDependency is returned for a dependency that is not well formed
// (unknown kind, empty list of a list-based OD).
var ErrBadDependency = errors.New("malformed dependency")

// Validate measures one dependency, named by columns, in t: the exact size
// of a minimal removal set (g3 for an OFD, LNDS for an OC — or the
// iterative baseline's count when opts.Validator asks for it — and the
// list-based LNDS for a list OD), the error Removals/Rows, the score of its
// context, and up to opts.RemovalSample removal rows (all of them when
// opts.RemovalSample < 0). An empty table measures 0 removals and error 0.
// opts.Epsilon plays no part: the caller compares Error with its eps.
func Validate(ctx context.Context, t *Table, d Dependency, opts Options) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err := checkEncodedTable(t); err != nil {
		return Result{}, err
	}
	index := make(map[string]int, len(t.Columns))
	for i := len(t.Columns) - 1; i >= 0; i-- {
		index[t.Columns[i].Name] = i // the first of duplicate names wins
	}
	column := func(name string) (*Column, error) {
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownColumn, name)
		}
		return &t.Columns[i], nil
	}
	columns := func(names []string) ([]*Column, error) {
		out := make([]*Column, 0, len(names))
		for _, name := range names {
			c, err := column(name)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	var ctxCols []int
	for _, name := range d.Context {
		if _, err := column(name); err != nil {
			return Result{}, err
		}
		ctxCols = append(ctxCols, index[name])
	}
	p := PartitionOf(t, ctxCols)
	res := Result{Dependency: d, Score: p.Score()}
	var rows []int
	wantRows := opts.RemovalSample != 0
	switch d.Kind {
	case KindOFD:
		a, err := column(d.RHS)
		if err != nil {
			return Result{}, err
		}
		res.Removals = NewValidator().OFDRemovals(p, a, -1)
		if wantRows {
			rows = OFDRemovalRows(p, a)
		}
	case KindOC:
		a, err := column(d.Left)
		if err != nil {
			return Result{}, err
		}
		b, err := column(d.Right)
		if err != nil {
			return Result{}, err
		}
		if opts.Validator == ValidatorIterative {
			rows = OCIterativeRemovalRows(p, a, b, d.Polarity)
			res.Removals = len(rows)
		} else {
			res.Removals = NewValidator().OCRemovals(p, a, b, d.Polarity, -1)
			if wantRows {
				rows = OCRemovalRows(p, a, b, d.Polarity)
			}
		}
	case KindListOD:
		if len(d.LHSList) == 0 || len(d.RHSList) == 0 {
			return Result{}, fmt.Errorf("%w: list-based OD needs columns on both sides", ErrBadDependency)
		}
		lhs, err := columns(d.LHSList)
		if err != nil {
			return Result{}, err
		}
		rhs, err := columns(d.RHSList)
		if err != nil {
			return Result{}, err
		}
		rows = ListODRemovalRows(p, lhs, rhs)
		res.Removals = len(rows)
	default:
		return Result{}, fmt.Errorf("%w: kind %v", ErrBadDependency, d.Kind)
	}
	if t.Rows > 0 {
		res.Error = float64(res.Removals) / float64(t.Rows)
	}
	if wantRows {
		res.RemovalSample = sampleOf(rows, opts.RemovalSample)
	}
	return res, nil
}
