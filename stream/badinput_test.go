package stream

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/segmentio/kafka-go"
)

// TestBadInput feeds every kind of undecodable record (malformed JSON, a
// 5 MB record, a record with 10,000 fields, wrong Avro bytes, an unknown
// schema id) between good records: each is counted under its reason and
// dead-lettered with its coordinates, and the good records after it still
// land in the window.
func TestBadInput(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"bad-json": 1, "bad-avro": 1, "bad-conf": 1, "dlq": 1})
	reg := &testkit.FakeRegistry{Schemas: map[int]string{7: testkit.ConfluentSchema}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "p.avsc")
	if err := os.WriteFile(schemaFile, []byte(testkit.ConfluentSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startMonitor(t, Config{
		Brokers:        []string{addr},
		Group:          "bad",
		DLQTopic:       "dlq",
		StateDir:       filepath.Join(dir, "state"),
		SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{
			{Topic: "bad-json", Window: 100, Every: 100, Epsilon: 0.01},
			{Topic: "bad-avro", Format: "avro", SchemaFile: schemaFile, Window: 100, Every: 100, Epsilon: 0.01},
			{Topic: "bad-conf", Format: "avro-confluent", RegistryURL: srv.URL, Window: 100, Every: 100, Epsilon: 0.01},
		},
	})
	testkit.Eventually(t, 30*time.Second, "consumer group join", r.m.Ready)

	goodAvro := func(i int) []byte {
		return testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(1000 * i), "tax": map[string]any{"double": float64(100 * i)}})
	}
	const good = 10
	bads := badRecords(goodAvro(1))
	w := &kafka.Writer{Addr: kafka.TCP(addr), BatchBytes: kafkaread.MaxMessageBytes, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: testTransport(t)}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(topic string, value []byte) {
		t.Helper()
		if err := w.WriteMessages(ctx, kafka.Message{Topic: topic, Key: []byte("k"), Value: value}); err != nil {
			t.Fatalf("produce to %s (%d bytes): %v", topic, len(value), err)
		}
	}
	// Good records on both sides of every bad one.
	for i := range good {
		if i == good/2 {
			for _, b := range bads {
				write(b.topic, b.value)
			}
		}
		write("bad-json", []byte(fmt.Sprintf(`{"salary":%d,"tax":%d}`, 1000*i, 100*i)))
		write("bad-avro", goodAvro(i))
		write("bad-conf", testkit.ConfluentFrame(7, goodAvro(i)))
	}

	for _, topic := range []string{"bad-json", "bad-avro", "bad-conf"} {
		testkit.Eventually(t, 30*time.Second, "good records of "+topic+" in the window", func() bool {
			return metricValue(t, r.reg, "odwatch_window_records", map[string]string{"stream": topic}) == good
		})
	}
	for _, b := range bads {
		if got := metricValue(t, r.reg, "odwatch_records_rejected_total", map[string]string{"stream": b.topic, "reason": b.reason}); got != 1 {
			t.Errorf("odwatch_records_rejected_total{stream=%s,reason=%s} = %v, want 1", b.topic, b.reason, got)
		}
	}
	var dlq []kafka.Message
	testkit.Eventually(t, 20*time.Second, "dead letters", func() bool {
		dlq = readTopic(t, addr, "dlq")
		return len(dlq) >= len(bads)
	})
	checkDeadLetters(t, addr, bads, dlq)
	// Consumed means committed: every record, bad ones included.
	for _, topic := range []string{"bad-json", "bad-avro", "bad-conf"} {
		want := int64(good)
		for _, b := range bads {
			if b.topic == topic {
				want++
			}
		}
		testkit.Eventually(t, 10*time.Second, "offsets of "+topic+" committed", func() bool {
			return testkit.Committed(t, addr, "bad", topic) == want
		})
	}
}

// flakyRegistry answers 503 to the first `fail` requests, then serves.
type flakyRegistry struct {
	testkit.FakeRegistry
	fail  int64
	calls atomic.Int64
}

func (f *flakyRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.calls.Add(1) <= f.fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	f.FakeRegistry.ServeHTTP(w, r)
}

