package discovery

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// errSyntax is wrapped by every ParseDependency error.
var errSyntax = errors.New("invalid dependency")

// ParseDependency parses a dependency in the text form of the CLI:
//
//	A ~ B            OC with empty context, ascending
//	A ~ B desc       descending polarity; "asc", "(asc)", "(desc)" work too
//	{X,Y}: A ~ B     OC with context {X,Y}
//	{X}: [] -> A     OFD (an FD X -> A); "{}: [] -> A" and "[] -> A" have
//	                 an empty context
//	[A,B] -> [C]     list-based OD
//	key(A,B)         key: A and B identify a record
//	{X}: A <-> B     equivalence: within each X, A and B determine each
//	                 other ("A <-> B" has an empty context)
//
// and exactly what Dependency.String prints. Names are taken verbatim,
// surrounding spaces trimmed, so they may hold spaces and dots; a name with
// any of {},:~[]" or "->" in it (or one that would read as a polarity) is
// written in double quotes, with \" and \\ escaping inside.
func ParseDependency(s string) (Dependency, error) {
	if d, ok, err := parseRule(s); ok {
		if err != nil {
			return Dependency{}, fmt.Errorf("%w %q: %w", errSyntax, s, err)
		}
		return d, nil
	}
	p := depParser{s: s}
	d, err := p.parse()
	if err != nil {
		return Dependency{}, fmt.Errorf("%w %q: %w", errSyntax, s, err)
	}
	return d, nil
}

type depParser struct {
	s string
	i int
}

func (p *depParser) parse() (Dependency, error) {
	p.space()
	if p.peek("[") {
		lhs, err := p.list('[', ']')
		if err != nil {
			return Dependency{}, err
		}
		if err := p.arrow("after " + p.s[:p.i]); err != nil {
			return Dependency{}, err
		}
		p.space()
		if p.peek("[") {
			rhs, err := p.list('[', ']')
			if err != nil {
				return Dependency{}, err
			}
			if err := p.end(); err != nil {
				return Dependency{}, err
			}
			return Dependency{Kind: KindListOD, LHSList: lhs, RHSList: rhs}, nil
		}
		if len(lhs) > 0 {
			return Dependency{}, fmt.Errorf("expected '[' after '->' of a list-based OD (write [A] -> [B])")
		}
		rhs, err := p.lastName()
		if err != nil {
			return Dependency{}, err
		}
		return Dependency{Kind: KindOFD, Context: []string{}, RHS: rhs}, nil
	}

	ctx := []string{}
	if p.peek("{") {
		var err error
		if ctx, err = p.list('{', '}'); err != nil {
			return Dependency{}, err
		}
		p.space()
		if !p.peek(":") {
			return Dependency{}, fmt.Errorf("expected ':' after the context %s", p.s[:p.i])
		}
		p.i++
		p.space()
	}

	if p.peek("[") {
		p.i++
		p.space()
		if !p.peek("]") {
			return Dependency{}, fmt.Errorf("expected '[]' before '->' of an OFD (write {X}: [] -> A)")
		}
		p.i++
		if err := p.arrow("after []"); err != nil {
			return Dependency{}, err
		}
		rhs, err := p.lastName()
		if err != nil {
			return Dependency{}, err
		}
		return Dependency{Kind: KindOFD, Context: ctx, RHS: rhs}, nil
	}

	left, err := p.name()
	if err != nil {
		return Dependency{}, err
	}
	p.space()
	if !p.peek("~") {
		return Dependency{}, fmt.Errorf("expected '~' after %q (forms: A ~ B, {X}: A ~ B desc, {X}: [] -> A, [A,B] -> [C])", left)
	}
	p.i++
	right, pol, err := p.rightOfOC()
	if err != nil {
		return Dependency{}, err
	}
	return Dependency{Kind: KindOC, Context: ctx, Left: left, Right: right, Polarity: pol}, nil
}

func (p *depParser) peek(tok string) bool { return strings.HasPrefix(p.s[p.i:], tok) }

func (p *depParser) space() {
	for p.i < len(p.s) {
		r, size := utf8.DecodeRuneInString(p.s[p.i:])
		if !unicode.IsSpace(r) {
			return
		}
		p.i += size
	}
}

func (p *depParser) arrow(where string) error {
	p.space()
	if !p.peek("->") {
		return fmt.Errorf("expected '->' %s", where)
	}
	p.i += 2
	return nil
}

func (p *depParser) end() error {
	p.space()
	if p.i != len(p.s) {
		return fmt.Errorf("unexpected %q at the end", p.s[p.i:])
	}
	return nil
}

