package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestRunUnreachableBrokerFails: brokers that never answer end run after
// --connect-timeout with one line naming them and exit status 1, and
// nothing claims to leave a group never joined.
func TestRunUnreachableBrokerFails(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: bound, then closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var stdout, stderr testkit.SyncBuffer
	code := run([]string{"run", "--brokers", addr, "--topic", "t", "--state-dir", t.TempDir(),
		"--metrics-addr", "", "--connect-timeout", "1s", "--log-level", "warn"}, &stdout, &stderr)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "kafka at "+addr+" did not answer within --connect-timeout 1s") ||
		!strings.Contains(lines[0], "refused") {
		t.Errorf("stderr %q, want one line naming %s, the timeout and the cause", stderr.String(), addr)
	}
	if strings.Contains(stderr.String(), "left the consumer group") {
		t.Errorf("stderr claims to leave a group: %q", stderr.String())
	}
}

// TestRunMissingTopicAndStateDir: a state dir that does not exist is
// created with a log line; a topic that does not exist is logged once, by
// name, and run waits for it, then consumes it once it is created (the
// dev broker creates no topic on first use).
func TestRunMissingTopicAndStateDir(t *testing.T) {
	t.Parallel()
	addr, stopBroker, err := demo.StartDevBroker(context.Background(), "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stopBroker()
	dir := filepath.Join(t.TempDir(), "new", "state")
	stop, stderr := runFor(t, []string{"--brokers", addr, "--topic", "late-topic", "--state-dir", dir,
		"--metrics-addr", "", "--window", "10"})
	testkit.Eventually(t, time.Minute, "the missing topic logged", func() bool {
		return strings.Contains(stderr.String(), "topic does not exist") && strings.Contains(stderr.String(), "topic=late-topic")
	})
	if !strings.Contains(stderr.String(), "state-dir did not exist: created it") || !strings.Contains(stderr.String(), dir) {
		t.Errorf("no log line says the state dir was created: %s", stderr)
	}
	conn, err := kafka.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: "late-topic", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the group joined once the topic exists", func() bool {
		return strings.Contains(stderr.String(), "consumer group generation")
	})
	err, log := stop()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	if n := strings.Count(log, "topic does not exist"); n != 1 {
		t.Errorf("the missing topic logged %d times, want once:\n%s", n, log)
	}
	if !strings.Contains(log, "topic exists now") {
		t.Errorf("no log line says the topic appeared:\n%s", log)
	}
}
