package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/takeover"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHelperMember is a monitor process that a test kills: it runs the
// Config in ODWATCH_MEMBER_CONFIG (JSON), with the Kafka client id in
// ODWATCH_MEMBER_CLIENT_ID when set, and only runs when re-executed.
func TestHelperMember(t *testing.T) {
	raw := os.Getenv("ODWATCH_MEMBER_CONFIG")
	if raw == "" {
		t.Skip("helper process, re-executed by the failover tests")
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	if id := os.Getenv("ODWATCH_MEMBER_CLIENT_ID"); id != "" {
		d := *kafka.DefaultDialer
		d.ClientID = id
		cfg.Dialer = &d
	}
	m, err := NewMonitor(cfg, Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	// The parent kills the process; the timeout only bounds an orphan.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// startMember runs cfg in a child process; the returned func kills it
// with SIGKILL (no leave-group, no commit).
func startMember(t *testing.T, cfg Config) (kill func()) {
	t.Helper()
	return startMemberAs(t, cfg, "")
}

// startMemberAs is startMember with the child's Kafka client id (the
// broker shows it as the member's ClientID); "" keeps kafka-go's default.
func startMemberAs(t *testing.T, cfg Config, clientID string) (kill func()) {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return startChild(t, "TestHelperMember", "ODWATCH_MEMBER_CONFIG="+string(raw), "ODWATCH_MEMBER_CLIENT_ID="+clientID)
}

func eventsOf(r *running, typ alerts.EventType) []alerts.Event {
	var out []alerts.Event
	for _, e := range r.sink.snapshot() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestFailoverAfterKill kills (SIGKILL: no leave-group) the member owning a
// topic while dirty records keep coming, on the default group timings: the
// survivor takes the topic over, with the window rebuilt whole and the
// tracker from the state topic, and its first violated event comes within
// 10 s of the kill (without the race detector; the figure is logged). The
// data stays 25% dirty, so a restored event would be false: there is none.
func TestFailoverAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped in -short")
	}
	addr := startTestBroker(t, map[string]int{"fo": 3, "fo-state": 1})
	cfg := func() Config {
		return Config{
			Brokers: []string{addr}, Group: "fo", StateDir: t.TempDir(), StateTopic: "fo-state",
			Streams: []StreamConfig{{Topic: "fo", Window: 1000, Every: 500, Epsilon: 0.01}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kill := startMember(t, cfg())
	clean := produceUntilTracked(ctx, t, addr, salaryTax)
	survivor := startMonitor(t, cfg())
	testkit.Eventually(t, 30*time.Second, "the survivor joined", survivor.m.Ready)
	if got := survivor.m.balancer.Topics(); len(got) != 0 {
		t.Fatalf("the survivor took %v from the running owner", got)
	}
	// Dirty records, some before the kill (a backlog the owner is
	// consuming), most after.
	produced := make(chan error, 1)
	go func() {
		produced <- demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "fo", Count: 1500, Rate: 1000, ErrorRate: 0.25, Seed: 4})
	}()
	time.Sleep(200 * time.Millisecond) // into the backlog: where the kill lands is the point of the test, not a synchronisation
	killed := time.Now()
	kill()
	var took time.Duration
	testkit.Eventually(t, 30*time.Second, "the survivor's first violated event", func() bool {
		if len(eventsOf(survivor, alerts.EventViolated)) == 0 {
			return false
		}
		took = time.Since(killed)
		return true
	})
	t.Logf("failover: first violated event %v after the kill (session timeout %v, heartbeat %v)", took.Round(10*time.Millisecond), DefaultSessionTimeout, DefaultHeartbeatInterval)
	// Past the session timeout and the heartbeat that finds it expired,
	// the 10 s leave the survivor about 3 s to take the stream over (the
	// state topic's tracker, the window rebuilt whole) and check; under
	// the race detector that work alone takes about as long on a loaded
	// machine, so the bound holds only without it.
	if took > 10*time.Second && !raceEnabled {
		t.Errorf("first violated event %v after the kill, want within 10 s", took)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "the survivor evaluated every record", func() bool {
		return survivor.m.streams[0].evaluated.Load() == uint64(clean+1500)
	})
	if n := metricValue(t, survivor.reg, "odwatch_window_records", map[string]string{"stream": "fo"}); n != 1000 {
		t.Errorf("survivor's window holds %v records, want 1000", n)
	}
	if r := eventsOf(survivor, alerts.EventRestored); len(r) > 0 {
		t.Errorf("%d restored events on 25%% dirty data, e.g. %s at window end %d", len(r), r[0].Dependency, r[0].Window.EndSeq)
	}
	for _, d := range eventsOf(survivor, alerts.EventDiscovered) {
		if d.Dependency.String() == salaryTax {
			t.Errorf("survivor discovered %s again despite the state topic", d.Dependency)
		}
	}
}

// salaryTax is a rule of clean payroll records.
const salaryTax = "{}: salary ~ tax (asc)"

// produceUntilTracked produces clean payroll records to topic fo, 2000 and
// then 500 at a time, until the first member (Window 1000, Every 500) has
// evaluated all of them and published to fo-state a tracker that tracks
// dep; it returns how many it produced. The discovery of the first full
// window is merged into the check at 1999 only when it finished before
// that check: when the records come in a burst and the checks run back to
// back (the race detector, a loaded machine), the check gate holds it, and
// it is merged into the first check after it finished, which needs more
// records.
func produceUntilTracked(ctx context.Context, t *testing.T, addr, dep string) int {
	t.Helper()
	produced := 0
	for n := 2000; ; n = 500 {
		if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "fo", Count: n, Seed: int64(3 + produced)}); err != nil {
			t.Fatal(err)
		}
		produced += n
		var rec *takeover.StateRecord
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("the first member evaluated the %d clean records", produced), func() bool {
			r, err := takeover.ReadStateRecord(ctx, []string{addr}, nil, "fo-state", "fo")
			if err != nil || r == nil || r.WindowEndSeq != uint64(produced-1) {
				return false
			}
			rec = r
			return true
		})
		tr := alerts.NewTracker(alerts.Config{})
		if err := tr.UnmarshalJSON(rec.Tracker); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(tr.Tracked(), func(d discovery.Dependency) bool { return d.String() == dep }) {
			return produced
		}
		t.Logf("the state at window end %d tracks no %s yet (the discovery merges later)", rec.WindowEndSeq, dep)
	}
}

