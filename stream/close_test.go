package stream

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// TestCloseWithoutRun: Close releases what NewMonitor opened (the store's
// lock among it) when Run is never called; it is idempotent, and Run after
// it refuses to start.
func TestCloseWithoutRun(t *testing.T) {
	dir := t.TempDir()
	m, err := NewMonitor(Config{Brokers: []string{"127.0.0.1:1"}, StateDir: dir,
		Streams: []StreamConfig{{Topic: "t", Window: 10, Epsilon: 0.01}}}, Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatalf("store still locked after Close: %v", err)
	}
	_ = st.Close()
	if err := m.Run(context.Background()); err == nil {
		t.Fatal("Run after Close started")
	}
}

// kafkaPools counts kafka-go transport pools alive in the process (each
// runs a metadata goroutine until its transport closes it).
func kafkaPools() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "kafka-go.(*connPool).discover")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCloseClosesWritersTransport: the monitor's writers (state topic,
// dead letters, events) share a transport of the monitor's own, which
// Close closes: no connection pool of theirs outlives the monitor, and
// none is shared with other clients of the process through kafka-go's
// DefaultTransport.
func TestCloseClosesWritersTransport(t *testing.T) {
	addr := startTestBroker(t, map[string]int{"cw": 1, "cw-state": 1})
	before := kafkaPools()
	m, err := NewMonitor(Config{Brokers: []string{addr}, Group: "cw", StateDir: t.TempDir(), StateTopic: "cw-state",
		DLQTopic: "cw-dlq", EventsTopic: "cw-events", Streams: []StreamConfig{{Topic: "cw", Window: 10, Epsilon: 0.01}}},
		Options{Logger: testkit.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.stateWriter.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if err := m.dlq.WriteMessages(ctx, kafka.Message{Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if got := kafkaPools(); got != before+1 {
		t.Errorf("%d transport pools while the writers are open, want %d (one, the monitor's)", got, before+1)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the writers' transport pool closed", func() bool { return kafkaPools() == before })
}
