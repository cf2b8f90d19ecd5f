package decode

import (
	"context"
	"fmt"
	"net/http"
)

// Reasons a record is rejected. They are the values of the `reason` label of
// odwatch_records_rejected_total and of the DLQ header, so they are part of
// the user-facing contract.
const (
	reasonMalformed     = "malformed_json"
	reasonNotObject     = "not_object"
	reasonBadAvro       = "bad_avro"
	reasonUnknownSchema = "unknown_schema"
	reasonRegistry      = "registry_unavailable"
	reasonTooLarge      = "too_large"
	reasonTooManyFields = "too_many_fields"
)

// Defaults of DecoderConfig limits.
const (
	DefaultMaxRecordBytes = 1 << 20
	defaultMaxFields      = 1000
)

// Formats NewDecoder accepts.
const (
	FormatJSON          = "json"
	formatAvro          = "avro"
	formatAvroConfluent = "avro-confluent"
)

// DecodeError is a record the decoder rejects: bad input, not a failure of
// the pipeline. Reason is one of the reason constants.
type DecodeError struct {
	Reason string
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Err == nil {
		return "decode: " + e.Reason
	}
	return "decode: " + e.Reason + ": " + e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Retryable reports whether the same bytes may decode later: the record was
// not at fault, the Schema Registry was unreachable. A pipeline may back off
// and retry instead of dead-lettering it.
func (e *DecodeError) Retryable() bool { return e.Reason == reasonRegistry }

func decodeErr(reason string, err error) *DecodeError {
	return &DecodeError{Reason: reason, Err: err}
}

// Decoder turns one Kafka record value into a FlatRecord. Decode resets rec
// first; on error rec holds no meaningful content. Bad input is a
// *DecodeError; any other error (only a cancelled ctx) is the caller's.
// Decoders returned by NewDecoder are safe for concurrent use.
type Decoder interface {
	Decode(ctx context.Context, value []byte, rec *FlatRecord) error
}

// DecoderConfig selects and configures a decoder.
type DecoderConfig struct {
	Format         string       // "json" | "avro" | "avro-confluent"
	Schema         string       // Avro schema JSON text (format avro)
	RegistryURL    string       // Schema Registry base URL (format avro-confluent)
	RegistryClient *http.Client // optional HTTP client for the registry
	// MaxRecordBytes bounds a record value, checked before parsing
	// (reasonTooLarge). 0 means DefaultMaxRecordBytes.
	MaxRecordBytes int
	// MaxFields bounds the number of flattened scalar fields of a record,
	// counted before column selection (reasonTooManyFields). 0 means
	// defaultMaxFields.
	MaxFields int
	// Include and Exclude select columns: exact names or prefix patterns
	// ending in "*" (e.g. "user.*"). Empty Include keeps all; Exclude wins.
	Include, Exclude []string
}

// NewDecoder builds the decoder cfg describes. A bad configuration is an
// error naming the offending field.
func NewDecoder(cfg DecoderConfig) (Decoder, error) {
	if cfg.MaxRecordBytes < 0 {
		return nil, fmt.Errorf("MaxRecordBytes: must not be negative, got %d", cfg.MaxRecordBytes)
	}
	if cfg.MaxFields < 0 {
		return nil, fmt.Errorf("MaxFields: must not be negative, got %d", cfg.MaxFields)
	}
	if cfg.MaxRecordBytes == 0 {
		cfg.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if cfg.MaxFields == 0 {
		cfg.MaxFields = defaultMaxFields
	}
	sel, err := newColumnSelector(cfg.Include, cfg.Exclude)
	if err != nil {
		return nil, err
	}
	lim := limits{maxBytes: cfg.MaxRecordBytes, maxFields: cfg.MaxFields, sel: sel}
	switch cfg.Format {
	case FormatJSON:
		return newJSONDecoder(lim), nil
	case formatAvro:
		return newAvroDecoder(cfg.Schema, lim)
	case formatAvroConfluent:
		return newConfluentDecoder(cfg.RegistryURL, cfg.RegistryClient, lim)
	case "":
		return nil, fmt.Errorf("Format: missing (want %q, %q or %q)", FormatJSON, formatAvro, formatAvroConfluent)
	}
	return nil, fmt.Errorf("Format: unknown format %q (want %q, %q or %q)", cfg.Format, FormatJSON, formatAvro, formatAvroConfluent)
}

// limits are the checks every decoder applies.
type limits struct {
	maxBytes  int
	maxFields int
	sel       *columnSelector
}

// fieldSink receives flattened fields: it counts them against maxFields and
// keeps the selected ones. It lives on the decoder's stack per call.
type fieldSink struct {
	rec       *FlatRecord
	sel       *columnSelector
	maxFields int
	n         int
}

func (s *fieldSink) emit(name, value []byte, null bool) {
	s.n++
	if s.n > s.maxFields {
		return
	}
	if s.sel.keep(name) {
		s.rec.Add(name, value, null)
	}
}

// finish turns an over-limit field count into a DecodeError.
func (s *fieldSink) finish() error {
	if s.n > s.maxFields {
		s.rec.Reset()
		return decodeErr(reasonTooManyFields, fmt.Errorf("%d fields, limit %d", s.n, s.maxFields))
	}
	return nil
}

func (l limits) checkSize(value []byte) error {
	if len(value) > l.maxBytes {
		return decodeErr(reasonTooLarge, fmt.Errorf("%d bytes, limit %d", len(value), l.maxBytes))
	}
	return nil
}