// TestCleanStopLeavesGroup stops a member cleanly (it commits and leaves the
// group) and starts it again on the same state dir: the restart consumes
// within 3 s, where a member that did not leave would hold its topics for a
// session timeout.
func TestCleanStopLeavesGroup(t *testing.T) {
	addr := startTestBroker(t, map[string]int{"leave": 2})
	c := Config{
		Brokers: []string{addr}, Group: "leave", StateDir: t.TempDir(), SessionTimeout: 20 * time.Second,
		Streams: []StreamConfig{{Topic: "leave", Window: 100, Epsilon: 0.01}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startMonitor(t, c)
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "leave", Count: 200, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "consumed", func() bool { return r.m.streams[0].evaluated.Load() == 200 })
	stopping := time.Now()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("clean stop took %v", time.Since(stopping).Round(time.Millisecond))
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "leave", Count: 100, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	restart := time.Now()
	r2 := startMonitor(t, c)
	testkit.Eventually(t, 30*time.Second, "the restart consumed", func() bool { return r2.m.streams[0].evaluated.Load() == 300 })
	took := time.Since(restart)
	t.Logf("restart consumed the new records %v after it started", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("restart consumed after %v, want within 3 s (a session timeout of %v means the stop did not leave the group)", took, c.SessionTimeout)
	}
}

// consumerKeys are the requests of a consumer (and none of a producer's).
var consumerKeys = []int16{
	kmsg.Fetch.Int16(), kmsg.ListOffsets.Int16(), kmsg.OffsetCommit.Int16(), kmsg.OffsetFetch.Int16(),
	kmsg.FindCoordinator.Int16(), kmsg.JoinGroup.Int16(), kmsg.Heartbeat.Int16(), kmsg.LeaveGroup.Int16(), kmsg.SyncGroup.Int16(),
}

// TestBrokerOutage cuts the consumer off the broker (every consumer request
// closes its connection, as a broker that went away does) while records keep
// coming, then lets it back: the monitor stays up, /readyz is 503 during the
// outage and 200 after, the outage is counted, and every record is evaluated
// with the window of a run without the outage.
func TestBrokerOutage(t *testing.T) {
	t.Parallel()
	t.Run("connections dropped", func(t *testing.T) { t.Parallel(); testBrokerOutage(t, false) })
	t.Run("broker hung", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("waits for request timeouts; skipped in -short")
		}
		testBrokerOutage(t, true)
	})
}