// list parses open name {, name} close, possibly empty.
func (p *depParser) list(open, close byte) ([]string, error) {
	p.i++ // open
	names := []string{}
	p.space()
	if p.peek(string(close)) {
		p.i++
		return names, nil
	}
	for {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		p.space()
		switch {
		case p.peek(","):
			p.i++
		case p.peek(string(close)):
			p.i++
			return names, nil
		default:
			return nil, fmt.Errorf("expected ',' or '%c' after %q", close, n)
		}
	}
}

// isSpecial reports the characters that end a bare name.
func isSpecial(c byte) bool { return strings.IndexByte(`{},:~[]"`, c) >= 0 }

// bare reads a bare name run: up to a special character or "->", trimmed.
func (p *depParser) bare() string {
	start := p.i
	for p.i < len(p.s) && !isSpecial(p.s[p.i]) && !p.peek("->") {
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i])
}

// name reads one quoted or bare name.
func (p *depParser) name() (string, error) {
	p.space()
	if p.peek(`"`) {
		return p.quoted()
	}
	n := p.bare()
	if n == "" {
		if p.i < len(p.s) {
			return "", fmt.Errorf("expected a column name before %q", p.s[p.i:])
		}
		return "", fmt.Errorf("expected a column name at the end")
	}
	return n, nil
}

func (p *depParser) quoted() (string, error) {
	p.i++ // opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String(), nil
		case '\\':
			if p.i+1 >= len(p.s) || (p.s[p.i+1] != '"' && p.s[p.i+1] != '\\') {
				return "", fmt.Errorf(`in a quoted name only \" and \\ are escapes`)
			}
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", fmt.Errorf("unterminated quoted name")
}

// lastName reads the name that ends the input.
func (p *depParser) lastName() (string, error) {
	n, err := p.name()
	if err != nil {
		return "", err
	}
	if err := p.end(); err != nil {
		return "", err
	}
	return n, nil
}

// rightOfOC reads "B", "B asc", "B desc", "B (asc)", "B (desc)" up to the
// end of input.
func (p *depParser) rightOfOC() (string, Polarity, error) {
	p.space()
	if p.peek(`"`) {
		n, err := p.quoted()
		if err != nil {
			return "", Asc, err
		}
		rest := strings.TrimSpace(p.s[p.i:])
		if rest == "" {
			return n, Asc, nil
		}
		pol, ok := polarityWord(rest)
		if !ok {
			return "", Asc, fmt.Errorf("expected asc or desc after the right-hand side, got %q", rest)
		}
		return n, pol, nil
	}
	n := p.bare()
	if p.i < len(p.s) {
		return "", Asc, fmt.Errorf("unexpected %q after the right-hand side", p.s[p.i:])
	}
	if n == "" {
		return "", Asc, fmt.Errorf("expected a column name after '~'")
	}
	// A bare name runs to the end, so a polarity is its last word
	// ("B desc", "B (desc)") or a glued "(desc)".
	if k := strings.LastIndexFunc(n, unicode.IsSpace); k >= 0 {
		_, size := utf8.DecodeRuneInString(n[k:])
		if pol, ok := polarityWord(n[k+size:]); ok {
			return strings.TrimSpace(n[:k]), pol, nil
		}
	}
	if j := strings.LastIndexByte(n, '('); j > 0 {
		if pol, ok := polarityWord(n[j:]); ok {
			return strings.TrimSpace(n[:j]), pol, nil
		}
	}
	return n, Asc, nil
}

func polarityWord(w string) (Polarity, bool) {
	switch strings.ToLower(w) {
	case "asc", "(asc)":
		return Asc, true
	case "desc", "(desc)":
		return Desc, true
	}
	return Asc, false
}

// formatName writes a column name so that ParseDependency reads it back:
// bare when that is unambiguous, else double-quoted.
func formatName(n string) string {
	if !needsQuote(n) {
		return n
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(n); i++ {
		if n[i] == '"' || n[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(n[i])
	}
	b.WriteByte('"')
	return b.String()
}

func formatNames(ns []string) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = formatName(n)
	}
	return strings.Join(parts, ",")
}

func needsQuote(n string) bool {
	if n == "" || strings.ContainsAny(n, `{},:~[]"\`) || strings.Contains(n, "->") {
		return true
	}
	first, _ := utf8.DecodeRuneInString(n)
	last, _ := utf8.DecodeLastRuneInString(n)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return true
	}
	// Conservative: anything that could read as a trailing polarity.
	l := strings.ToLower(n)
	return strings.HasSuffix(l, "asc") || strings.HasSuffix(l, "desc") || strings.HasSuffix(l, ")") || strings.HasSuffix(l, "<")
}
