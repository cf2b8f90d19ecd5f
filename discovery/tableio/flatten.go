package tableio

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// FlattenStats counts what flattening one JSON object produced.
type FlattenStats struct {
	Fields  int // scalar fields emitted (including nulls)
	Ignored int // arrays skipped (each counted once, whatever it holds)
}

// defaultMaxDepth bounds the nesting of objects and arrays flattenJSON
// accepts, so that hostile input cannot blow the stack.
const defaultMaxDepth = 64

// errTooDeep is returned when a JSON value nests deeper than the limit.
var errTooDeep = errors.New("json nests too deep")

// Flattener turns one JSON object into scalar fields with dotted names. It
// keeps its scratch buffers between calls, so reusing one Flattener per
// goroutine makes flattening allocation-free in the steady state. The zero
// value is ready to use, with MaxDepth defaultMaxDepth.
type Flattener struct {
	// MaxDepth bounds nesting; 0 means defaultMaxDepth.
	MaxDepth int

	name []byte // dotted name of the current field
	val  []byte // unescaped string value
	key  []byte // unescaped key
}

// flattenJSON flattens one JSON object with a fresh Flattener; see
// Flattener.Flatten.
func flattenJSON(data []byte, emit func(name, value []byte, null bool)) (FlattenStats, error) {
	var f Flattener
	return f.Flatten(data, emit)
}

// Flatten parses data, which must hold exactly one JSON object (surrounding
// whitespace allowed), and calls emit once per scalar field in document
// order:
//   - nested objects are flattened: {"a":{"b":1}} emits "a.b";
//   - strings are unescaped; numbers are passed as their literal text;
//     booleans as "true"/"false"; null as null=true with an empty value;
//   - arrays are skipped (validated, not emitted) and counted in Ignored.
//
// A key that occurs twice is emitted twice; table builders keep the last.
// The name and value slices are only valid during the call to emit. Bytes of
// strings are passed through unvalidated (no UTF-8 check). Syntax errors and
// nesting beyond MaxDepth fail; fields emitted before the error stay emitted.
func (f *Flattener) Flatten(data []byte, emit func(name, value []byte, null bool)) (FlattenStats, error) {
	p := flatParser{f: f, data: data, emit: emit, maxDepth: f.MaxDepth}
	if p.maxDepth <= 0 {
		p.maxDepth = defaultMaxDepth
	}
	f.name = f.name[:0]
	p.skipSpace()
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return p.stats, p.errorf("expected a JSON object")
	}
	if err := p.object(1); err != nil {
		return p.stats, err
	}
	p.skipSpace()
	if p.i != len(p.data) {
		return p.stats, p.errorf("unexpected data after the object")
	}
	return p.stats, nil
}

type flatParser struct {
	f        *Flattener
	data     []byte
	i        int
	emit     func(name, value []byte, null bool)
	maxDepth int
	stats    FlattenStats
}

// errorf reports a syntax error with the byte offset, which is what a user
// needs to find it in a long line.
func (p *flatParser) errorf(format string, args ...any) error {
	return fmt.Errorf("json offset %d: %w", p.i, fmt.Errorf(format, args...))
}

// The scanning loops below keep the offset in a local variable and store
// it in p.i once: p.i itself would be loaded and stored at every byte.

func (p *flatParser) skipSpace() {
	d, i := p.data, p.i
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	p.i = i
}

// object parses an object at p.i (which is '{'); the current field name
// prefix is p.f.name.
func (p *flatParser) object(depth int) error {
	if depth > p.maxDepth {
		return p.errorf("%w (limit %d)", errTooDeep, p.maxDepth)
	}
	p.i++ // '{'
	p.skipSpace()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return nil
	}
	prefix := len(p.f.name)
	for {
		p.skipSpace()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return p.errorf("expected a string key")
		}
		key, err := p.str(&p.f.key)
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return p.errorf("expected ':' after a key")
		}
		p.i++
		p.skipSpace()
		// A scalar of the top-level object is named by its key alone,
		// which stays valid until the next key: it is not copied. Other
		// names are the prefix and the key; the key may alias p.f.key,
		// which nested keys overwrite, so it is appended to p.f.name now.
		name := key
		if prefix > 0 || (p.i < len(p.data) && p.data[p.i] == '{') {
			p.f.name = p.f.name[:prefix]
			if prefix > 0 {
				p.f.name = append(p.f.name, '.')
			}
			p.f.name = append(p.f.name, key...)
			name = p.f.name
		}
		if err := p.value(depth, name); err != nil {
			return err
		}
		p.skipSpace()
		if p.i >= len(p.data) {
			return p.errorf("unexpected end of input in an object")
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.f.name = p.f.name[:prefix]
			return nil
		default:
			return p.errorf("expected ',' or '}' in an object")
		}
	}
}

// value parses the value of the field called name and emits it; name is
// p.f.name when the value is an object, which extends it.
func (p *flatParser) value(depth int, name []byte) error {
	if p.i >= len(p.data) {
		return p.errorf("unexpected end of input, expected a value")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		p.stats.Ignored++
		return p.skipValue(depth)
	case c == '"':
		v, err := p.str(&p.f.val)
		if err != nil {
			return err
		}
		p.stats.Fields++
		p.emit(name, v, false)
	case c == 't':
		return p.literal(name, "true", false)
	case c == 'f':
		return p.literal(name, "false", false)
	case c == 'n':
		return p.literal(name, "null", true)
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		if err := p.number(); err != nil {
			return err
		}
		p.stats.Fields++
		p.emit(name, p.data[start:p.i], false)
	default:
		return p.errorf("unexpected character %q", c)
	}
	return nil
}