// testBrokerOutage: with hang, the consumer's requests are never answered
// (a broker stopped with SIGSTOP, a network partition) instead of having
// their connections closed.
func testBrokerOutage(t *testing.T, hang bool) {
	c, err := kfake.NewCluster(demo.BrokerOptions(map[string]int{"out": 2})...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	var down atomic.Bool
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if down.Load() && slices.Contains(consumerKeys, req.Key()) {
			if hang {
				return nil, nil, true
			}
			return nil, errors.New("outage"), true
		}
		return nil, nil, false
	})
	cfg := func(group string) Config {
		return Config{
			Brokers: []string{addr}, Group: group, StateDir: t.TempDir(),
			Streams: []StreamConfig{{Topic: "out", Window: 500, Epsilon: 0.01}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startMonitor(t, cfg("out"))
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "out", Count: 1000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "evaluated before the outage", func() bool { return r.m.streams[0].evaluated.Load() == 1000 })

	down.Store(true)
	testkit.Eventually(t, 30*time.Second, "not ready during the outage", func() bool { return !r.m.Ready() })
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "out", Count: 1000, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	// ODWATCH_TEST_OUTAGE lengthens the outage (e.g. 60s) for a manual run.
	outage := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("ODWATCH_TEST_OUTAGE")); err == nil {
		outage = d
	}
	testkit.Eventually(t, outage+30*time.Second, fmt.Sprintf("an outage of %v counted", outage), func() bool {
		return metricValue(t, r.reg, "odwatch_kafka_unreachable_seconds_total", nil) >= outage.Seconds()
	})
	if r.m.Ready() {
		t.Error("ready during the outage")
	}
	down.Store(false)
	back := time.Now()
	testkit.Eventually(t, 30*time.Second, "ready after the outage", r.m.Ready)
	t.Logf("outage %v: ready again %v after the broker came back; %d records produced during it", outage, time.Since(back).Round(time.Millisecond), 1000)
	testkit.Eventually(t, 30*time.Second, "the outage's records evaluated", func() bool { return r.m.streams[0].evaluated.Load() == 2000 })
	t.Logf("the records produced during the outage evaluated %v after the broker came back", time.Since(back).Round(time.Millisecond))
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "out", Count: 1000, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "every record evaluated", func() bool { return r.m.streams[0].evaluated.Load() == 3000 })
	if got := metricValue(t, r.reg, "odwatch_records_consumed_total", map[string]string{"stream": "out"}); got != 3000 {
		t.Errorf("consumed %v records, want 3000 (none lost or counted twice)", got)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	ref := startMonitor(t, cfg("out-ref"))
	testkit.Eventually(t, 30*time.Second, "reference evaluated", func() bool { return ref.m.streams[0].evaluated.Load() == 3000 })
	if err := ref.stop(); err != nil {
		t.Fatal(err)
	}
	got, gotNext, gotSeq := windowKeys(t, r.m.cfg.StateDir, "out", 500)
	want, wantNext, wantSeq := windowKeys(t, ref.m.cfg.StateDir, "out", 500)
	if !slices.Equal(got, want) || gotSeq != wantSeq || !maps.Equal(gotNext, wantNext) {
		t.Errorf("window after the outage %d records (%s) next %v seq %d; without it %d (%s) next %v seq %d",
			len(got), first(got), gotNext, gotSeq, len(want), first(want), wantNext, wantSeq)
	}
}

// TestSessionTimeoutRefused: a session timeout the broker refuses (below its
// group.min.session.timeout.ms, 1 s for the test broker) ends Run with an
// error naming the setting, instead of retrying for ever.
func TestSessionTimeoutRefused(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"st": 1})
	m, err := NewMonitor(Config{
		Brokers: []string{addr}, Group: "st", StateDir: t.TempDir(),
		SessionTimeout: 500 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
		Streams: []StreamConfig{{Topic: "st", Window: 10, Epsilon: 0.01}},
	}, Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "session-timeout 500ms") {
		t.Fatalf("Run = %v, want an error naming session-timeout", err)
	}
}

// TestStoreAheadOfGroupCommits: a member restarting with a store ahead of
// the group's committed offset (killed between its store commit and its
// offset commit) commits the stored position although no record comes.
func TestStoreAheadOfGroupCommits(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"ahead": 1})
	c := Config{
		Brokers: []string{addr}, Group: "ahead", StateDir: t.TempDir(),
		Streams: []StreamConfig{{Topic: "ahead", Window: 100, Epsilon: 0.01}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "ahead", Count: 300, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	r := startMonitor(t, c)
	testkit.Eventually(t, 30*time.Second, "consumed", func() bool { return testkit.Committed(t, addr, "ahead", "ahead") == 300 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// Set the group back, as a crash before the offset commit leaves it.
	cl := &kafka.Client{Addr: kafka.TCP(addr)}
	res, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "ahead", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"ahead": {{Partition: 0, Offset: 200}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				t.Fatal(p.Error)
			}
		}
	}
	if got := testkit.Committed(t, addr, "ahead", "ahead"); got != 200 {
		t.Fatalf("committed %d after setting it back, want 200", got)
	}
	startMonitor(t, c)
	testkit.Eventually(t, 30*time.Second, "the stored position committed", func() bool { return testkit.Committed(t, addr, "ahead", "ahead") == 300 })
}
