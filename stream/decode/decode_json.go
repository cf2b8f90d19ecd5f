package decode

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/odwatch/odwatch/discovery/tableio"
)

// jsonDecoder decodes JSON objects with discovery's flattener (the same
// semantics as the JSONL file reader): nested objects become dotted names,
// arrays are ignored and counted, numbers keep their literal text.
type jsonDecoder struct {
	lim limits
	// scratch keeps a flattener's buffers and the bound emit callback
	// between records without tying the decoder to one goroutine.
	scratch sync.Pool
}

// jsonScratch is per-goroutine decoding state. emit is bound to sink once,
// because a method value created per record would escape to the heap
// (Flatten keeps its callback in a struct).
type jsonScratch struct {
	f    tableio.Flattener
	sink fieldSink
	emit func(name, value []byte, null bool)
}

func newJSONDecoder(lim limits) *jsonDecoder {
	d := &jsonDecoder{lim: lim}
	d.scratch.New = func() any {
		s := &jsonScratch{}
		s.emit = s.sink.emit
		return s
	}
	return d
}

func (d *jsonDecoder) Decode(ctx context.Context, value []byte, rec *FlatRecord) error {
	rec.Reset()
	if err := d.lim.checkSize(value); err != nil {
		return err
	}
	s := d.scratch.Get().(*jsonScratch)
	s.sink = fieldSink{rec: rec, sel: d.lim.sel, maxFields: d.lim.maxFields}
	stats, err := s.f.Flatten(value, s.emit)
	sinkErr := s.sink.finish()
	s.sink.rec = nil // do not keep the caller's record alive in the pool
	d.scratch.Put(s)
	if err != nil {
		rec.Reset()
		if !startsWithObject(value) && json.Valid(value) {
			return decodeErr(reasonNotObject, errors.New("top-level value is not an object"))
		}
		return decodeErr(reasonMalformed, err)
	}
	rec.addIgnored(stats.Ignored)
	return sinkErr
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
