package integration

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestConfluentRegistry: the payroll records as Avro in the Confluent wire
// format, framed with the id Apicurio Registry gave payroll.avsc, produced
// by kcat in lz4 batches and watched with --format avro-confluent against
// the registry's Confluent-compatible API; the events go out with
// --events-registry, so the registry holds the event schema as a JSON
// Schema and every event names its id.
func TestConfluentRegistry(t *testing.T) {
	requireKcat(t)
	kafkatest.RequireRegistry(t)
	schema, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "examples", "payroll.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	codec, err := goavro.NewCodec(string(schema))
	if err != nil {
		t.Fatal(err)
	}
	reg := kafkatest.StartRegistry(t)
	cl, err := sr.NewClient(sr.URLs(reg.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := cl.RegisterSchema(ctx, "avro-value", sr.Schema{Schema: string(schema), Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	for _, topic := range []string{"src", "avro", "events"} {
		c.CreateTopic(t, topic, 1, nil)
	}
	files := framed(t, uint32(id), payrollAvro(t, c, codec))
	p := startOdwatch(t, "odwatch", "--brokers", c.Bootstrap(), "--topic", "avro", "--record-format", "avro-confluent",
		"--registry", reg.URL, "--events-topic", "events", "--events-registry", reg.URL,
		"--group", "avro", "--state-dir", t.TempDir(), "--window", "500", "--every", "500", "--discover-every", "500",
		"--epsilon", "0.01")
	kcatProduceFiles(t, c.Bootstrap(), "avro", "lz4", files)
	waitEvaluated(t, p, "avro", len(files), 500)
	eventsID := -1
	checkPayrollEvents(t, c, p, "avro", func(recs []kcatRecord) []kcatRecord {
		for i, r := range recs {
			if len(r.Value) < 5 || r.Value[0] != 0 {
				t.Fatalf("event %q is not in the Confluent wire format", r.Value)
			}
			eventsID = int(binary.BigEndian.Uint32(r.Value[1:5]))
			recs[i].Value = r.Value[5:]
		}
		return recs
	})
	s, err := cl.SchemaByID(ctx, eventsID)
	if err != nil {
		t.Fatalf("the events' schema id %d: %v", eventsID, err)
	}
	if s.Type != sr.TypeJSON {
		t.Errorf("the events' schema %d is %v, want a JSON Schema", eventsID, s.Type)
	}
}

// framed writes each Avro value, in the Confluent wire format with schema
// id, to a file of its own (kcat sends a file as one record: a binary
// value may hold any delimiter) and returns their paths.
func framed(t testing.TB, id uint32, values [][]byte) []string {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, len(values))
	for i, v := range values {
		paths[i] = filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(paths[i], testkit.ConfluentFrame(id, v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// kcatProduceFiles writes each file as one record to topic with kcat, in
// batches compressed with codec, in the order given.
func kcatProduceFiles(t testing.TB, bootstrap, topic, codec string, paths []string) {
	t.Helper()
	args := append([]string{"-P", "-b", bootstrap, "-t", topic, "-p", "0", "-z", codec, "-X", "linger.ms=20"}, paths...)
	if out, err := exec.Command("kcat", args...).CombinedOutput(); err != nil {
		t.Fatalf("kcat -P -t %s with %d files: %v\n%s", topic, len(paths), err, strings.TrimSpace(string(out)))
	}
}
