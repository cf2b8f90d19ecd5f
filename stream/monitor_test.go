package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/alerts/schematest"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/deadletter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// collectSink records the events it receives.
type collectSink struct {
	mu     sync.Mutex
	events []alerts.Event
	// invalid is the first event that does not conform to the published
	// event schema (checked at the test's cleanup).
	invalid error
}

func (c *collectSink) Send(_ context.Context, events []alerts.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, events...)
	if c.invalid == nil {
		c.invalid = validateEvents(events)
	}
	return nil
}

// validateEvents checks events against the published event schema.
func validateEvents(events []alerts.Event) error {
	s, err := schematest.Compile([]byte(alerts.EventSchema()))
	if err != nil {
		return err
	}
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if err := s.Validate(b); err != nil {
			return fmt.Errorf("event %s %s does not conform to the event schema: %w", e.Type, e.DependencyText, err)
		}
	}
	return nil
}

func (c *collectSink) Close() error { return nil }

func (c *collectSink) snapshot() []alerts.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]alerts.Event(nil), c.events...)
}

// running is a monitor running on its own goroutine.
type running struct {
	m    *Monitor
	reg  *prometheus.Registry
	sink *collectSink
	stop func() error
}

// startMonitor starts a monitor; the test's cleanup stops it.
func startMonitor(t testing.TB, cfg Config) *running {
	t.Helper()
	return startMonitorWith(t, cfg, nil)
}

// startMonitorWith is startMonitor with prepare, when not nil, called on
// the monitor before it runs (test hooks).
func startMonitorWith(t testing.TB, cfg Config, prepare func(*Monitor)) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	sink := &collectSink{}
	m, err := NewMonitor(cfg, Options{Logger: testkit.Logger(t), Registerer: reg, Sinks: []alerts.Sink{sink}})
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	if prepare != nil {
		prepare(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				runErr = errors.New("monitor did not stop within 30 s")
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if sink.invalid != nil {
			t.Error(sink.invalid)
		}
	})
	return &running{m: m, reg: reg, sink: sink, stop: stop}
}

// offlineMonitor returns a monitor of one stream that is not run (no
// broker behind it), for tests of the store-facing steps; it is closed at
// cleanup.
func offlineMonitor(t testing.TB, sc StreamConfig) *Monitor {
	t.Helper()
	return offlineMonitorWith(t, sc, Options{})
}

