package stream

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestStopBeforeJoining: a monitor whose brokers never answered, stopped,
// says it stopped before joining the consumer group instead of claiming
// to have left it.
func TestStopBeforeJoining(t *testing.T) {
	t.Parallel()
	var log testkit.SyncBuffer
	m, err := NewMonitor(Config{Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(),
		Streams: []StreamConfig{{Topic: "t", Window: 10, Epsilon: 0.01}}},
		Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	testkit.Eventually(t, time.Minute, "the unreachable broker logged", func() bool {
		return strings.Contains(log.String(), "kafka unreachable")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its cancellation")
	}
	if strings.Contains(log.String(), "left the consumer group") || !strings.Contains(log.String(), "stopped before joining the consumer group") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestStatusAutoMargin: StatusStreams gives an automatic margin's value for
// the window's size, flagged as automatic, never AutoMargin's -1.
func TestStatusAutoMargin(t *testing.T) {
	t.Parallel()
	m, err := NewMonitor(Config{Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(),
		Streams: []StreamConfig{{Topic: "t", Window: 2000, Epsilon: 0.01, Margin: AutoMargin}}}, Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.StatusStreams()[0]
	if want := alerts.NoiseMargin(0.01, 2000); !st.MarginAuto || st.Margin != want {
		t.Errorf("margin %v (auto %v), want auto at %v", st.Margin, st.MarginAuto, want)
	}
}