// TestRegistryOutageWaits checks that a record whose schema cannot be
// fetched because the registry is down is not dead-lettered: the pipeline
// waits and decodes it once the registry answers.
func TestRegistryOutageWaits(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"flaky": 1, "dlq": 1})
	reg := &flakyRegistry{FakeRegistry: testkit.FakeRegistry{Schemas: map[int]string{7: testkit.ConfluentSchema}}, fail: 1}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	r := startMonitor(t, Config{
		Brokers: []string{addr}, Group: "flaky", DLQTopic: "dlq", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{{Topic: "flaky", Format: "avro-confluent", RegistryURL: srv.URL, Window: 10, Epsilon: 0.01}},
	})
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "flaky", BatchTimeout: time.Millisecond, Transport: testTransport(t)}
	defer w.Close()
	rec := testkit.ConfluentFrame(7, testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(1), "tax": map[string]any{"double": 0.5}}))
	if err := w.WriteMessages(context.Background(), kafka.Message{Value: rec}); err != nil {
		t.Fatal(err)
	}
	stream := map[string]string{"stream": "flaky"}
	testkit.Eventually(t, 30*time.Second, "the record in the window", func() bool {
		return metricValue(t, r.reg, "odwatch_window_records", stream) == 1
	})
	if n := metricValue(t, r.reg, "odwatch_records_rejected_total", stream); n != 0 {
		t.Errorf("%v records rejected during a registry outage", n)
	}
	if n := metricValue(t, r.reg, "odwatch_decode_retries_total", stream); n < 1 {
		t.Errorf("odwatch_decode_retries_total = %v, want retries", n)
	}
}

// TestStopDuringRegistryOutage stops the monitor while it waits for an
// unreachable registry: a cancelled context is a clean stop, so Run
// returns nil, not the decode's context error.
func TestStopDuringRegistryOutage(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"down": 1})
	reg := &flakyRegistry{FakeRegistry: testkit.FakeRegistry{Schemas: map[int]string{7: testkit.ConfluentSchema}}, fail: math.MaxInt64}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	r := startMonitor(t, Config{
		Brokers: []string{addr}, Group: "down", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{{Topic: "down", Format: "avro-confluent", RegistryURL: srv.URL, Window: 10, Epsilon: 0.01}},
	})
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "down", BatchTimeout: time.Millisecond, Transport: testTransport(t)}
	defer w.Close()
	rec := testkit.ConfluentFrame(7, testkit.EncodeAvro(t, testkit.ConfluentSchema, map[string]any{"salary": int64(1), "tax": map[string]any{"double": 0.5}}))
	if err := w.WriteMessages(context.Background(), kafka.Message{Value: rec}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "a decode retry", func() bool {
		return metricValue(t, r.reg, "odwatch_decode_retries_total", map[string]string{"stream": "down"}) >= 1
	})
	if err := r.stop(); err != nil {
		t.Fatalf("Run after cancel during a registry outage: %v, want nil", err)
	}
}

