package stream

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const confluentTestSchema = `{"type":"record","name":"P","fields":[{"name":"salary","type":"long"},{"name":"tax","type":["null","double"]}]}`

// fakeRegistry serves GET /schemas/ids/{id} the way Confluent Schema Registry
// does, and counts the requests.
type fakeRegistry struct {
	schemas map[int]string
	types   map[int]string // schemaType when not Avro
	hits    atomic.Int64
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"))
	s, ok := f.schemas[id]
	if r.Method != http.MethodGet || err != nil || !ok {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": "Schema " + strconv.Itoa(id) + " not found"})
		return
	}
	resp := map[string]any{"schema": s}
	if typ := f.types[id]; typ != "" {
		resp["schemaType"] = typ
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func confluentFrame(id uint32, avro []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], id)
	return append(b, avro...)
}

func TestDecodeConfluent(t *testing.T) {
	reg := &fakeRegistry{schemas: map[int]string{
		7:  confluentTestSchema,
		8:  `{"type":"record","name":"P2","fields":[{"name":"x","type":"string"}]}`,
		9:  `syntax = "proto3"; message M { string x = 1; }`,
		10: `{"type":"record","name":"R","fields":[{"name":"x","type":"com.other.Ref"}]}`,
	}, types: map[int]string{9: "PROTOBUF"}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL})
	good := confluentFrame(7, encodeAvro(t, confluentTestSchema, map[string]any{"salary": int64(50000), "tax": map[string]any{"double": 1234.5}}))
	ctx := context.Background()

	tests := []struct {
		name   string
		in     []byte
		want   []testField
		reason string
	}{
		{name: "good", in: good, want: []testField{{"salary", "50000", false}, {"tax", "1234.5", false}}},
		{name: "second schema", in: confluentFrame(8, encodeAvro(t, reg.schemas[8], map[string]any{"x": "hi"})), want: []testField{{"x", "hi", false}}},
		{name: "unknown id", in: confluentFrame(99, []byte{2}), reason: ReasonUnknownSchema},
		{name: "protobuf schema", in: confluentFrame(9, []byte{2}), reason: ReasonUnknownSchema},
		{name: "schema with unresolved reference", in: confluentFrame(10, []byte{2}), reason: ReasonUnknownSchema},
		{name: "bad magic", in: append([]byte{1}, good[1:]...), reason: ReasonBadAvro},
		{name: "short", in: []byte{0, 0, 0}, reason: ReasonBadAvro},
		{name: "empty", in: nil, reason: ReasonBadAvro},
		{name: "bad avro after header", in: confluentFrame(7, []byte{0xff}), reason: ReasonBadAvro},
		{name: "trailing bytes", in: append(append([]byte{}, good...), 1), reason: ReasonBadAvro},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec FlatRecord
			err := d.Decode(ctx, tt.in, &rec)
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("reason %q (%v), want %q", got, err, tt.reason)
			}
			if tt.reason == "" && !slices.Equal(recordFields(&rec), tt.want) {
				t.Fatalf("got %v want %v", recordFields(&rec), tt.want)
			}
		})
	}
}

func TestDecodeConfluentCachesSchemas(t *testing.T) {
	reg := &fakeRegistry{schemas: map[int]string{7: confluentTestSchema}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL})
	good := confluentFrame(7, encodeAvro(t, confluentTestSchema, map[string]any{"salary": int64(1), "tax": nil}))
	unknown := confluentFrame(12345, []byte{2})
	ctx := context.Background()
	var rec FlatRecord
	for range 1000 {
		if err := d.Decode(ctx, good, &rec); err != nil {
			t.Fatal(err)
		}
		if got := reasonOf(d.Decode(ctx, unknown, &rec)); got != ReasonUnknownSchema {
			t.Fatalf("unknown id: reason %q", got)
		}
	}
	if got := reg.hits.Load(); got != 2 {
		t.Fatalf("registry hit %d times for 2 schema ids, want 2", got)
	}
}

