package testkit

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Logger logs to the test log at warn level, or at debug level with
// ODWATCH_TEST_DEBUG=1.
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("ODWATCH_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// LateCtx is a context whose deadline has passed while its Err is not set
// yet: the moment a kafka-go request fails with an i/o timeout at the end
// of a run with a deadline.
type LateCtx struct{ context.Context }

func (LateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// SyncBuffer is a strings.Builder safe for a goroutine to write (a logger,
// a command's output) while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
