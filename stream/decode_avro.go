package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/linkedin/goavro/v2"
)

// avroCodec decodes one Avro schema. goavro decodes into Go natives in which
// a record, a map and a non-null union all look like map[string]any, so the
// flattening walks a parsed copy of the schema alongside the datum instead of
// guessing from Go types.
type avroCodec struct {
	codec *goavro.Codec
	root  *avroNode
}

type avroKind int

const (
	avroNull avroKind = iota
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroBytes
	avroString
	avroRecord
	avroEnum
	avroArray
	avroMap
	avroFixed
	avroUnion
)

var avroPrimitives = map[string]avroKind{
	"null": avroNull, "boolean": avroBoolean, "int": avroInt, "long": avroLong,
	"float": avroFloat, "double": avroDouble, "bytes": avroBytes, "string": avroString,
}

type avroNode struct {
	kind     avroKind
	logical  string // logicalType, if any
	scale    int    // decimal scale
	fullName string // named types: namespace.name
	unionKey string // the key goavro uses for this type as a union member
	fields   []avroField
	branches []*avroNode
}

type avroField struct {
	name string
	node *avroNode
}

func newAvroCodec(schema string) (*avroCodec, error) {
	codec, err := goavro.NewCodec(schema)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		return nil, err
	}
	p := avroSchemaParser{names: map[string]*avroNode{}}
	root, err := p.parse(v, "")
	if err != nil {
		return nil, err
	}
	if root.kind != avroRecord {
		return nil, errors.New("top-level type must be a record")
	}
	return &avroCodec{codec: codec, root: root}, nil
}

type avroSchemaParser struct {
	names map[string]*avroNode
	depth int
}

func (p *avroSchemaParser) parse(v any, ns string) (*avroNode, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 256 {
		return nil, errors.New("schema nests too deep")
	}
	switch t := v.(type) {
	case string:
		if k, ok := avroPrimitives[t]; ok {
			return &avroNode{kind: k, unionKey: t}, nil
		}
		if n, ok := p.names[t]; ok {
			return n, nil
		}
		if n, ok := p.names[ns+"."+t]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("unknown type %q", t)
	case []any:
		n := &avroNode{kind: avroUnion, unionKey: "union"}
		for _, b := range t {
			bn, err := p.parse(b, ns)
			if err != nil {
				return nil, err
			}
			n.branches = append(n.branches, bn)
		}
		return n, nil
	case map[string]any:
		return p.parseMap(t, ns)
	}
	return nil, fmt.Errorf("unexpected schema element %T", v)
}

func (p *avroSchemaParser) parseMap(m map[string]any, ns string) (*avroNode, error) {
	typ, isString := m["type"].(string)
	if !isString {
		// {"type": {...}} or {"type": [...]}: a wrapped type description.
		return p.parse(m["type"], ns)
	}
	logical, _ := m["logicalType"].(string)
	if k, ok := avroPrimitives[typ]; ok {
		n := &avroNode{kind: k, logical: logical, unionKey: typ}
		if logical != "" {
			n.unionKey = typ + "." + logical
		}
		if s, ok := m["scale"].(float64); ok {
			n.scale = int(s)
		}
		return n, nil
	}
	switch typ {
	case "record", "error", "enum", "fixed":
		name, _ := m["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("%s without a name", typ)
		}
		full := name
		if space, ok := m["namespace"].(string); ok && space != "" && !containsDot(name) {
			full = space + "." + name
		} else if ns != "" && !containsDot(name) {
			full = ns + "." + name
		}
		n := &avroNode{fullName: full, unionKey: full, logical: logical}
		p.names[full] = n
		p.names[name] = n
		switch typ {
		case "enum":
			n.kind = avroEnum
			return n, nil
		case "fixed":
			n.kind = avroFixed
			if s, ok := m["scale"].(float64); ok {
				n.scale = int(s)
			}
			return n, nil
		}
		n.kind = avroRecord
		inner := full[:max(0, lastDot(full))]
		fields, _ := m["fields"].([]any)
		for _, f := range fields {
			fm, ok := f.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("record %s: bad field", full)
			}
			fname, _ := fm["name"].(string)
			fn, err := p.parse(fm["type"], inner)
			if err != nil {
				return nil, fmt.Errorf("record %s field %s: %w", full, fname, err)
			}
			n.fields = append(n.fields, avroField{name: fname, node: fn})
		}
		return n, nil
	case "array":
		// Parse the items so that named types defined there can be referred
		// to later; the array itself is never flattened.
		if _, err := p.parse(m["items"], ns); err != nil {
			return nil, err
		}
		return &avroNode{kind: avroArray, unionKey: "array"}, nil
	case "map":
		if _, err := p.parse(m["values"], ns); err != nil {
			return nil, err
		}
		return &avroNode{kind: avroMap, unionKey: "map"}, nil
	}
	// A named type referred to with the object form.
	return p.parse(typ, ns)
}

