// Package deptext holds the column names of a dependency's text form: how
// a name is scanned (bare, or double-quoted with \" and \\ escapes) and how
// one is written so that it reads back. The two are inverses, so they live
// in one place and are tested together (FormatName against Scanner.Name);
// discovery's parser keeps the grammar around them (contexts, arrows,
// polarities, keys, equivalences).
package deptext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scanner reads a dependency's text from its start. It is a value owned by
// one parse: not safe for concurrent use.
type Scanner struct {
	s string
	i int
}

// NewScanner returns a Scanner at the start of s.
func NewScanner(s string) *Scanner { return &Scanner{s: s} }

// Peek reports whether the unread text starts with tok.
func (p *Scanner) Peek(tok string) bool { return strings.HasPrefix(p.s[p.i:], tok) }

// Skip passes n bytes (a token Peek saw).
func (p *Scanner) Skip(n int) { p.i += n }

// Read is the text read so far.
func (p *Scanner) Read() string { return p.s[:p.i] }

// Rest is the unread text.
func (p *Scanner) Rest() string { return p.s[p.i:] }

// Space passes white space.
func (p *Scanner) Space() {
	for p.i < len(p.s) {
		r, size := utf8.DecodeRuneInString(p.s[p.i:])
		if !unicode.IsSpace(r) {
			return
		}
		p.i += size
	}
}

// Arrow reads "->" after white space; where says what it follows, for the
// error.
func (p *Scanner) Arrow(where string) error {
	p.Space()
	if !p.Peek("->") {
		return fmt.Errorf("expected '->' %s", where)
	}
	p.i += 2
	return nil
}

// End reads white space up to the end of the text.
func (p *Scanner) End() error {
	p.Space()
	if p.i != len(p.s) {
		return fmt.Errorf("unexpected %q at the end", p.s[p.i:])
	}
	return nil
}

// List reads open name {, name} close, possibly empty; the text must be at
// open.
func (p *Scanner) List(open, close byte) ([]string, error) {
	p.i++ // open
	names := []string{}
	p.Space()
	if p.Peek(string(close)) {
		p.i++
		return names, nil
	}
	for {
		n, err := p.Name()
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		p.Space()
		switch {
		case p.Peek(","):
			p.i++
		case p.Peek(string(close)):
			p.i++
			return names, nil
		default:
			return nil, fmt.Errorf("expected ',' or '%c' after %q", close, n)
		}
	}
}

// isSpecial reports the characters that end a bare name.
func isSpecial(c byte) bool { return strings.IndexByte(`{},:~[]"`, c) >= 0 }

// Bare reads a bare name run: up to a special character or "->", trimmed.
func (p *Scanner) Bare() string {
	start := p.i
	for p.i < len(p.s) && !isSpecial(p.s[p.i]) && !p.Peek("->") {
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i])
}

// Name reads one quoted or bare name.
func (p *Scanner) Name() (string, error) {
	p.Space()
	if p.Peek(`"`) {
		return p.Quoted()
	}
	n := p.Bare()
	if n == "" {
		if p.i < len(p.s) {
			return "", fmt.Errorf("expected a column name before %q", p.s[p.i:])
		}
		return "", fmt.Errorf("expected a column name at the end")
	}
	return n, nil
}

// Quoted reads a double-quoted name; the text must be at its quote.
func (p *Scanner) Quoted() (string, error) {
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

// LastName reads the name that ends the text.
func (p *Scanner) LastName() (string, error) {
	n, err := p.Name()
	if err != nil {
		return "", err
	}
	if err := p.End(); err != nil {
		return "", err
	}
	return n, nil
}

// FormatName writes a column name so that Scanner.Name reads it back, and
// no polarity word is read off its end: bare when that is unambiguous,
// else double-quoted.
func FormatName(n string) string {
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

// FormatNames writes names comma-separated, each by FormatName.
func FormatNames(ns []string) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = FormatName(n)
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
