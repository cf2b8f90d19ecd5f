package integration

import (
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestLeaderKill: on a 3-node cluster (replication 3, min.insync.replicas
// 2), the leader of the watched partition is killed with SIGKILL while
// records are produced and consumed. Consumption moves to the new leader
// and every record is evaluated exactly once; the longest stall of
// consumption after the kill is logged. Most of it is the controller's
// wait for the dead broker's heartbeats (broker.session.timeout.ms, 9 s)
// before it moves the leadership; the rest is odwatch's retry backoff.
func TestLeaderKill(t *testing.T) {
	requireKcat(t)
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	c.CreateTopic(t, "ld", 1, nil)
	c.CreateTopic(t, "ld-src", 1, nil)
	p := watchTopic(t, c.Bootstrap(), "ld")
	generate(t, c.Bootstrap(), "ld", "--count", "1000", "--clean", "1000", "--rate", "0", "--seed", "1")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "the first records evaluated", evaluatedTo(p, "ld", 999))

	// kcat produces across the kill, idempotent with acks=all: a batch
	// retried on the new leader is written once.
	generate(t, c.Bootstrap(), "ld-src", "--count", "3000", "--clean", "3000", "--rate", "0", "--seed", "2")
	var lines []string
	for _, r := range kcatConsume(t, c.Bootstrap(), "ld-src") {
		lines = append(lines, string(r.Value))
	}
	leader := c.Leader(t, "ld", 0)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		kcatProduceSlowly(t, c.Bootstrap(), "ld", lines, 1000)
	}()
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "records produced across the kill reaching odwatch", func() bool {
		return p.Metric(t, "odwatch_records_consumed_total") > 1100
	})
	killed := time.Now()
	leader.Kill()
	// The longest time the consumed count stood still after the kill,
	// until every record was consumed.
	var stall time.Duration
	last, lastAt := p.Metric(t, "odwatch_records_consumed_total"), killed
	testkit.EventuallyEvery(t, 2*time.Minute, pollEvery, "every record evaluated", func() bool {
		if n := p.Metric(t, "odwatch_records_consumed_total"); n != last {
			stall = max(stall, time.Since(lastAt))
			last, lastAt = n, time.Now()
		}
		select {
		case <-produced:
		default:
			return false
		}
		return evaluatedTo(p, "ld", 3999)()
	})
	newLeader := c.Leader(t, "ld", 0)
	t.Logf("leader node %d killed; node %d leads; consumption stalled at most %v; every record evaluated %v after the kill",
		leader.ID, newLeader.ID, stall.Round(10*time.Millisecond), time.Since(killed).Round(10*time.Millisecond))
	time.Sleep(time.Second)
	s, _ := p.Status("ld")
	if end := s.LastWindowEnd(); end != 3999 || s.Stream.WindowRecords != 500 {
		t.Errorf("last window ends at record %d with %d records, want 3999 and 500 (none lost or counted twice)", end, s.Stream.WindowRecords)
	}
}