// TestDeadLetterTooLargeForDLQ: the dead-letter topic takes smaller
// messages than the source topic. A batch of dead letters over its limit is
// written one by one, values intact; a dead letter over it alone is written
// without its value (with its size and coordinates). The pipeline goes on.
func TestDeadLetterTooLargeForDLQ(t *testing.T) {
	t.Parallel()
	const limit = 100_000
	addr := startTestBroker(t, map[string]int{"src": 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := (&kafka.Client{Addr: kafka.TCP(addr)}).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: "small-dlq", NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(limit)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Errors {
		if e != nil {
			t.Fatal(e)
		}
	}
	r := startMonitor(t, Config{
		Brokers: []string{addr}, Group: "small-dlq", DLQTopic: "small-dlq", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{{Topic: "src", Window: 100, Epsilon: 0.01}},
	})
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	// Malformed JSON (not too large for the stream): 20 of 10 kB, over the
	// limit together, then one of 2*limit.
	bad := func(n int) []byte { return []byte(`{"a":"` + strings.Repeat("x", n)) }
	var msgs []kafka.Message
	for range 20 {
		msgs = append(msgs, kafka.Message{Value: bad(10_000)})
	}
	msgs = append(msgs, kafka.Message{Value: bad(2 * limit)})
	for i := range 5 {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, `{"salary":%d,"tax":%d}`, i, i)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "src", BatchBytes: kafkaread.MaxMessageBytes, BatchTimeout: time.Millisecond, Transport: testTransport(t)}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "good records in the window", func() bool {
		return metricValue(t, r.reg, "odwatch_window_records", map[string]string{"stream": "src"}) == 5
	})
	var dlq []kafka.Message
	testkit.Eventually(t, 20*time.Second, "dead letters", func() bool {
		dlq = readTopic(t, addr, "small-dlq")
		return len(dlq) >= 21
	})
	intact, dropped := 0, 0
	for _, msg := range dlq {
		switch {
		case headerValue(msg.Headers, "odwatch_value_dropped") == strconv.Itoa(len(bad(2*limit))) && len(msg.Value) == 0 &&
			headerValue(msg.Headers, "odwatch_offset") == "20":
			dropped++
		case len(msg.Value) == len(bad(10_000)):
			intact++
		default:
			t.Errorf("unexpected dead letter: %d bytes, headers %v", len(msg.Value), msg.Headers)
		}
	}
	if intact != 20 || dropped != 1 {
		t.Errorf("%d intact and %d value-less dead letters, want 20 and 1", intact, dropped)
	}
}

// badRecord is an undecodable record TestBadInput writes to topic, and
// the reason it must be rejected for.
type badRecord struct {
	topic, reason string
	value         []byte
}

// badRecords are TestBadInput's undecodable records, one of each reason;
// goodAvro is a valid Avro body, framed with an unknown schema id.
func badRecords(goodAvro []byte) []badRecord {
	huge := `{"a":"` + strings.Repeat("x", 5<<20) + `"}`
	var many strings.Builder
	many.WriteString("{")
	for i := range 10000 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"f%d":%d`, i, i)
	}
	many.WriteString("}")
	return []badRecord{
		{"bad-json", "malformed_json", []byte(`{"salary": 1, "tax": `)},
		{"bad-json", "too_large", []byte(huge)},
		{"bad-json", "too_many_fields", []byte(many.String())},
		{"bad-avro", "bad_avro", []byte{0xff, 0xff, 0xff, 0x01}},
		{"bad-conf", "unknown_schema", testkit.ConfluentFrame(99, goodAvro)},
	}
}

// checkDeadLetters checks that each of bads is in dlq once, with its
// coordinates, its error and its key and value.
func checkDeadLetters(t *testing.T, addr string, bads []badRecord, dlq []kafka.Message) {
	t.Helper()
	if len(dlq) != len(bads) {
		t.Fatalf("%d dead letters, want %d", len(dlq), len(bads))
	}
	for _, b := range bads {
		found := false
		for _, msg := range dlq {
			if headerValue(msg.Headers, "odwatch_reason") != b.reason {
				continue
			}
			found = true
			if headerValue(msg.Headers, "odwatch_topic") != b.topic || headerValue(msg.Headers, "odwatch_partition") != "0" ||
				headerValue(msg.Headers, "odwatch_error") == "" || string(msg.Value) != string(b.value) || string(msg.Key) != "k" {
				t.Errorf("dead letter for %s: headers %v, %d bytes (want %d)", b.reason, msg.Headers, len(msg.Value), len(b.value))
			}
			off, err := strconv.ParseInt(headerValue(msg.Headers, "odwatch_offset"), 10, 64)
			if err != nil {
				t.Errorf("dead letter for %s: odwatch_offset: %v", b.reason, err)
				continue
			}
			if orig := readAt(t, addr, b.topic, 0, off); string(orig.Value) != string(b.value) {
				t.Errorf("dead letter for %s: offset %d is not the rejected record", b.reason, off)
			}
		}
		if !found {
			t.Errorf("no dead letter with reason %s", b.reason)
		}
	}
}
