package decode

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"sync"
	"time"

	"github.com/linkedin/goavro/v2"
)

// avroCodec decodes binary Avro datums of one writer schema straight into a
// FlatRecord.
//
// goavro checks the schema (so what NewDecoder accepts is what the reference
// implementation accepts), but decoding is done here, walking a parsed copy
// of the schema over the bytes, because goavro's NativeFromBinary
// preallocates arrays and maps by the block count read from the input: a
// 60-byte record claiming 2^31 items made it allocate gigabytes (found by
// FuzzDecodeConfluent). Walking the bytes also skips arrays and maps without
// materialising them, tells records from maps from unions (all
// map[string]any in goavro's natives) and allocates nothing per record.
type avroCodec struct {
	root *avroNode
	// walkers keeps scratch buffers between records without tying the
	// codec to one goroutine.
	walkers sync.Pool
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
	size     int    // fixed size
	fullName string // named types: namespace.name
	fields   []avroField
	branches []*avroNode // union members
	symbols  []string    // enum symbols
	items    *avroNode   // array items, map values
}

type avroField struct {
	name string
	node *avroNode
}

// maxAvroDepth bounds nesting of schemas and of recursive data.
const maxAvroDepth = 256

func newAvroCodec(schema string) (*avroCodec, error) {
	if _, err := goavro.NewCodec(schema); err != nil {
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
	return &avroCodec{root: root, walkers: sync.Pool{New: func() any { return new(avroWalker) }}}, nil
}

type avroSchemaParser struct {
	names map[string]*avroNode
	depth int
}

func (p *avroSchemaParser) parse(v any, ns string) (*avroNode, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxAvroDepth {
		return nil, errors.New("schema nests too deep")
	}
	switch t := v.(type) {
	case string:
		if k, ok := avroPrimitives[t]; ok {
			return &avroNode{kind: k}, nil
		}
		if n, ok := p.names[t]; ok {
			return n, nil
		}
		if n, ok := p.names[ns+"."+t]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("unknown type %q", t)
	case []any:
		n := &avroNode{kind: avroUnion}
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
	scale := 0
	if s, ok := m["scale"].(float64); ok {
		scale = int(s)
	}
	if k, ok := avroPrimitives[typ]; ok {
		return &avroNode{kind: k, logical: logical, scale: scale}, nil
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
		n := &avroNode{fullName: full, logical: logical, scale: scale}
		p.names[full] = n
		p.names[name] = n
		switch typ {
		case "enum":
			n.kind = avroEnum
			syms, _ := m["symbols"].([]any)
			for _, s := range syms {
				str, _ := s.(string)
				n.symbols = append(n.symbols, str)
			}
			return n, nil
		case "fixed":
			n.kind = avroFixed
			size, _ := m["size"].(float64)
			if size < 0 || size > 1<<30 {
				return nil, fmt.Errorf("fixed %s: bad size %v", full, size)
			}
			n.size = int(size)
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
	case "array", "map":
		key := "items"
		n := &avroNode{kind: avroArray}
		if typ == "map" {
			key, n.kind = "values", avroMap
		}
		items, err := p.parse(m[key], ns)
		if err != nil {
			return nil, err
		}
		n.items = items
		return n, nil
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

// errAvro marks malformed Avro binary.
var errAvro = errors.New("malformed avro binary")

// decode decodes one binary datum into rec (which the caller has reset).
func (c *avroCodec) decode(data []byte, rec *FlatRecord, lim limits) error {
	w := c.walkers.Get().(*avroWalker)
	*w = avroWalker{
		data: data,
		sink: fieldSink{rec: rec, sel: lim.sel, maxFields: lim.maxFields},
		name: w.name[:0],
		val:  w.val[:0],
		// Each array or map item, even a zero-byte one (null, empty
		// record), costs one unit of this budget, so a huge block count
		// over a few bytes cannot spin.
		itemBudget: len(data) + 1024,
	}
	err := w.run(c.root)
	// Do not keep the caller's record or input alive in the pool.
	w.data, w.sink.rec = nil, nil
	c.walkers.Put(w)
	return err
}

func (w *avroWalker) run(root *avroNode) error {
	w.value(root, 0)
	if w.err != nil {
		w.sink.rec.Reset()
		return decodeErr(reasonBadAvro, w.err)
	}
	if w.p != len(w.data) {
		w.sink.rec.Reset()
		return decodeErr(reasonBadAvro, fmt.Errorf("%d trailing bytes after the datum", len(w.data)-w.p))
	}
	w.sink.rec.addIgnored(w.ignored)
	return w.sink.finish()
}

type avroWalker struct {
	data       []byte
	p          int
	err        error
	itemBudget int
	sink       fieldSink
	name       []byte
	val        []byte
	ignored    int
}

func (w *avroWalker) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("%w at byte %d: %s", errAvro, w.p, fmt.Sprintf(format, args...))
	}
}

// long reads a zigzag varint.
func (w *avroWalker) long() int64 {
	if w.err != nil {
		return 0
	}
	u, n := binary.Uvarint(w.data[w.p:])
	if n <= 0 {
		w.fail("bad varint")
		return 0
	}
	w.p += n
	return int64(u>>1) ^ -int64(u&1)
}

func (w *avroWalker) int32() int64 {
	v := w.long()
	if v < math.MinInt32 || v > math.MaxInt32 {
		w.fail("int out of range")
	}
	return v
}

// take returns the next n bytes (aliasing the input).
func (w *avroWalker) take(n int64) []byte {
	if w.err != nil {
		return nil
	}
	if n < 0 || n > int64(len(w.data)-w.p) {
		w.fail("length %d overruns the input", n)
		return nil
	}
	b := w.data[w.p : w.p+int(n)]
	w.p += int(n)
	return b
}

// emit emits a value formatted into the scratch buffer (w.val[:0]).
func (w *avroWalker) emit(b []byte) {
	if w.err == nil {
		w.val = b // keep the grown buffer
		w.sink.emit(w.name, b, false)
	}
}

// emitRaw emits a value aliasing the input; it must not become the scratch
// buffer, or the next value would be formatted over the input.
func (w *avroWalker) emitRaw(b []byte) {
	if w.err == nil {
		w.sink.emit(w.name, b, false)
	}
}

// value decodes a datum of schema n and emits its scalar fields.
func (w *avroWalker) value(n *avroNode, depth int) {
	if depth > maxAvroDepth {
		w.fail("data nests too deep")
	}
	if w.err != nil {
		return
	}
	b := w.val[:0]
	switch n.kind {
	case avroNull:
		w.sink.emit(w.name, nil, true)
	case avroBoolean:
		v := w.take(1)
		if w.err == nil {
			if v[0] > 1 {
				w.fail("bad boolean %d", v[0])
				return
			}
			w.emit(strconv.AppendBool(b, v[0] == 1))
		}
	case avroInt:
		w.emit(w.appendInt(b, n, w.int32()))
	case avroLong:
		w.emit(w.appendInt(b, n, w.long()))
	case avroFloat:
		if v := w.take(4); w.err == nil {
			f := math.Float32frombits(binary.LittleEndian.Uint32(v))
			w.emit(strconv.AppendFloat(b, float64(f), 'g', -1, 32)) // shortest text that round-trips
		}
	case avroDouble:
		if v := w.take(8); w.err == nil {
			w.emit(strconv.AppendFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64))
		}
	case avroBytes, avroString:
		v := w.take(w.long())
		if n.logical == "decimal" && n.kind == avroBytes {
			w.emit(appendDecimal(b, v, n.scale))
			return
		}
		w.emitRaw(v)
	case avroFixed:
		v := w.take(int64(n.size))
		if n.logical == "decimal" {
			w.emit(appendDecimal(b, v, n.scale))
			return
		}
		w.emitRaw(v)
	case avroEnum:
		i := w.int32()
		if w.err == nil {
			if i < 0 || i >= int64(len(n.symbols)) {
				w.fail("enum index %d out of range", i)
				return
			}
			w.emit(append(b, n.symbols[i]...))
		}
	case avroRecord:
		prefix := len(w.name)
		for _, f := range n.fields {
			w.name = w.name[:prefix]
			if prefix > 0 {
				w.name = append(w.name, '.')
			}
			w.name = append(w.name, f.name...)
			w.value(f.node, depth+1)
		}
		w.name = w.name[:prefix]
	case avroUnion:
		if b := w.unionBranch(n); b != nil {
			w.value(b, depth+1)
		}
	case avroArray, avroMap:
		w.ignored++
		w.skipBlocks(n, depth)
	}
}

// appendInt formats an int or long, honouring its logical type.
func (w *avroWalker) appendInt(b []byte, n *avroNode, v int64) []byte {
	switch n.logical {
	case "date":
		return time.Unix(v*86400, 0).UTC().AppendFormat(b, time.DateOnly)
	case "timestamp-millis", "local-timestamp-millis":
		return appendTime(b, time.UnixMilli(v))
	case "timestamp-micros", "local-timestamp-micros":
		return appendTime(b, time.UnixMicro(v))
	case "timestamp-nanos", "local-timestamp-nanos":
		return appendTime(b, time.Unix(0, v))
	}
	// time-millis and time-micros stay numbers: their order is time order.
	return strconv.AppendInt(b, v, 10)
}

// appendTime formats with a fixed width, so that text order is time order.
func appendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z")
}

// appendDecimal formats a two's-complement big-endian unscaled value.
func appendDecimal(b, v []byte, scale int) []byte {
	x := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	if scale <= 0 {
		return x.Append(b, 10)
	}
	r := new(big.Rat).SetFrac(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return append(b, r.FloatString(scale)...)
}

// skipBlocks skips the blocks of an array or map.
func (w *avroWalker) skipBlocks(n *avroNode, depth int) {
	for w.err == nil {
		count := w.long()
		if count == 0 || w.err != nil {
			return
		}
		if count < 0 {
			// A negative count is followed by the block's size in bytes.
			if count == math.MinInt64 {
				w.fail("bad block count")
				return
			}
			count = -count
			w.take(w.long())
			w.spend(count)
			continue
		}
		w.spend(count)
		for i := int64(0); i < count && w.err == nil; i++ {
			if n.kind == avroMap {
				w.take(w.long()) // key
			}
			w.skip(n.items, depth+1)
		}
	}
}

func (w *avroWalker) spend(items int64) {
	if items > int64(w.itemBudget) {
		w.fail("implausible block count %d", items)
		return
	}
	w.itemBudget -= int(items)
}

// unionBranch reads a union's branch index and returns the branch, or nil
// (with w.err set) when the index is unreadable or out of range.
func (w *avroWalker) unionBranch(n *avroNode) *avroNode {
	i := w.long()
	if w.err != nil {
		return nil
	}
	if i < 0 || i >= int64(len(n.branches)) {
		w.fail("union index %d out of range", i)
		return nil
	}
	return n.branches[i]
}

// skip skips a datum of schema n without emitting it.
func (w *avroWalker) skip(n *avroNode, depth int) {
	if depth > maxAvroDepth {
		w.fail("data nests too deep")
	}
	if w.err != nil {
		return
	}
	switch n.kind {
	case avroNull:
	case avroBoolean:
		w.take(1)
	case avroInt, avroLong, avroEnum:
		w.long()
	case avroFloat:
		w.take(4)
	case avroDouble:
		w.take(8)
	case avroBytes, avroString:
		w.take(w.long())
	case avroFixed:
		w.take(int64(n.size))
	case avroRecord:
		for _, f := range n.fields {
			w.skip(f.node, depth+1)
		}
	case avroUnion:
		if b := w.unionBranch(n); b != nil {
			w.skip(b, depth+1)
		}
	case avroArray, avroMap:
		w.skipBlocks(n, depth)
	}
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
