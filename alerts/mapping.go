package alerts

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
)

// DefaultMappingClasses is how many left-hand classes of an FD a Mapping
// keeps (the largest): enough to tell a unit change (every class moves)
// from a repair (the classes that broke come back), small enough to be
// saved with the tracker after every check.
const DefaultMappingClasses = 100

// Mapping is what an FD X -> A said in one window: for each of the largest
// classes of X (at most the cap MappingOf was given), the value of A most of
// its records have. The tracker keeps the mapping of the last window in
// which the rule held, so that a rule that comes back under eps with other
// values (a unit change, a recoding) is reported as changed, not restored.
// Field names are its persisted form.
type Mapping struct {
	// Records is the window's record count.
	Records int `json:"records"`
	// Classes, the largest first (then by key).
	Classes []ClassValue `json:"classes"`
}

// ClassValue is one class of an FD's left-hand side in a Mapping.
type ClassValue struct {
	// Key holds the class's values of the context columns, in the
	// dependency's context order ("" for NULL).
	Key []string `json:"key"`
	// Value is the right-hand side's value most of the class's records
	// have (the lowest one of a tie).
	Value string `json:"value"`
	// Rows is the class's record count in the window.
	Rows int `json:"rows"`
}

// keyText joins a class key for lookups, each part prefixed by its length
// so that no two keys join to the same text.
func keyText(key []string) string {
	var b strings.Builder
	for _, k := range key {
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
	}
	return b.String()
}