func TestDecodeConfluentRegistryDown(t *testing.T) {
	srv := httptest.NewServer(&fakeRegistry{})
	url := srv.URL
	srv.Close() // nothing listens there any more
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: url})
	var rec FlatRecord
	err := d.Decode(context.Background(), confluentFrame(7, []byte{2}), &rec)
	if got := reasonOf(err); got != ReasonRegistry {
		t.Fatalf("reason %q (%v), want %q", got, err, ReasonRegistry)
	}
	var de *DecodeError
	if !errors.As(err, &de) || !de.Retryable() {
		t.Fatal("registry unavailable is not retryable")
	}
}

func TestDecodeConfluentRegistryError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error_code":50001,"message":"boom"}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL})
	var rec FlatRecord
	if got := reasonOf(d.Decode(context.Background(), confluentFrame(7, []byte{2}), &rec)); got != ReasonRegistry {
		t.Fatalf("reason %q, want %q", got, ReasonRegistry)
	}
}

func TestDecodeConfluentCancelled(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var rec FlatRecord
	err := d.Decode(ctx, confluentFrame(7, []byte{2}), &rec)
	if err == nil || reasonOf(err) != "other" {
		t.Fatalf("cancelled fetch: %v, want the context's error (not a DecodeError)", err)
	}
}

func FuzzDecodeConfluent(f *testing.F) {
	reg := &fakeRegistry{schemas: map[int]string{1: testAvroSchema, 2: confluentTestSchema}}
	srv := httptest.NewServer(reg)
	f.Cleanup(srv.Close)
	d := mustDecoder(f, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL})
	f.Add(confluentFrame(1, encodeAvro(f, testAvroSchema, testAvroDatum())))
	f.Add(confluentFrame(2, encodeAvro(f, confluentTestSchema, map[string]any{"salary": int64(1), "tax": nil})))
	f.Add(confluentFrame(3, nil))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, in []byte) {
		var rec FlatRecord
		if err := d.Decode(context.Background(), in, &rec); err != nil && reasonOf(err) == "other" {
			t.Fatalf("error without a reason: %v", err)
		}
	})
}

func TestDecodeConfluentNegativeCacheExpires(t *testing.T) {
	reg := &fakeRegistry{schemas: map[int]string{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL}).(*confluentDecoder)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	in := confluentFrame(5, encodeAvro(t, confluentTestSchema, map[string]any{"salary": int64(3), "tax": nil}))
	var rec FlatRecord
	ctx := context.Background()
	for range 10 {
		if got := reasonOf(d.Decode(ctx, in, &rec)); got != ReasonUnknownSchema {
			t.Fatalf("reason %q", got)
		}
	}
	if reg.hits.Load() != 1 {
		t.Fatalf("%d registry hits while negatively cached", reg.hits.Load())
	}
	// The schema gets registered; once the negative entry expires the
	// decoder picks it up.
	reg.schemas[5] = confluentTestSchema
	now = now.Add(unknownSchemaTTL + time.Second)
	if err := d.Decode(ctx, in, &rec); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if reg.hits.Load() != 2 {
		t.Fatalf("%d registry hits, want 2", reg.hits.Load())
	}
}

func TestDecodeConfluentConcurrentFirstUse(t *testing.T) {
	reg := &fakeRegistry{schemas: map[int]string{7: confluentTestSchema}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: FormatAvroConfluent, RegistryURL: srv.URL})
	in := confluentFrame(7, encodeAvro(t, confluentTestSchema, map[string]any{"salary": int64(3), "tax": nil}))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			var rec FlatRecord
			for range 100 {
				if err := d.Decode(context.Background(), in, &rec); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := reg.hits.Load(); got != 1 {
		t.Fatalf("%d registry hits for one schema id under concurrent first use, want 1", got)
	}
}
