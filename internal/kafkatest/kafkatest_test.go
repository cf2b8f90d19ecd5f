package kafkatest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestStartStop: a single node starts, takes a record, survives a clean
// restart with the record kept, and stops; the start and restart times are
// logged.
func TestStartStop(t *testing.T) {
	c := Start(t, Options{})
	c.CreateTopic(t, "smoke", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(c.Bootstrap()), Topic: "smoke", RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	n := c.Nodes[0]
	began := time.Now()
	n.Stop()
	stopped := time.Since(began)
	began = time.Now()
	n.Start(t)
	t.Logf("clean stop %v, restart %v", stopped.Round(10*time.Millisecond), time.Since(began).Round(10*time.Millisecond))
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Brokers(), Topic: "smoke", MaxWait: 100 * time.Millisecond})
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil || string(m.Value) != "one" {
		t.Fatalf("after the restart read %q, %v; want one", m.Value, err)
	}
}

// TestClusterID: the ids never start with '-', which the storage tool
// would parse as an option.
func TestClusterID(t *testing.T) {
	for range 1000 {
		if id := clusterID(); len(id) != 22 || id[0] == '-' || id[0] == '_' {
			t.Fatalf("cluster id %q", id)
		}
	}
}

// TestJavaRelease: the major release comes from the release file at the
// java binary's home, followed through symlinks; no file is release 0.
func TestJavaRelease(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	java := filepath.Join(home, "bin", "java")
	if err := os.WriteFile(java, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := javaRelease(java); got != 0 {
		t.Errorf("without a release file: %d, want 0", got)
	}
	if err := os.WriteFile(filepath.Join(home, "release"), []byte("IMPLEMENTOR=\"x\"\nJAVA_VERSION=\"25.0.3\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "java")
	if err := os.Symlink(java, link); err != nil {
		t.Fatal(err)
	}
	if got := javaRelease(link); got != 25 {
		t.Errorf("through a symlink: %d, want 25", got)
	}
}
