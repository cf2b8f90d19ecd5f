package decode

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
)

func TestDecodeConfluent(t *testing.T) {
	reg := &testkit.FakeRegistry{Schemas: map[int]string{
		7:  testkit.ConfluentSchema,
		8:  `{"type":"record","name":"P2","fields":[{"name":"x","type":"string"}]}`,
		9:  `syntax = "proto3"; message M { string x = 1; }`,
		10: `{"type":"record","name":"R","fields":[{"name":"x","type":"com.other.Ref"}]}`,
	}, Types: map[int]string{9: "PROTOBUF"}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL})
	good := testkit.ConfluentFrame(7, testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(50000), "tax": map[string]any{"double": 1234.5}}))
	ctx := context.Background()

	tests := []struct {
		name   string
		in     []byte
		want   []testField
		reason string
	}{
		{name: "good", in: good, want: []testField{{"salary", "50000", false}, {"tax", "1234.5", false}}},
		{name: "second schema", in: testkit.ConfluentFrame(8, testkit.EncodeAvro(t, reg.Schemas[8], map[string]any{"x": "hi"})), want: []testField{{"x", "hi", false}}},
		{name: "unknown id", in: testkit.ConfluentFrame(99, []byte{2}), reason: reasonUnknownSchema},
		{name: "protobuf schema", in: testkit.ConfluentFrame(9, []byte{2}), reason: reasonUnknownSchema},
		{name: "schema with unresolved reference", in: testkit.ConfluentFrame(10, []byte{2}), reason: reasonUnknownSchema},
		{name: "bad magic", in: append([]byte{1}, good[1:]...), reason: reasonBadAvro},
		{name: "short", in: []byte{0, 0, 0}, reason: reasonBadAvro},
		{name: "empty", in: nil, reason: reasonBadAvro},
		{name: "bad avro after header", in: testkit.ConfluentFrame(7, []byte{0xff}), reason: reasonBadAvro},
		{name: "trailing bytes", in: append(append([]byte{}, good...), 1), reason: reasonBadAvro},
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
	reg := &testkit.FakeRegistry{Schemas: map[int]string{7: testkit.ConfluentSchema}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL})
	good := testkit.ConfluentFrame(7, testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(1), "tax": nil}))
	unknown := testkit.ConfluentFrame(12345, []byte{2})
	ctx := context.Background()
	var rec FlatRecord
	for range 1000 {
		if err := d.Decode(ctx, good, &rec); err != nil {
			t.Fatal(err)
		}
		if got := reasonOf(d.Decode(ctx, unknown, &rec)); got != reasonUnknownSchema {
			t.Fatalf("unknown id: reason %q", got)
		}
	}
	if got := reg.Hits.Load(); got != 2 {
		t.Fatalf("registry hit %d times for 2 schema ids, want 2", got)
	}
}

func TestDecodeConfluentRegistryDown(t *testing.T) {
	srv := httptest.NewServer(&testkit.FakeRegistry{})
	url := srv.URL
	srv.Close() // nothing listens there any more
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: url})
	var rec FlatRecord
	err := d.Decode(context.Background(), testkit.ConfluentFrame(7, []byte{2}), &rec)
	if got := reasonOf(err); got != reasonRegistry {
		t.Fatalf("reason %q (%v), want %q", got, err, reasonRegistry)
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
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL})
	var rec FlatRecord
	if got := reasonOf(d.Decode(context.Background(), testkit.ConfluentFrame(7, []byte{2}), &rec)); got != reasonRegistry {
		t.Fatalf("reason %q, want %q", got, reasonRegistry)
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
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var rec FlatRecord
	err := d.Decode(ctx, testkit.ConfluentFrame(7, []byte{2}), &rec)
	if err == nil || reasonOf(err) != "other" {
		t.Fatalf("cancelled fetch: %v, want the context's error (not a DecodeError)", err)
	}
}

func FuzzDecodeConfluent(f *testing.F) {
	reg := &testkit.FakeRegistry{Schemas: map[int]string{1: testAvroSchema, 2: testkit.ConfluentSchema}}
	srv := httptest.NewServer(reg)
	f.Cleanup(srv.Close)
	d := mustDecoder(f, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL})
	f.Add(testkit.ConfluentFrame(1, testkit.EncodeAvro(f, testAvroSchema, testAvroDatum())))
	f.Add(testkit.ConfluentFrame(2, testkit.EncodeAvro(f, testkit.ConfluentSchema, map[string]any{"salary": int64(1), "tax": nil})))
	f.Add(testkit.ConfluentFrame(3, nil))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, in []byte) {
		var rec FlatRecord
		if err := d.Decode(context.Background(), in, &rec); err != nil && reasonOf(err) == "other" {
			t.Fatalf("error without a reason: %v", err)
		}
	})
}

func TestDecodeConfluentNegativeCacheExpires(t *testing.T) {
	reg := &testkit.FakeRegistry{Schemas: map[int]string{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL}).(*confluentDecoder)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	in := testkit.ConfluentFrame(5, testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(3), "tax": nil}))
	var rec FlatRecord
	ctx := context.Background()
	for range 10 {
		if got := reasonOf(d.Decode(ctx, in, &rec)); got != reasonUnknownSchema {
			t.Fatalf("reason %q", got)
		}
	}
	if reg.Hits.Load() != 1 {
		t.Fatalf("%d registry hits while negatively cached", reg.Hits.Load())
	}
	// The schema gets registered; once the negative entry expires the
	// decoder picks it up.
	reg.Schemas[5] = testkit.ConfluentSchema
	now = now.Add(unknownSchemaTTL + time.Second)
	if err := d.Decode(ctx, in, &rec); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if reg.Hits.Load() != 2 {
		t.Fatalf("%d registry hits, want 2", reg.Hits.Load())
	}
}

func TestDecodeConfluentConcurrentFirstUse(t *testing.T) {
	reg := &testkit.FakeRegistry{Schemas: map[int]string{7: testkit.ConfluentSchema}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	d := mustDecoder(t, DecoderConfig{Format: formatAvroConfluent, RegistryURL: srv.URL})
	in := testkit.ConfluentFrame(7, testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(3), "tax": nil}))
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
	if got := reg.Hits.Load(); got != 1 {
		t.Fatalf("%d registry hits for one schema id under concurrent first use, want 1", got)
	}
}
