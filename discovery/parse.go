package discovery

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/odwatch/odwatch/discovery/internal/deptext"
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
	p := depParser{deptext.NewScanner(s)}
	d, err := p.parse()
	if err != nil {
		return Dependency{}, fmt.Errorf("%w %q: %w", errSyntax, s, err)
	}
	return d, nil
}

// depParser is the grammar of the text form over deptext's scanning of
// names.
type depParser struct{ *deptext.Scanner }

func (p *depParser) parse() (Dependency, error) {
	p.Space()
	if p.Peek("[") {
		lhs, err := p.List('[', ']')
		if err != nil {
			return Dependency{}, err
		}
		if err := p.Arrow("after " + p.Read()); err != nil {
			return Dependency{}, err
		}
		p.Space()
		if p.Peek("[") {
			rhs, err := p.List('[', ']')
			if err != nil {
				return Dependency{}, err
			}
			if err := p.End(); err != nil {
				return Dependency{}, err
			}
			return Dependency{Kind: KindListOD, LHSList: lhs, RHSList: rhs}, nil
		}
		if len(lhs) > 0 {
			return Dependency{}, fmt.Errorf("expected '[' after '->' of a list-based OD (write [A] -> [B])")
		}
		rhs, err := p.LastName()
		if err != nil {
			return Dependency{}, err
		}
		return Dependency{Kind: KindOFD, Context: []string{}, RHS: rhs}, nil
	}

	ctx := []string{}
	if p.Peek("{") {
		var err error
		if ctx, err = p.List('{', '}'); err != nil {
			return Dependency{}, err
		}
		p.Space()
		if !p.Peek(":") {
			return Dependency{}, fmt.Errorf("expected ':' after the context %s", p.Read())
		}
		p.Skip(1)
		p.Space()
	}

	if p.Peek("[") {
		p.Skip(1)
		p.Space()
		if !p.Peek("]") {
			return Dependency{}, fmt.Errorf("expected '[]' before '->' of an OFD (write {X}: [] -> A)")
		}
		p.Skip(1)
		if err := p.Arrow("after []"); err != nil {
			return Dependency{}, err
		}
		rhs, err := p.LastName()
		if err != nil {
			return Dependency{}, err
		}
		return Dependency{Kind: KindOFD, Context: ctx, RHS: rhs}, nil
	}

	left, err := p.Name()
	if err != nil {
		return Dependency{}, err
	}
	p.Space()
	if !p.Peek("~") {
		return Dependency{}, fmt.Errorf("expected '~' after %q (forms: A ~ B, {X}: A ~ B desc, {X}: [] -> A, [A,B] -> [C])", left)
	}
	p.Skip(1)
	right, pol, err := p.rightOfOC()
	if err != nil {
		return Dependency{}, err
	}
	return Dependency{Kind: KindOC, Context: ctx, Left: left, Right: right, Polarity: pol}, nil
}

// rightOfOC reads "B", "B asc", "B desc", "B (asc)", "B (desc)" up to the
// end of input.
func (p *depParser) rightOfOC() (string, Polarity, error) {
	p.Space()
	if p.Peek(`"`) {
		n, err := p.Quoted()
		if err != nil {
			return "", Asc, err
		}
		rest := strings.TrimSpace(p.Rest())
		if rest == "" {
			return n, Asc, nil
		}
		pol, ok := polarityWord(rest)
		if !ok {
			return "", Asc, fmt.Errorf("expected asc or desc after the right-hand side, got %q", rest)
		}
		return n, pol, nil
	}
	n := p.Bare()
	if rest := p.Rest(); rest != "" {
		return "", Asc, fmt.Errorf("unexpected %q after the right-hand side", rest)
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