// offlineMonitorWith is offlineMonitor with opts (a test logger when
// opts has none).
func offlineMonitorWith(t testing.TB, sc StreamConfig, opts Options) *Monitor {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testkit.Logger(t)
	}
	m, err := NewMonitor(Config{Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(), Streams: []StreamConfig{sc}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// startTestBroker starts an in-process broker stopped at test cleanup.
func startTestBroker(t testing.TB, topics map[string]int) string {
	t.Helper()
	addr, stop, err := demo.StartBroker(context.Background(), topics)
	if err != nil {
		t.Fatalf("StartBroker: %v", err)
	}
	t.Cleanup(stop)
	return addr
}

// testTransport returns a kafka-go transport of the test's own, closed at
// cleanup. A writer or client without one shares kafka.DefaultTransport,
// whose connection pools and cached metadata are kept per broker address
// for the life of the process: a test broker that gets the port of an
// earlier test's broker is served that broker's metadata (up to its 6 s
// refresh), and a writer that does not auto-create topics fails with
// Unknown Topic Or Partition.
func testTransport(t testing.TB) *kafka.Transport {
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// readAt reads the record at topic/partition/offset.
func readAt(t testing.TB, addr, topic string, partition int, offset int64) kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, partition)
	if err != nil {
		t.Fatalf("dial leader: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Seek(offset, kafka.SeekAbsolute); err != nil {
		t.Fatalf("seek: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	msg, err := conn.ReadMessage(64 << 20)
	if err != nil {
		t.Fatalf("read %s/%d@%d: %v", topic, partition, offset, err)
	}
	return msg
}

// readTopic reads every message of a topic (all partitions) up to the high
// watermarks at the time of the call.
func readTopic(t testing.TB, addr, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		t.Fatalf("partitions of %s: %v", topic, err)
	}
	var out []kafka.Message
	for _, p := range parts {
		c, err := kafka.DialLeader(ctx, "tcp", addr, topic, p.ID)
		if err != nil {
			t.Fatalf("dial leader: %v", err)
		}
		first, last, err := c.ReadOffsets()
		if err != nil {
			t.Fatalf("offsets: %v", err)
		}
		if last > first {
			if _, err := c.Seek(first, kafka.SeekAbsolute); err != nil {
				t.Fatalf("seek: %v", err)
			}
			_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
			for off := first; off < last; off++ {
				msg, err := c.ReadMessage(64 << 20)
				if err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					t.Fatalf("read %s/%d: %v", topic, p.ID, err)
				}
				out = append(out, msg)
				off = msg.Offset
			}
		}
		c.Close()
	}
	return out
}

// configValidateBase is the valid configuration TestConfigValidate's
// cases change.
func configValidateBase() Config {
	return Config{Brokers: []string{"b:9092"}, StateDir: "x", Streams: []StreamConfig{{Topic: "t", Window: 100, Epsilon: 0.01}}}
}

// configValidateTests are TestConfigValidate's cases: a change of
// configValidateBase, and the error it must give or a check of the
// validated configuration.
var configValidateTests = []struct {
	name    string
	mutate  func(*Config)
	wantErr string
	check   func(*testing.T, Config)
}{
	{name: "defaults", check: func(t *testing.T, c Config) {
		s := c.Streams[0]
		if s.Every != 100 || s.Name != "t" || s.K != 1 || s.Sample != DefaultSample || s.Format != "json" {
			t.Errorf("defaults not filled: %+v", s)
		}
		if c.Group != defaultGroup || c.MaxDependencyMetrics != defaultMaxDependencyMetrics {
			t.Errorf("config defaults not filled: %+v", c)
		}
	}},
	{name: "group timing defaults", check: func(t *testing.T, c Config) {
		if c.SessionTimeout != DefaultSessionTimeout || c.HeartbeatInterval != DefaultHeartbeatInterval || c.RebalanceTimeout != DefaultRebalanceTimeout {
			t.Errorf("group timings not defaulted: %v %v %v", c.SessionTimeout, c.HeartbeatInterval, c.RebalanceTimeout)
		}
	}},
	{name: "session timeout", mutate: func(c *Config) { c.SessionTimeout = -time.Second }, wantErr: "session-timeout: must be > 0"},
	{name: "heartbeat interval", mutate: func(c *Config) { c.HeartbeatInterval = time.Nanosecond }, wantErr: "heartbeat-interval: must be at least 1ms"},
	{name: "heartbeat not below session", mutate: func(c *Config) { c.SessionTimeout, c.HeartbeatInterval = 3*time.Second, 3*time.Second }, wantErr: "heartbeat-interval: must be below session-timeout"},
	{name: "rebalance timeout", mutate: func(c *Config) { c.RebalanceTimeout = -1 }, wantErr: "rebalance-timeout:"},
	{name: "window", mutate: func(c *Config) { c.Streams[0].Window = 0 }, wantErr: "streams[0].window: must be > 0"},
	{name: "brokers", mutate: func(c *Config) { c.Brokers = nil }, wantErr: "brokers:"},
	{name: "state dir", mutate: func(c *Config) { c.StateDir = "" }, wantErr: "state-dir:"},
	{name: "topic", mutate: func(c *Config) { c.Streams[0].Topic = "" }, wantErr: "streams[0].topic:"},
	{name: "format", mutate: func(c *Config) { c.Streams[0].Format = "xml" }, wantErr: "streams[0].format:"},
	{name: "avro schema", mutate: func(c *Config) { c.Streams[0].Format = "avro" }, wantErr: "streams[0].schema:"},
	{name: "avro schema file", mutate: func(c *Config) {
		c.Streams[0].Format, c.Streams[0].SchemaFile = "avro", "/nonexistent/schema.avsc"
	}, wantErr: "streams[0].schema:"},
	{name: "registry", mutate: func(c *Config) { c.Streams[0].Format = "avro-confluent" }, wantErr: "streams[0].registry:"},
	{name: "epsilon", mutate: func(c *Config) { c.Streams[0].Epsilon = 1.5 }, wantErr: "streams[0].epsilon:"},
	{name: "epsilon NaN", mutate: func(c *Config) { c.Streams[0].Epsilon = math.NaN() }, wantErr: "streams[0].epsilon:"},
	{name: "margin NaN", mutate: func(c *Config) { c.Streams[0].Margin = math.NaN() }, wantErr: "streams[0].margin:"},
	{name: "pinned", mutate: func(c *Config) { c.Streams[0].Pinned = []string{"nonsense ~"} }, wantErr: "streams[0].pinned[0]:"},
	{name: "pinned ok", mutate: func(c *Config) { c.Streams[0].Pinned = []string{"{}: salary ~ tax (asc)"} }, check: func(t *testing.T, c Config) {
		if len(c.Streams[0].pinned) != 1 || c.Streams[0].pinned[0].Left != "salary" {
			t.Errorf("pinned not parsed: %+v", c.Streams[0].pinned)
		}
	}},
	{name: "min score", mutate: func(c *Config) { c.Streams[0].MinScore = 1.5 }, wantErr: "streams[0].min-score: must be in [0, 1]"},
	{name: "min score negative", mutate: func(c *Config) { c.Streams[0].MinScore = -0.1 }, wantErr: "streams[0].min-score:"},
	{name: "events registry without events topic", mutate: func(c *Config) { c.EventsRegistry = "http://sr:8081" }, wantErr: "events-registry: needs events-topic"},
	{name: "discover-every with interval", mutate: func(c *Config) {
		c.Streams[0].Every, c.Streams[0].Interval, c.Streams[0].DiscoverEvery = 0, time.Second, 200
	}, wantErr: "streams[0].discover-every: needs a count window"},
	{name: "discover-every with an ordinal list", mutate: func(c *Config) {
		c.Streams[0].Every, c.Streams[0].DiscoverEvery = 50, 100
		c.Streams[0].Typing.Ordinal = map[string][]string{"size": {"S", "M", "L"}}
	}, wantErr: "streams[0].discover-every: the incremental checks order an ordinal column by bytes only"},
	{name: "discover-every with an ordinal by bytes", mutate: func(c *Config) {
		c.Streams[0].Every, c.Streams[0].DiscoverEvery = 50, 100
		c.Streams[0].Typing.Ordinal = map[string][]string{"size": nil}
	}},
	{name: "discover-every default: the window, rounded up to a multiple of every", mutate: func(c *Config) {
		c.Streams[0].Window, c.Streams[0].Every = 100, 30
	}, check: wantDiscoverEvery(120)},
	{name: "discover-every default of a tumbling window", mutate: func(c *Config) {
		c.Streams[0].Window, c.Streams[0].Every = 100, 0
	}, check: wantDiscoverEvery(100)},
	{name: "discover-every default with interval", mutate: func(c *Config) {
		c.Streams[0].Window, c.Streams[0].Every, c.Streams[0].Interval = 100, 0, time.Second
	}, check: wantDiscoverEvery(100)},
	{name: "discover-every default with an ordinal list", mutate: func(c *Config) {
		c.Streams[0].Window, c.Streams[0].Every = 100, 50
		c.Streams[0].Typing.Ordinal = map[string][]string{"size": {"S", "M", "L"}}
	}, check: wantDiscoverEvery(50)},
	{name: "discover-every = every with an ordinal list", mutate: func(c *Config) {
		c.Streams[0].Window, c.Streams[0].Every, c.Streams[0].DiscoverEvery = 100, 50, 50
		c.Streams[0].Typing.Ordinal = map[string][]string{"size": {"S", "M", "L"}}
	}, check: wantDiscoverEvery(50)},
	{name: "min score ok", mutate: func(c *Config) { c.Streams[0].MinScore = 0.05 }},
	{name: "duplicate name", mutate: func(c *Config) { c.Streams = append(c.Streams, c.Streams[0]) }, wantErr: "streams[1].name: duplicate"},
}

func TestConfigValidate(t *testing.T) {
	tests := configValidateTests
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := configValidateBase()
			if tt.mutate != nil {
				tt.mutate(&c)
			}
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if tt.check != nil {
					tt.check(t, c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// wantDiscoverEvery checks a validated stream's discover-every and, above
// every, that it has two cadences.
func wantDiscoverEvery(d int) func(t *testing.T, c Config) {
	return func(t *testing.T, c Config) {
		t.Helper()
		s := c.Streams[0]
		if s.DiscoverEvery != d {
			t.Errorf("discover-every %d, want %d", s.DiscoverEvery, d)
		}
		if two := s.Interval == 0 && d > s.Every; s.twoCadence() != two {
			t.Errorf("two cadences %v, want %v", s.twoCadence(), two)
		}
	}
}

// metricValue sums the samples of metric name in reg whose labels include
// want (counter, gauge, or histogram sample count).
func metricValue(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

// histogramStats returns count, sum of a histogram in reg.
func histogramStats(t testing.TB, reg prometheus.Gatherer, name string) (count uint64, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				count += m.GetHistogram().GetSampleCount()
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return count, sum
}

// seriesCount counts the series of metric name in reg whose labels include
// want.
func seriesCount(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metric
				}
			}
			n++
		}
	}
	return n
}

// TestTimeWindowAndHealth runs a time-window stream (interval) and checks
// that evaluations happen on the clock, that old records leave the window,
// and that /healthz, /readyz and /metrics answer.
func TestTimeWindowAndHealth(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"timed": 1})
	reg := prometheus.NewRegistry()
	m, err := NewMonitor(Config{
		Brokers: []string{addr}, Group: "timed", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		MaxDependencyMetrics: 3,
		Streams:              []StreamConfig{{Topic: "timed", Window: 100000, Interval: 300 * time.Millisecond, Epsilon: 0.01}},
	}, Options{Logger: testkit.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(HealthHandler(m, reg))
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before Run: %d, want 503", code)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	testkit.Eventually(t, 30*time.Second, "ready", m.Ready)
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after join: %d, want 200", code)
	}
	// 1.2 s of records at 1000/s: a 300 ms window holds about 300.
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "timed", Rate: 1000, Count: 1200, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	stream := map[string]string{"stream": "timed"}
	testkit.Eventually(t, 20*time.Second, "all consumed and two evaluations", func() bool {
		return metricValue(t, reg, "odwatch_records_consumed_total", stream) == 1200 &&
			metricValue(t, reg, "odwatch_evaluations_total", map[string]string{"stream": "timed", "result": "ok"}) >= 2
	})
	if n := metricValue(t, reg, "odwatch_window_records", stream); n <= 0 || n >= 1000 {
		t.Errorf("time window holds %v records, want the last ~300 ms (about 300)", n)
	}
	tracked := metricValue(t, reg, "odwatch_dependencies", map[string]string{"stream": "timed", "state": "holding"})
	if n := seriesCount(t, reg, "odwatch_dependency_error", stream); n != 3 || tracked <= 3 {
		t.Errorf("%d odwatch_dependency_error series for %v tracked dependencies, want the cap of 3", n, tracked)
	}
	_, body := get("/metrics")
	for _, name := range []string{"odwatch_records_consumed_total", "odwatch_window_records", "odwatch_epsilon", "odwatch_evaluation_duration_seconds", "odwatch_pebble_disk_usage_bytes"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after Run returned: %d, want 503", code)
	}
}

// TestScaleOutOneOwner runs two monitors in one consumer group on a topic
// of three partitions: the balancer gives the whole topic to one member
// (the older), so a single window sees the whole stream.
func TestScaleOutOneOwner(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"multi": 3})
	cfg := func() Config {
		return Config{
			Brokers: []string{addr}, Group: "scale", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
			Streams: []StreamConfig{{Topic: "multi", Window: 1000, Epsilon: 0.01}},
		}
	}
	first := startMonitor(t, cfg())
	testkit.Eventually(t, 30*time.Second, "first member ready", first.m.Ready)
	second := startMonitor(t, cfg())
	testkit.Eventually(t, 30*time.Second, "second member joined", second.m.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 3000
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "multi", Count: n, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	stream := map[string]string{"stream": "multi"}
	consumed := func(r *running) float64 { return metricValue(t, r.reg, "odwatch_records_consumed_total", stream) }
	testkit.Eventually(t, 30*time.Second, "all records consumed", func() bool { return consumed(first)+consumed(second) >= n })
	if a, b := consumed(first), consumed(second); a != n || b != 0 {
		t.Errorf("records consumed by the members: %v and %v, want all %d by the first", a, b, n)
	}
	if got := metricValue(t, first.reg, "odwatch_window_records", stream); got != 1000 {
		t.Errorf("window of the owner holds %v records, want 1000", got)
	}
}

