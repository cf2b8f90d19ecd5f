package discovery

import (
	"strconv"
	"strings"
)

// Describe renders a dependency in plain words, for people who do not read
// the canonical notation:
//
//	{}: Cylinders ~ Displacement (asc)  sorting by Cylinders sorts Displacement
//	{}: a ~ b (desc)                    sorting by a sorts b in reverse
//	{tax_group}: salary ~ tax (asc)     within each tax_group, sorting by salary sorts tax
//	{a,b}: c ~ d (asc)                  within each combination of a and b, sorting by c sorts d
//	{zip_code}: [] -> city              zip_code determines city
//	{a,b}: [] -> c                      a and b together determine c
//	{}: [] -> c                         c is the same in every row
//	[a,b] -> [c]                        sorting by a, then b sorts c
//	key(order_id)                       order_id identifies a record
//	{}: a <-> b                         a and b are equivalent (each determines the other)
//
// Column names are written as they are, unquoted.
func Describe(d Dependency) string {
	switch d.Kind {
	case KindOFD:
		switch len(d.Context) {
		case 0:
			return d.RHS + " is the same in every row"
		case 1:
			return d.Context[0] + " determines " + d.RHS
		}
		return andList(d.Context) + " together determine " + d.RHS
	case KindOC:
		s := "sorting by " + d.Left + " sorts " + d.Right
		if d.Polarity == Desc {
			s += " in reverse"
		}
		switch len(d.Context) {
		case 0:
			return s
		case 1:
			return "within each " + d.Context[0] + ", " + s
		}
		return "within each combination of " + andList(d.Context) + ", " + s
	case KindListOD:
		return "sorting by " + strings.Join(d.LHSList, ", then ") + " sorts " + strings.Join(d.RHSList, ", then ")
	case KindKey, KindEquivalence:
		return describeRule(d)
	}
	return d.String()
}

// DescribeResult is Describe followed by the exceptions a measured
// dependency has, "…, except 10 rows (2.5%)", or nothing when it holds
// exactly.
func DescribeResult(r Result) string {
	s := Describe(r.Dependency)
	if r.Removals == 0 {
		return s
	}
	rows := "rows"
	if r.Removals == 1 {
		rows = "row"
	}
	return s + ", except " + strconv.Itoa(r.Removals) + " " + rows + " (" + percent(r.Error) + ")"
}

// percentSmall is the share below which percent stops printing digits: a
// figure like 0.0004% says nothing a reader can use.
const percentSmall = 0.0001

// percent writes a share as a percentage with two significant digits
// (0.02463 -> "2.5%", 0.5 -> "50%").
func percent(share float64) string {
	if share > 0 && share < percentSmall {
		return "<" + strconv.FormatFloat(percentSmall*100, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(share*100, 'g', 2, 64) + "%"
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