func containsDot(s string) bool { return lastDot(s) >= 0 }

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

// decode decodes one binary datum into rec.
func (c *avroCodec) decode(data []byte, rec *FlatRecord, lim limits) (err error) {
	defer func() {
		// goavro is third-party code fed with untrusted bytes: a panic in it
		// is a bad record, not a dead pipeline.
		if r := recover(); r != nil {
			rec.Reset()
			err = decodeErr(ReasonBadAvro, fmt.Errorf("avro decoder panic: %v", r))
		}
	}()
	native, rest, err := c.codec.NativeFromBinary(data)
	if err != nil {
		return decodeErr(ReasonBadAvro, err)
	}
	if len(rest) > 0 {
		return decodeErr(ReasonBadAvro, fmt.Errorf("%d trailing bytes after the datum", len(rest)))
	}
	w := avroWalker{sink: fieldSink{rec: rec, sel: lim.sel, maxFields: lim.maxFields}}
	w.walk(c.root, native, 0)
	rec.AddIgnored(w.ignored)
	return w.sink.finish()
}

type avroWalker struct {
	sink    fieldSink
	name    []byte
	val     []byte
	ignored int
}

func (w *avroWalker) walk(n *avroNode, v any, depth int) {
	if depth > 256 {
		w.ignored++
		return
	}
	switch n.kind {
	case avroRecord:
		m, ok := v.(map[string]any)
		if !ok {
			w.scalar(n, v)
			return
		}
		prefix := len(w.name)
		for _, f := range n.fields {
			w.name = w.name[:prefix]
			if prefix > 0 {
				w.name = append(w.name, '.')
			}
			w.name = append(w.name, f.name...)
			w.walk(f.node, m[f.name], depth+1)
		}
		w.name = w.name[:prefix]
	case avroUnion:
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			w.scalar(n, v)
			return
		}
		for key, val := range m {
			w.walk(w.branch(n, key), val, depth+1)
		}
	case avroArray, avroMap:
		w.ignored++
	default:
		w.scalar(n, v)
	}
}

// branch finds the union member goavro named key. If the naming differs
// (logical types goavro does not know), a union with a single non-null
// member still resolves.
func (w *avroWalker) branch(n *avroNode, key string) *avroNode {
	var only *avroNode
	nonNull := 0
	for _, b := range n.branches {
		if b.unionKey == key || b.fullName == key {
			return b
		}
		if b.kind != avroNull {
			only = b
			nonNull++
		}
	}
	if nonNull == 1 {
		return only
	}
	return &avroNode{kind: avroString} // format by Go type
}

// scalar emits v, formatted by its Go type with the schema for units.
func (w *avroWalker) scalar(n *avroNode, v any) {
	b := w.val[:0]
	switch x := v.(type) {
	case nil:
		w.sink.emit(w.name, nil, true)
		return
	case string:
		b = append(b, x...)
	case []byte:
		b = append(b, x...)
	case bool:
		b = strconv.AppendBool(b, x)
	case int32:
		b = strconv.AppendInt(b, int64(x), 10)
	case int64:
		b = strconv.AppendInt(b, x, 10)
	case int:
		b = strconv.AppendInt(b, int64(x), 10)
	case float32:
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32) // shortest text that round-trips
	case float64:
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	case time.Time:
		if n.logical == "date" {
			b = x.UTC().AppendFormat(b, time.DateOnly)
		} else {
			// Fixed width, so that text order is time order.
			b = x.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z")
		}
	case time.Duration:
		if n.logical == "time-millis" {
			b = strconv.AppendInt(b, x.Milliseconds(), 10)
		} else {
			b = strconv.AppendInt(b, x.Microseconds(), 10)
		}
	case *big.Rat:
		b = append(b, x.FloatString(n.scale)...)
	case map[string]any, []any:
		w.ignored++
		return
	default:
		b = fmt.Append(b, x)
	}
	w.val = b
	w.sink.emit(w.name, b, false)
}

// avroDecoder decodes single binary Avro datums with a fixed schema.
type avroDecoder struct {
	codec *avroCodec
	lim   limits
}

func newAvroDecoder(schema string, lim limits) (*avroDecoder, error) {
	if schema == "" {
		return nil, errors.New("Schema: missing (format avro needs the writer schema)")
	}
	c, err := newAvroCodec(schema)
	if err != nil {
		return nil, fmt.Errorf("Schema: %w", err)
	}
	return &avroDecoder{codec: c, lim: lim}, nil
}

func (d *avroDecoder) Decode(ctx context.Context, value []byte, rec *FlatRecord) error {
	rec.Reset()
	if err := d.lim.checkSize(value); err != nil {
		return err
	}
	return d.codec.decode(value, rec, d.lim)
}
