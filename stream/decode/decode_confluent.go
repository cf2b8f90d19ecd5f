package decode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// Negative-cache lifetimes: a flood of records with an unknown schema id (or
// while the registry is down) must not turn into a flood of registry
// requests.
const (
	unknownSchemaTTL = 30 * time.Second
	registryDownTTL  = time.Second
)

// confluentDecoder decodes the Confluent wire format: magic byte 0, a 4-byte
// big-endian schema id, then the Avro binary datum. Schemas come from the
// Schema Registry and are cached by id for the life of the decoder (ids are
// immutable in a registry).
type confluentDecoder struct {
	client *sr.Client
	lim    limits
	now    func() time.Time

	mu       sync.Mutex
	codecs   map[uint32]*avroCodec
	failed   map[uint32]failedSchema
	inflight map[uint32]*schemaFetch
}

type failedSchema struct {
	until time.Time
	err   *DecodeError
}

// schemaFetch lets concurrent decoders of the same new id share one request.
type schemaFetch struct {
	done  chan struct{}
	codec *avroCodec
	err   error
}

func newConfluentDecoder(url string, hc *http.Client, lim limits) (*confluentDecoder, error) {
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("RegistryURL: missing (format avro-confluent needs a Schema Registry)")
	}
	var urls []string
	for _, u := range strings.Split(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	cl, err := sr.NewClient(sr.URLs(urls...), sr.HTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("RegistryURL: %w", err)
	}
	return &confluentDecoder{
		client:   cl,
		lim:      lim,
		now:      time.Now,
		codecs:   map[uint32]*avroCodec{},
		failed:   map[uint32]failedSchema{},
		inflight: map[uint32]*schemaFetch{},
	}, nil
}

func (d *confluentDecoder) Decode(ctx context.Context, value []byte, rec *FlatRecord) error {
	rec.Reset()
	if err := d.lim.checkSize(value); err != nil {
		return err
	}
	if len(value) < 5 {
		return decodeErr(reasonBadAvro, fmt.Errorf("%d bytes, too short for the Confluent wire format", len(value)))
	}
	if value[0] != 0 {
		return decodeErr(reasonBadAvro, fmt.Errorf("magic byte %d, want 0", value[0]))
	}
	id := binary.BigEndian.Uint32(value[1:5])
	c, err := d.codec(ctx, id)
	if err != nil {
		return err
	}
	return c.decode(value[5:], rec, d.lim)
}

// codec returns the cached codec of schema id, fetching it once.
func (d *confluentDecoder) codec(ctx context.Context, id uint32) (*avroCodec, error) {
	d.mu.Lock()
	if c, ok := d.codecs[id]; ok {
		d.mu.Unlock()
		return c, nil
	}
	if f, ok := d.failed[id]; ok {
		if d.now().Before(f.until) {
			d.mu.Unlock()
			return nil, f.err
		}
		delete(d.failed, id)
	}
	if f, ok := d.inflight[id]; ok {
		d.mu.Unlock()
		select {
		case <-f.done:
			return f.codec, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &schemaFetch{done: make(chan struct{})}
	d.inflight[id] = f
	d.mu.Unlock()

	f.codec, f.err = d.fetch(ctx, id)

	d.mu.Lock()
	delete(d.inflight, id)
	var de *DecodeError
	switch {
	case f.err == nil:
		d.codecs[id] = f.codec
	case errors.As(f.err, &de):
		ttl := unknownSchemaTTL
		if de.Reason == reasonRegistry {
			ttl = registryDownTTL
		}
		d.failed[id] = failedSchema{until: d.now().Add(ttl), err: de}
	}
	d.mu.Unlock()
	close(f.done)
	return f.codec, f.err
}

func (d *confluentDecoder) fetch(ctx context.Context, id uint32) (*avroCodec, error) {
	if id > 1<<31-1 {
		return nil, decodeErr(reasonUnknownSchema, fmt.Errorf("schema id %d out of range", id))
	}
	s, err := d.client.SchemaByID(ctx, int(id))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return nil, decodeErr(reasonUnknownSchema, fmt.Errorf("schema id %d: %w", id, err))
		}
		return nil, decodeErr(reasonRegistry, fmt.Errorf("schema id %d: %w", id, err))
	}
	if s.Type != sr.TypeAvro {
		return nil, decodeErr(reasonUnknownSchema, fmt.Errorf("schema id %d is %s, not Avro", id, s.Type))
	}
	c, err := newAvroCodec(s.Schema)
	if err != nil {
		return nil, decodeErr(reasonUnknownSchema, fmt.Errorf("schema id %d: %w", id, err))
	}
	return c, nil
}
