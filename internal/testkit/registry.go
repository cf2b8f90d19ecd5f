package testkit

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// ConfluentSchema is a two-field Avro record schema (a long salary, a
// nullable double tax) the registry tests serve.
const ConfluentSchema = `{"type":"record","name":"P","fields":[{"name":"salary","type":"long"},{"name":"tax","type":["null","double"]}]}`

// FakeRegistry serves GET /schemas/ids/{id} the way Confluent Schema
// Registry does, and counts the requests. Its handler may run on many
// goroutines: Schemas and Types are set before serving (or between requests
// by the test's goroutine), Hits is atomic.
type FakeRegistry struct {
	Schemas map[int]string
	Types   map[int]string // schemaType when not Avro
	Hits    atomic.Int64
}

func (f *FakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Hits.Add(1)
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"))
	s, ok := f.Schemas[id]
	if r.Method != http.MethodGet || err != nil || !ok {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": "Schema " + strconv.Itoa(id) + " not found"})
		return
	}
	resp := map[string]any{"schema": s}
	if typ := f.Types[id]; typ != "" {
		resp["schemaType"] = typ
	}
	_ = json.NewEncoder(w).Encode(resp)
}

// ConfluentFrame frames an Avro datum the way Confluent's serializer does:
// a zero magic byte, the schema id (big-endian), the datum.
func ConfluentFrame(id uint32, avro []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], id)
	return append(b, avro...)
}

// EncodeAvro is the binary Avro encoding of datum under schema, by goavro.
func EncodeAvro(t testing.TB, schema string, datum map[string]any) []byte {
	t.Helper()
	c, err := goavro.NewCodec(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.BinaryFromNative(nil, datum)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
