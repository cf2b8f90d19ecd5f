package stream

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startFaultBroker starts an in-process broker like startTestBroker and
// returns the cluster too, for faults.
func startFaultBroker(t *testing.T, topics map[string]int, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append(brokerOptions(topics), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// byTime matches a ListOffsets request by timestamp (intervalStarts'),
// not for the first or last offsets.
func byTime(r kmsg.Request) bool {
	lo, ok := r.(*kmsg.ListOffsetsRequest)
	if !ok {
		return false
	}
	for _, tp := range lo.Topics {
		for _, p := range tp.Partitions {
			if p.Timestamp >= 0 {
				return true
			}
		}
	}
	return false
}

// TestTakeOverRetriesTransientErrors: a takeover whose read-back meets a
// broker error that goes away (a topic or partition the broker does not
// know yet, a leader being elected or moved) retries it and rebuilds the
// whole window; a permanent one (authorization) ends the takeover with an
// error naming the read-back and the request. 300 records 10 ms apart on
// three partitions, all consumed, an interval of 1 s: 101 records.
func TestTakeOverRetriesTransientErrors(t *testing.T) {
	const topic = "tk"
	for _, tc := range []struct {
		name      string
		fault     kfake.Fault
		permanent bool
	}{
		{"offsets: unknown topic or partition", kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Partitions: []int32{1}, Err: kerr.UnknownTopicOrPartition}, false},
		{"offsets by time: leader not available", kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Err: kerr.LeaderNotAvailable, When: byTime}, false},
		{"fetch: not leader", kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Partitions: []int32{2}, Err: kerr.NotLeaderForPartition}, false},
		{"offsets: not authorized", kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: topic, Err: kerr.TopicAuthorizationFailed, Count: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, addr := startFaultBroker(t, map[string]int{topic: 3})
			produceTimed(t, addr, topic, 0, 300, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 10*time.Millisecond)
			m, client := newIntervalMonitor(t, addr, topic)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h := c.Fault(tc.fault)
			err := m.takeOver(ctx, client, assignment{topic: {0: 100, 1: 100, 2: 100}})
			h.Remove()
			if tc.permanent {
				if !errors.Is(err, kafka.TopicAuthorizationFailed) {
					t.Fatalf("takeOver: %v, want %v", err, kafka.TopicAuthorizationFailed)
				}
				t.Logf("takeOver: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("takeOver: %v", err)
			}
			if h.Hits() != 1 {
				t.Errorf("the fault answered %d requests, want 1", h.Hits())
			}
			if n := m.streams[0].win.Len(); n != 101 {
				t.Errorf("window after the takeover: %d records, want the 101 of the last second", n)
			}
		})
	}
}

// TestScanTopicSeesNewBroker: scanTopic (how a takeover reads the state
// topic) does not read a topic as absent because kafka-go's shared
// transport cached the metadata of an earlier broker at the same address,
// as happens when a test's broker gets the port of an earlier test's.
func TestScanTopicSeesNewBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, addr := startFaultBroker(t, map[string]int{"before": 1})
	// The shared transport's pool for addr caches the old broker's
	// topics, "before" only.
	if _, err := (&kafka.Client{Addr: kafka.TCP(addr)}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"before"}}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	_, addr2 := startFaultBroker(t, map[string]int{"after": 1}, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, addr)
	}))
	if addr2 != addr {
		t.Fatalf("new broker at %s, want %s", addr2, addr)
	}
	produceTimed(t, addr, "after", 0, 3, time.Now(), time.Millisecond)
	n := 0
	if err := scanTopic(ctx, []string{addr}, nil, "after", 0, func(int, *kafka.Record) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("scanTopic read %d records of the new broker's topic, want 3", n)
	}
}
