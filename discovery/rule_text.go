package discovery

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/odwatch/odwatch/discovery/internal/deptext"
)

// The text, JSON and plain-words forms of keys and equivalences:
//
//	key(order_id)               order_id identifies a record
//	key(name,year)              name and year together identify a record
//	{}: a <-> b                 a and b are equivalent (each determines the other)
//	{origin}: a <-> b           within each origin, a and b determine each other
//
// JSON: {"kind":"key","columns":[...]} and
// {"kind":"equivalence","context":[...],"columns":[...]}.

// ruleString renders a key or an equivalence in its text form.
func ruleString(d Dependency) string {
	if d.Kind == KindKey {
		return "key(" + deptext.FormatNames(d.Set) + ")"
	}
	parts := make([]string, len(d.Set))
	for i, n := range d.Set {
		parts[i] = deptext.FormatName(n)
	}
	return "{" + deptext.FormatNames(d.Context) + "}: " + strings.Join(parts, " <-> ")
}

// describeRule is Describe for a key or an equivalence.
func describeRule(d Dependency) string {
	if d.Kind == KindKey {
		if len(d.Set) == 1 {
			return d.Set[0] + " identifies a record"
		}
		return andList(d.Set) + " together identify a record"
	}
	switch len(d.Context) {
	case 0:
		return andList(d.Set) + " are equivalent (each determines the other)"
	case 1:
		return "within each " + d.Context[0] + ", " + andList(d.Set) + " determine each other"
	}
	return "within each combination of " + andList(d.Context) + ", " + andList(d.Set) + " determine each other"
}

// parseRule parses the text forms of a key ("key(a,b)") and of an
// equivalence ("{X}: a <-> b", "a <-> b"); ok is false when s is neither.
func parseRule(s string) (d Dependency, ok bool, err error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "key(") && strings.HasSuffix(t, ")") {
		p := deptext.NewScanner("{" + t[len("key("):len(t)-1] + "}")
		set, err := p.List('{', '}')
		if err == nil {
			err = p.End()
		}
		if err == nil && len(set) == 0 {
			err = fmt.Errorf("a key needs at least one column: key(order_id)")
		}
		return Dependency{Kind: KindKey, Set: set}, true, err
	}
	if !strings.Contains(t, "<->") {
		return Dependency{}, false, nil
	}
	p := deptext.NewScanner(t)
	d = Dependency{Kind: KindEquivalence, Context: []string{}}
	if p.Peek("{") {
		if d.Context, err = p.List('{', '}'); err != nil {
			return d, true, err
		}
		p.Space()
		if !p.Peek(":") {
			return d, true, fmt.Errorf("expected ':' after the context %s", p.Read())
		}
		p.Skip(1)
	}
	for {
		n, err := p.Name()
		if err != nil {
			return d, true, err
		}
		p.Space()
		more := false
		switch {
		case strings.HasSuffix(n, "<") && p.Peek("->"): // a bare name stops at "->"
			n, more = strings.TrimSpace(n[:len(n)-1]), true
			p.Skip(len("->"))
		case p.Peek("<->"):
			more = true
			p.Skip(len("<->"))
		}
		d.Set = append(d.Set, n)
		if !more {
			break
		}
	}
	if err := p.End(); err != nil {
		return d, true, err
	}
	if len(d.Set) < 2 {
		return d, true, fmt.Errorf("an equivalence needs two columns: a <-> b")
	}
	return d, true, nil
}

// ruleJSON is the JSON layout of a key or an equivalence.
type ruleJSON struct {
	Kind    string   `json:"kind"`
	Context []string `json:"context,omitempty"`
	Columns []string `json:"columns"`
}

// marshalRule encodes a key or an equivalence; an equivalence's context is
// always an array.
func marshalRule(d Dependency) ([]byte, error) {
	if d.Kind == KindKey {
		return json.Marshal(ruleJSON{Kind: "key", Columns: nonNil(d.Set)})
	}
	out, err := json.Marshal(struct {
		Kind    string   `json:"kind"`
		Context []string `json:"context"`
		Columns []string `json:"columns"`
	}{"equivalence", nonNil(d.Context), nonNil(d.Set)})
	return out, err
}

// unmarshalRule decodes what marshalRule encodes; ok is false for the
// other kinds.
func unmarshalRule(data []byte) (d Dependency, ok bool, err error) {
	var in ruleJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return d, false, err
	}
	switch in.Kind {
	case "key":
		return Dependency{Kind: KindKey, Set: nonNil(in.Columns)}, true, nil
	case "equivalence":
		return Dependency{Kind: KindEquivalence, Context: nonNil(in.Context), Set: nonNil(in.Columns)}, true, nil
	}
	return d, false, nil
}

// writeRuleNotes ends a text listing's line: a key or an equivalence in
// plain words, then the equivalents and what implies the dependency, when
// it has them.
func writeRuleNotes(w *bufio.Writer, r *Result) {
	if r.Kind == KindKey || r.Kind == KindEquivalence {
		w.WriteString("  (" + describeRule(r.Dependency) + ")")
	}
	if len(r.With) > 0 {
		w.WriteString("  (" + describeTogether(r) + ")  with=[" + strings.Join(r.With, "; ") + "]")
	}
	if len(r.Equivalents) > 0 {
		w.WriteString("  equivalents=[" + deptext.FormatNames(r.Equivalents) + "]")
	}
	if len(r.ImpliedBy) > 0 {
		w.WriteString("  implied_by=[" + strings.Join(r.ImpliedBy, "; ") + "]")
	}
	if r.StatedIn != "" {
		w.WriteString("  stated_in=[" + r.StatedIn + "]")
	}
}

// ruleCounts is the summary line's count of keys and equivalences, empty
// without them.
func ruleCounts(counts map[Kind]int) string {
	if counts[KindKey]+counts[KindEquivalence] == 0 {
		return ""
	}
	return fmt.Sprintf(", %d key, %d equivalence", counts[KindKey], counts[KindEquivalence])
}

// writeImpliedCount continues the text listing's line counting the
// dependencies not listed as reliable with how many of them step back for
// an entry that is (implied_by), when any does.
func writeImpliedCount(w *bufio.Writer, rs []Result) {
	n, with := 0, 0
	for _, r := range rs {
		switch {
		case !r.Reliable && len(r.ImpliedBy) > 0:
			n++
		case !r.Reliable && r.StatedIn != "":
			with++
		}
	}
	if n > 0 {
		fmt.Fprintf(w, " or follow from those listed (%d: implied_by)", n)
	}
	if with > 0 {
		fmt.Fprintf(w, " or are stated with those listed (%d: stated_in)", with)
	}
}