func (p *flatParser) literal(name []byte, word string, null bool) error {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return p.errorf("invalid literal")
	}
	v := p.data[p.i : p.i+len(word)]
	p.i += len(word)
	p.stats.Fields++
	if null {
		p.emit(name, v[:0], true)
	} else {
		p.emit(name, v, false)
	}
	return nil
}

// number scans a JSON number (RFC 8259 grammar).
func (p *flatParser) number() error {
	d, i := p.data, p.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = skipDigits(d, i)
	default:
		p.i = i
		return p.errorf("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.i = i
			return p.errorf("invalid number")
		}
		i = skipDigits(d, i)
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.i = i
			return p.errorf("invalid number")
		}
		i = skipDigits(d, i)
	}
	p.i = i
	return nil
}

// skipDigits returns the offset of the first byte from i on that is not
// a decimal digit.
func skipDigits(d []byte, i int) int {
	for i < len(d) && d[i]-'0' <= 9 {
		i++
	}
	return i
}

// str scans a string at p.i (which is '"'). Without escapes it returns a
// slice of the input; otherwise it unescapes into *buf.
func (p *flatParser) str(buf *[]byte) ([]byte, error) {
	d := p.data
	start := p.i + 1 // after the opening quote
	i := start
	for i < len(d) {
		c := d[i]
		if c == '"' {
			p.i = i + 1
			return d[start:i], nil
		}
		if c == '\\' {
			p.i = i
			*buf = append((*buf)[:0], d[start:i]...)
			return p.strEscaped(buf)
		}
		if c < 0x20 {
			p.i = i
			return nil, p.errorf("control character in a string")
		}
		i++
	}
	p.i = i
	return nil, p.errorf("unterminated string")
}

func (p *flatParser) strEscaped(buf *[]byte) ([]byte, error) {
	d := p.data
	for p.i < len(d) {
		c := d[p.i]
		switch {
		case c == '"':
			p.i++
			return *buf, nil
		case c < 0x20:
			return nil, p.errorf("control character in a string")
		case c != '\\':
			*buf = append(*buf, c)
			p.i++
			continue
		}
		// escape
		p.i++
		if p.i >= len(d) {
			break
		}
		e := d[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			*buf = append(*buf, e)
		case 'b':
			*buf = append(*buf, '\b')
		case 'f':
			*buf = append(*buf, '\f')
		case 'n':
			*buf = append(*buf, '\n')
		case 'r':
			*buf = append(*buf, '\r')
		case 't':
			*buf = append(*buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by a low one is one rune;
				// anything else becomes U+FFFD, as encoding/json does.
				r2 := rune(-1)
				if p.i+1 < len(d) && d[p.i] == '\\' && d[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					var ok2 bool
					r2, ok2 = p.hex4()
					if !ok2 {
						return nil, p.errorf("invalid \\u escape")
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
					} else {
						p.i = save // the second escape stands alone
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			*buf = utf8.AppendRune(*buf, r)
		default:
			return nil, p.errorf("invalid escape \\%c", e)
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *flatParser) hex4() (rune, bool) {
	if len(p.data)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// skipValue validates and skips any JSON value at p.i without emitting it.
func (p *flatParser) skipValue(depth int) error {
	if p.i >= len(p.data) {
		return p.errorf("unexpected end of input, expected a value")
	}
	switch c := p.data[p.i]; {
	case c == '{' || c == '[':
		if depth+1 > p.maxDepth {
			return p.errorf("%w (limit %d)", errTooDeep, p.maxDepth)
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.i++
		p.skipSpace()
		if p.i < len(p.data) && p.data[p.i] == closing {
			p.i++
			return nil
		}
		for {
			p.skipSpace()
			if c == '{' {
				if p.i >= len(p.data) || p.data[p.i] != '"' {
					return p.errorf("expected a string key")
				}
				if _, err := p.str(&p.f.val); err != nil {
					return err
				}
				p.skipSpace()
				if p.i >= len(p.data) || p.data[p.i] != ':' {
					return p.errorf("expected ':' after a key")
				}
				p.i++
				p.skipSpace()
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.skipSpace()
			if p.i >= len(p.data) {
				return p.errorf("unexpected end of input")
			}
			if p.data[p.i] == ',' {
				p.i++
				continue
			}
			if p.data[p.i] == closing {
				p.i++
				return nil
			}
			return p.errorf("expected ',' or %q", closing)
		}
	case c == '"':
		_, err := p.str(&p.f.val)
		return err
	case c == 't':
		return p.skipLiteral("true")
	case c == 'f':
		return p.skipLiteral("false")
	case c == 'n':
		return p.skipLiteral("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return p.errorf("unexpected character %q", p.data[p.i])
}

func (p *flatParser) skipLiteral(word string) error {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return p.errorf("invalid literal")
	}
	p.i += len(word)
	return nil
}
