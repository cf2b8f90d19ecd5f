package stream

import (
	"context"
	"testing"

	"github.com/odwatch/odwatch/state"
)

// TestCloseWithoutRun: Close releases what NewMonitor opened (the store's
// lock among it) when Run is never called; it is idempotent, and Run after
// it refuses to start.
func TestCloseWithoutRun(t *testing.T) {
	dir := t.TempDir()
	m, err := NewMonitor(Config{Brokers: []string{"127.0.0.1:1"}, StateDir: dir,
		Streams: []StreamConfig{{Topic: "t", Window: 10, Epsilon: 0.01}}}, Options{Logger: testLogger(t)})
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
