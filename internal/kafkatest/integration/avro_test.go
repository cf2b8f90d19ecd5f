package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestEndToEndAvro: the generator's payroll records, encoded as Avro with
// deploy/examples/payroll.avsc, in zstd batches, watched with --format avro
// on the real broker: every record decodes and salary ~ tax is discovered,
// then violated.
func TestEndToEndAvro(t *testing.T) {
	requireKcat(t)
	schemaFile := filepath.Join("..", "..", "..", "deploy", "examples", "payroll.avsc")
	schema, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := goavro.NewCodec(string(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	for _, topic := range []string{"src", "avro", "events"} {
		c.CreateTopic(t, topic, 1, nil)
	}
	var msgs []kafka.Message
	for _, bin := range payrollAvro(t, c, codec) {
		msgs = append(msgs, kafka.Message{Value: bin})
	}
	w := &kafka.Writer{Addr: kafka.TCP(c.Bootstrap()), Topic: "avro", RequiredAcks: kafka.RequireAll, Compression: kafka.Zstd, BatchSize: 500}
	p := startOdwatch(t, "odwatch", "--brokers", c.Bootstrap(), "--topic", "avro", "--record-format", "avro",
		"--schema", schemaFile, "--events-topic", "events",
		"--group", "avro", "--state-dir", t.TempDir(), "--window", "500", "--every", "500", "--discover-every", "500",
		"--epsilon", "0.01")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	waitEvaluated(t, p, "avro", len(msgs), 500)
	checkPayrollEvents(t, c, p, "avro", func(recs []kcatRecord) []kcatRecord { return recs })
}

// payrollTotal is the number of records payrollAvro generates.
const payrollTotal = 3000

// payrollAvro generates the payroll records (the first 1500 clean, then
// 10% violations) on c's topic src and encodes each as Avro with codec
// (deploy/examples/payroll.avsc).
func payrollAvro(t testing.TB, c *kafkatest.Cluster, codec *goavro.Codec) [][]byte {
	t.Helper()
	generate(t, c.Bootstrap(), "src", "--count", strconv.Itoa(payrollTotal), "--clean", "1500", "--error-rate", "0.1", "--rate", "0", "--seed", "7")
	var out [][]byte
	for _, r := range kcatConsume(t, c.Bootstrap(), "src") {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatal(err)
		}
		native := map[string]any{
			"position": m["position"], "experience": int32(m["experience"].(float64)),
			"salary": int64(m["salary"].(float64)), "tax_group": m["tax_group"],
			"perc": int32(m["perc"].(float64)), "tax": int64(m["tax"].(float64)), "note": nil,
		}
		bin, err := codec.BinaryFromNative(nil, native)
		if err != nil {
			t.Fatalf("avro of %s: %v", r.Value, err)
		}
		out = append(out, bin)
	}
	return out
}

// checkPayrollEvents waits until p, watching topic, evaluated every
// payrollAvro record with none rejected, then for salary ~ tax's violated
// event on c's topic events, whose records unframe turns into plain
// event JSON; salary ~ tax must be discovered and violated once each.
func checkPayrollEvents(t testing.TB, c *kafkatest.Cluster, p *proc, topic string, unframe func([]kcatRecord) []kcatRecord) {
	t.Helper()
	testkit.EventuallyEvery(t, 2*time.Minute, pollEvery, "odwatch evaluated every record", evaluatedTo(p, topic, payrollTotal-1))
	if n := p.Metric(t, "odwatch_records_rejected_total"); n != 0 {
		t.Errorf("%v records rejected, want none", n)
	}
	seen := map[string]int{}
	testkit.EventuallyEvery(t, 30*time.Second, pollEvery, "the violated event", func() bool {
		seen = map[string]int{}
		for _, e := range events(t, unframe(kcatConsume(t, c.Bootstrap(), "events"))) {
			if e.DependencyText == "{}: salary ~ tax (asc)" {
				seen[string(e.Type)]++
			}
		}
		return seen["violated"] > 0
	})
	if seen["discovered"] != 1 || seen["violated"] != 1 {
		t.Errorf("salary ~ tax events %v, want one discovered and one violated", seen)
	}
}