// MappingOf measures the mapping of the FD d (an OFD) on t, keeping the
// limit largest classes of its context (limit <= 0: DefaultMappingClasses).
// It returns nil for another kind of dependency or when t lacks one of
// d's columns.
func MappingOf(t *table.Table, d discovery.Dependency, limit int) *Mapping {
	if d.Kind != discovery.KindOFD {
		return nil
	}
	if limit <= 0 {
		limit = DefaultMappingClasses
	}
	find := func(name string) *table.Column {
		for i := range t.Columns {
			if t.Columns[i].Name == name {
				return &t.Columns[i]
			}
		}
		return nil
	}
	rhs := find(d.RHS)
	ctx := make([]*table.Column, len(d.Context))
	for i, name := range d.Context {
		if ctx[i] = find(name); ctx[i] == nil {
			return nil
		}
	}
	if rhs == nil {
		return nil
	}
	// Per class (by its ranks) the count of each right-hand rank.
	type class struct {
		row    int // first row, for the key's values
		rows   int
		counts map[uint32]int
	}
	classes := map[string]*class{}
	key := make([]byte, 0, 4*len(ctx))
	for r := range t.Rows {
		key = key[:0]
		for _, c := range ctx {
			v := c.Ranks[r]
			key = append(key, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
		c := classes[string(key)]
		if c == nil {
			c = &class{row: r, counts: map[uint32]int{}}
			classes[string(key)] = c
		}
		c.rows++
		c.counts[rhs.Ranks[r]]++
	}
	out := &Mapping{Records: t.Rows, Classes: make([]ClassValue, 0, len(classes))}
	for _, c := range classes {
		best, bestN := uint32(math.MaxUint32), -1
		for v, n := range c.counts {
			if n > bestN || (n == bestN && v < best) {
				best, bestN = v, n
			}
		}
		k := make([]string, len(ctx))
		for i, col := range ctx {
			k[i] = col.Values[col.Ranks[c.row]]
		}
		out.Classes = append(out.Classes, ClassValue{Key: k, Value: rhs.Values[best], Rows: c.rows})
	}
	slices.SortFunc(out.Classes, func(a, b ClassValue) int {
		return cmp.Or(cmp.Compare(b.Rows, a.Rows), slices.Compare(a.Key, b.Key))
	})
	if len(out.Classes) > limit {
		out.Classes = out.Classes[:limit:limit]
	}
	return out
}

// Change is what a changed event reports: an FD that holds again, but with
// other values than in the last window where it held.
type Change struct {
	// Share is the part of the window's records in the classes whose value
	// moved (counted over the classes both mappings keep: a lower bound).
	Share float64
	// Moved and Compared count the classes whose value moved and the
	// classes both mappings keep.
	Moved, Compared int
	// Examples are the largest moved classes, at most changeExamples.
	Examples []ChangeExample
}

// ChangeExample is one class whose value moved.
type ChangeExample struct {
	// Class holds the class's values of the context columns.
	Class map[string]string
	// Before and After are the right-hand side's values.
	Before, After string
}

// changeExamples is how many moved classes a changed event shows.
const changeExamples = 3

// compareMappings compares the mapping now of the FD d with the one it had
// before: the classes both keep whose value moved, weighted by their
// records now.
func compareMappings(d discovery.Dependency, before, now *Mapping) Change {
	was := make(map[string]string, len(before.Classes))
	for _, c := range before.Classes {
		was[keyText(c.Key)] = c.Value
	}
	var ch Change
	moved := 0
	for _, c := range now.Classes {
		v, ok := was[keyText(c.Key)]
		if !ok {
			continue
		}
		ch.Compared++
		if v == c.Value {
			continue
		}
		ch.Moved++
		moved += c.Rows
		if len(ch.Examples) < changeExamples {
			class := make(map[string]string, len(d.Context))
			for i, col := range d.Context {
				if i < len(c.Key) {
					class[col] = c.Key[i]
				}
			}
			ch.Examples = append(ch.Examples, ChangeExample{Class: class, Before: v, After: c.Value})
		}
	}
	if now.Records > 0 {
		ch.Share = float64(moved) / float64(now.Records)
	}
	return ch
}

// Text says what moved in plain words: "distance changed in 12 of the 12
// origin,destination classes compared (100% of the window's records):
// ATL,ORD 606 -> 975; ...". Only the largest classes are compared, so the
// share is of the records in the classes that moved, a lower bound of the
// records the change touched; the classes counted say how far it reached.
func (c Change) Text(d discovery.Dependency) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s changed in %d of the %d %s classes compared (%.0f%% of the window's records)",
		d.RHS, c.Moved, c.Compared, strings.Join(d.Context, ","), 100*c.Share)
	for i, x := range c.Examples {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		vals := make([]string, len(d.Context))
		for j, col := range d.Context {
			vals[j] = x.Class[col]
		}
		fmt.Fprintf(&b, "%s%s %s -> %s", sep, strings.Join(vals, ","), x.Before, x.After)
	}
	return b.String()
}

// ReplacedBy names (its text) the first reliable result of results (Stated) that is
// more general than d and holds where d does: for an FD X -> A, an FD
// Y -> A with Y a proper subset of X, or a key within X; for an OC
// X: A ~ B, the same OC in a proper subset of X, or an FD Y -> A or Y -> B
// with Y within X. "" when there is none. A merge passes it for a tracked
// rule its discovery did not find (Observation.ReplacedBy).
func ReplacedBy(d discovery.Dependency, results []discovery.Result) string {
	for _, r := range results {
		if r.Stated() && generalizes(r.Dependency, d) {
			return r.Dependency.String()
		}
	}
	return ""
}

// generalizes reports whether g is more general than d (see ReplacedBy).
func generalizes(g, d discovery.Dependency) bool {
	within := func(a, b []string, proper bool) bool {
		for _, c := range a {
			if !slices.Contains(b, c) {
				return false
			}
		}
		return !proper || len(a) < len(b)
	}
	switch {
	case g.Kind == discovery.KindKey && d.Kind == discovery.KindOFD:
		return within(g.Set, d.Context, false)
	case g.Kind == discovery.KindOFD && d.Kind == discovery.KindOFD:
		return g.RHS == d.RHS && within(g.Context, d.Context, true)
	case g.Kind == discovery.KindOC && d.Kind == discovery.KindOC:
		same := g.Polarity == d.Polarity && ((g.Left == d.Left && g.Right == d.Right) || (g.Left == d.Right && g.Right == d.Left))
		return same && within(g.Context, d.Context, true)
	case g.Kind == discovery.KindOFD && d.Kind == discovery.KindOC:
		return (g.RHS == d.Left || g.RHS == d.Right) && within(g.Context, d.Context, false)
	}
	return false
}
