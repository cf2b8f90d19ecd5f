package alerts

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/alerts/schematest"
	"github.com/odwatch/odwatch/discovery"
)

// eventSchemaT compiles EventSchema for a test.
func eventSchemaT(t testing.TB) *schematest.Schema {
	t.Helper()
	s, err := schematest.Compile([]byte(EventSchema()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validateEvents checks every event against the published schema.
func validateEvents(t testing.TB, s *schematest.Schema, evs []Event) {
	t.Helper()
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(b); err != nil {
			t.Fatalf("event %s %s does not conform to event.schema.json: %v\n%s", e.Type, e.DependencyText, err, b)
		}
	}
}

func TestEventSchema(t *testing.T) {
	s := eventSchemaT(t)
	var head struct {
		ID string `json:"$id"`
	}
	if err := json.Unmarshal([]byte(EventSchema()), &head); err != nil || head.ID != eventDataSchema {
		t.Errorf("schema $id %q (%v), want eventDataSchema %q", head.ID, err, eventDataSchema)
	}
	validateEvents(t, s, twoEvents())
	for _, d := range []discovery.Dependency{
		{Kind: discovery.KindOFD, RHS: "country"},
		{Kind: discovery.KindOC, Context: []string{"a"}, Left: "x", Right: "y", Polarity: discovery.Desc},
		{Kind: discovery.KindListOD, LHSList: []string{"a", "b"}, RHSList: []string{"c"}},
		{Kind: discovery.KindKey, Set: []string{"order_id"}},
		{Kind: discovery.KindEquivalence, Context: []string{"origin"}, Set: []string{"destination", "distance"}},
	} {
		e := sampleEvent()
		e.Dependency, e.DependencyText, e.DependencyID = d, d.String(), DependencyID(d)
		e.Related = nil
		validateEvents(t, s, []Event{e})
	}
	// The schema refuses what consumers must not see.
	good, err := json.Marshal(sampleEvent())
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]func(m map[string]any){
		"unknown type":     func(m map[string]any) { m["type"] = "broken" },
		"no related":       func(m map[string]any) { delete(m, "related") },
		"extra field":      func(m map[string]any) { m["severity"] = "high" },
		"error above 1":    func(m map[string]any) { m["error_now"] = 1.5 },
		"bad time":         func(m map[string]any) { m["time"] = "yesterday" },
		"dependency kind":  func(m map[string]any) { m["dependency"].(map[string]any)["kind"] = "fd" },
		"related no id":    func(m map[string]any) { delete(m["related"].([]any)[0].(map[string]any), "dependency_id") },
		"negative offset":  func(m map[string]any) { m["samples"].([]any)[0].(map[string]any)["offset"] = -1 },
		"short event id":   func(m map[string]any) { m["id"] = "abc" },
		"non-string value": func(m map[string]any) { m["samples"].([]any)[0].(map[string]any)["values"] = map[string]any{"a": 1} },
	} {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		bad(m)
		b, _ := json.Marshal(m)
		if err := s.Validate(b); err == nil {
			t.Errorf("%s: the schema accepts %s", name, b)
		}
	}
}

// fakeRegistry is a Schema Registry that registers every schema under id
// 42 and records the requests.
type fakeRegistry struct {
	mu       sync.Mutex
	paths    []string
	bodies   []string
	failures int // answer 500 this many times first
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.bodies = append(f.bodies, string(b))
	if f.failures > 0 {
		f.failures--
		http.Error(w, `{"error_code":50001,"message":"store down"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	_, _ = w.Write([]byte(`{"id":42}`))
}

// TestKafkaSinkSchemaRegistry: with a registry, the sink registers the
// event schema as the topic's value subject (JSON Schema type) once, and
// writes values in the Confluent wire format; a registry failure fails the
// Send (the outbox retries it) and the next Send registers.
func TestKafkaSinkSchemaRegistry(t *testing.T) {
	reg := &fakeRegistry{failures: 1}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	c := eventsCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sink := NewKafkaSink(NewKafkaWriter(c.ListenAddrs(), "events"), "", KafkaSchemaRegistry(srv.URL, "events-value"))
	events := twoEvents()
	if err := sink.Send(ctx, events); err == nil || Delivered(err) != 0 {
		t.Fatalf("Send with the registry down: %v, want a failure delivering nothing", err)
	}
	if err := sink.Send(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := sink.Send(ctx, events[:1]); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	if want := []string{"POST /subjects/events-value/versions", "POST /subjects/events-value/versions"}; !reflect.DeepEqual(reg.paths, want) {
		t.Errorf("registry requests %v, want %v (one failed, one that registers, none after)", reg.paths, want)
	}
	var body struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := json.Unmarshal([]byte(reg.bodies[1]), &body); err != nil || body.SchemaType != "JSON" || body.Schema != EventSchema() {
		t.Errorf("registered %q of type %q (%v), want the event schema as JSON", body.Schema[:min(len(body.Schema), 40)], body.SchemaType, err)
	}
	reg.mu.Unlock()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.ListenAddrs(), Topic: "events", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	s := eventSchemaT(t)
	for i := range 3 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read message %d: %v", i, err)
		}
		if len(m.Value) < 5 || m.Value[0] != 0 || binary.BigEndian.Uint32(m.Value[1:5]) != 42 {
			t.Fatalf("message %d value starts %x, want the wire format header of schema 42", i, m.Value[:min(5, len(m.Value))])
		}
		if err := s.Validate(m.Value[5:]); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
		if !strings.Contains(string(m.Value), `"related"`) {
			t.Errorf("message %d lacks related", i)
		}
	}
}

func TestRegisterEventSchemaError(t *testing.T) {
	srv := httptest.NewServer(&fakeRegistry{failures: 100})
	defer srv.Close()
	_, err := registerEventSchema(context.Background(), srv.URL, "events-value", nil)
	if err == nil || !strings.Contains(err.Error(), "events-value") {
		t.Errorf("error %v, want one naming the subject", err)
	}
}