// TestBackfillOnTakeover starts a monitor with an empty state dir on a
// group that already consumed the topic (another instance's, or a lost
// state dir): it reads the window back from Kafka instead of waiting for
// Window new records.
func TestBackfillOnTakeover(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"take": 1})
	cfg := func() Config {
		return Config{
			Brokers: []string{addr}, Group: "take", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
			Streams: []StreamConfig{{Topic: "take", Window: 1000, Epsilon: 0.01}},
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "take", Count: 3000, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	old := startMonitor(t, cfg())
	testkit.Eventually(t, 30*time.Second, "first instance consumed the topic", func() bool { return testkit.Committed(t, addr, "take", "take") == 3000 })
	if err := old.stop(); err != nil {
		t.Fatal(err)
	}

	c := cfg()
	second := startMonitor(t, c)
	testkit.Eventually(t, 30*time.Second, "second instance ready", second.m.Ready)
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "take", Count: 10, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "new records consumed", func() bool { return testkit.Committed(t, addr, "take", "take") == 3010 })
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	keys, next, seq := windowKeys(t, c.StateDir, "take", 1000)
	if len(keys) != 1000 || next[0] != 3010 || seq != 3010 {
		t.Fatalf("window after takeover: %d records (%s), next %v, seq %d; want the 1000 records 2010..3009, seq 3010 (the records since the first offset, as one member counts them)", len(keys), first(keys), next, seq)
	}
	for _, k := range []string{"0/2010/", "0/3009/"} {
		if !slices.ContainsFunc(keys, func(s string) bool { return strings.HasPrefix(s, k) }) {
			t.Errorf("window lacks %s", k)
		}
	}
}

// testHooks returns m's test hooks, made on first use: call it before the
// goroutines that read them start.
func (m *Monitor) testHooks() *hooks {
	if m.hooks == nil {
		m.hooks = &hooks{}
	}
	return m.hooks
}

// headerValue is the value of a Kafka header in the tests' messages.
var headerValue = deadletter.Header
