package stream

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/odwatch/odwatch/discovery"
)

// jsonDecoder decodes JSON objects with discovery's flattener (the same
// semantics as the JSONL file reader): nested objects become dotted names,
// arrays are ignored and counted, numbers keep their literal text.
type jsonDecoder struct {
	lim limits
	// flatteners keeps scratch buffers between records without tying the
	// decoder to one goroutine.
	flatteners sync.Pool
}

func newJSONDecoder(lim limits) *jsonDecoder {
	d := &jsonDecoder{lim: lim}
	d.flatteners.New = func() any { return new(discovery.Flattener) }
	return d
}

func (d *jsonDecoder) Decode(ctx context.Context, value []byte, rec *FlatRecord) error {
	rec.Reset()
	if err := d.lim.checkSize(value); err != nil {
		return err
	}
	sink := fieldSink{rec: rec, sel: d.lim.sel, maxFields: d.lim.maxFields}
	f := d.flatteners.Get().(*discovery.Flattener)
	stats, err := f.Flatten(value, sink.emit)
	d.flatteners.Put(f)
	if err != nil {
		rec.Reset()
		if !startsWithObject(value) && json.Valid(value) {
			return decodeErr(ReasonNotObject, errors.New("top-level value is not an object"))
		}
		return decodeErr(ReasonMalformed, err)
	}
	rec.AddIgnored(stats.Ignored)
	return sink.finish()
}

func startsWithObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
