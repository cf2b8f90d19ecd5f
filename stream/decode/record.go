package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// FlatRecord is one decoded record flattened to scalar fields. It is meant to
// be reused across records: Reset keeps the buffers, so decoding a stream
// allocates nothing per record once the buffers have grown to the largest
// record seen.
//
// Names and values live in one byte buffer, already in the fields' part of
// the binary layout (see AppendBinary), so that encoding a record copies
// the buffer once; the slices Field returns alias it and stay valid until
// the next Reset, Add or UnmarshalBinary.
type FlatRecord struct {
	buf     []byte
	fields  []flatField
	ignored int // non-scalar fields (arrays, maps, ...) the decoder skipped
}

// flatField locates one field in FlatRecord.buf: the name is
// buf[off:off+nameLen], the value buf[valOff:valOff+valLen].
type flatField struct {
	off     uint32
	nameLen uint32
	valOff  uint32
	valLen  uint32
	null    bool
}

// Reset empties the record, keeping its buffers.
func (r *FlatRecord) Reset() {
	r.buf = r.buf[:0]
	r.fields = r.fields[:0]
	r.ignored = 0
}

// Add appends a field, copying name and value. A NULL field has no value.
func (r *FlatRecord) Add(name, value []byte, null bool) { addField(r, name, value, null) }

// AddString is Add for string values (tests, generators).
func (r *FlatRecord) AddString(name, value string) { addField(r, name, value, false) }

// addField is Add and AddString: it appends the field to r.buf in the
// binary layout and records where its name and value are.
func addField[S string | []byte](r *FlatRecord, name, value S, null bool) {
	b := binary.AppendUvarint(r.buf, uint64(len(name)))
	f := flatField{off: uint32(len(b)), nameLen: uint32(len(name)), null: null}
	b = append(b, name...)
	if null {
		b = append(b, 1)
	} else {
		b = binary.AppendUvarint(append(b, 0), uint64(len(value)))
		f.valOff, f.valLen = uint32(len(b)), uint32(len(value))
		b = append(b, value...)
	}
	r.buf = b
	r.fields = append(r.fields, f)
}

// addIgnored counts n non-scalar fields skipped while decoding.
func (r *FlatRecord) addIgnored(n int) { r.ignored += n }

// Len is the number of fields.
func (r *FlatRecord) Len() int { return len(r.fields) }

// Field returns field i. The slices alias the record's buffer.
func (r *FlatRecord) Field(i int) (name, value []byte, null bool) {
	f := r.fields[i]
	n := f.off + f.nameLen
	end := f.valOff + f.valLen
	return r.buf[f.off:n:n], r.buf[f.valOff:end:end], f.null
}

// Binary layout of a record (the Pebble value of a window record):
//
//	version byte (1)
//	uvarint ignored
//	uvarint field count
//	per field: uvarint len(name), name, byte null (0/1), [uvarint len(value), value if not null]
//
// Names are inline; Pebble's block compression takes care of repetition.
const binaryVersion = 1

// errBinary is wrapped by every UnmarshalBinary error.
var errBinary = errors.New("stream: bad record encoding")

// AppendBinary appends the binary encoding of r to dst: the header, then
// the record's buffer, which holds the fields already encoded.
func (r *FlatRecord) AppendBinary(dst []byte) []byte {
	dst = append(dst, binaryVersion)
	dst = binary.AppendUvarint(dst, uint64(r.ignored))
	dst = binary.AppendUvarint(dst, uint64(len(r.fields)))
	return append(dst, r.buf...)
}

// UnmarshalBinary resets r and decodes b into it. r copies what it needs: it
// does not alias b. The fields' part of b is already in the layout of r's
// buffer: it is copied once and indexed, not encoded again field by field.
func (r *FlatRecord) UnmarshalBinary(b []byte) error {
	r.Reset()
	if len(b) == 0 || b[0] != binaryVersion {
		return fmt.Errorf("%w: unknown version", errBinary)
	}
	p := 1
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(b[p:])
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad varint at byte %d", errBinary, p)
		}
		p += n
		return v, nil
	}
	ign, err := uv()
	if err != nil {
		return err
	}
	count, err := uv()
	if err != nil {
		return err
	}
	// Each field takes at least two bytes: reject absurd counts before
	// looping so a corrupt count cannot spin.
	if count > uint64(len(b)-p)/2 || ign > 1<<31 {
		return fmt.Errorf("%w: field count %d exceeds input", errBinary, count)
	}
	r.ignored = int(ign)
	base := p // b[base:] becomes r.buf
	for range count {
		nl, err := uv()
		if err != nil {
			r.Reset()
			return err
		}
		if nl > uint64(len(b)-p) {
			r.Reset()
			return fmt.Errorf("%w: name overruns input", errBinary)
		}
		f := flatField{off: uint32(p - base), nameLen: uint32(nl)}
		p += int(nl)
		if p >= len(b) {
			r.Reset()
			return fmt.Errorf("%w: truncated field", errBinary)
		}
		flag := b[p]
		p++
		switch flag {
		case 1:
			f.null = true
			r.fields = append(r.fields, f)
			continue
		case 0:
		default:
			r.Reset()
			return fmt.Errorf("%w: bad null flag %d", errBinary, flag)
		}
		vl, err := uv()
		if err != nil {
			r.Reset()
			return err
		}
		if vl > uint64(len(b)-p) {
			r.Reset()
			return fmt.Errorf("%w: value overruns input", errBinary)
		}
		f.valOff, f.valLen = uint32(p-base), uint32(vl)
		r.fields = append(r.fields, f)
		p += int(vl)
	}
	if p != len(b) {
		r.Reset()
		return fmt.Errorf("%w: %d trailing bytes", errBinary, len(b)-p)
	}
	r.buf = append(r.buf, b[base:]...)
	return nil
}
