package deploy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/stream"
)

// scrape is what one GET /metrics returned: metric family name → type, and
// sample name → label names seen on it.
type scrape struct {
	types  map[string]string
	labels map[string]map[string]bool
}

var labelName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)

// parseExposition reads the Prometheus text format, enough to know which
// families exist and which labels their samples carry.
func parseExposition(r io.Reader) (scrape, error) {
	s := scrape{types: map[string]string{}, labels: map[string]map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				s.types[f[0]] = f[1]
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		set := s.labels[name]
		if set == nil {
			set = map[string]bool{}
			s.labels[name] = set
		}
		if i, j := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}'); i >= 0 && j > i {
			for _, m := range labelName.FindAllStringSubmatch(line[i+1:j], -1) {
				set[m[1]] = true
			}
		}
	}
	return s, sc.Err()
}

// family returns the family a used name belongs to: itself, or the
// histogram/summary whose _bucket/_sum/_count series it is.
func (s scrape) family(name string) (string, bool) {
	if _, ok := s.types[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if t := s.types[base]; t == "histogram" || (t == "summary" && suffix != "_bucket") {
				return base, true
			}
		}
	}
	return "", false
}

// missing returns the used names that s does not have samples of, and the
// names whose samples lack a stream label (all but the store-wide
// odwatch_pebble_* and odwatch_state_* metrics must carry one).
func (s scrape) missing(used map[string]string) (absent, noStream []string) {
	for _, name := range sortedKeys(used) {
		if _, ok := s.family(name); !ok {
			absent = append(absent, fmt.Sprintf("%s (used in %s)", name, used[name]))
			continue
		}
		if _, ok := s.labels[name]; !ok {
			absent = append(absent, fmt.Sprintf("%s (used in %s; family registered, no sample yet)", name, used[name]))
			continue
		}
		if strings.HasPrefix(name, "odwatch_pebble_") || strings.HasPrefix(name, "odwatch_state_") {
			continue
		}
		if !s.labels[name]["stream"] {
			noStream = append(noStream, name)
		}
	}
	return absent, noStream
}

// TestMetricNamesRegistered runs a real monitor on the in-process broker,
// feeds it the payroll stream (clean, then with data-entry errors) and one
// malformed record, scrapes its /metrics until every odwatch_* name the alert
// rules and the dashboard use has samples, and fails naming the ones that
// never appear: a renamed metric cannot silently blank a panel or disarm an
// alert.
func TestMetricNamesRegistered(t *testing.T) {
	t.Parallel()
	used := usedMetricNames(t)
	if testing.Short() {
		t.Skip("starts a broker and a monitor; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const topic = "payroll"
	addr, stopBroker, err := demo.StartBroker(ctx, map[string]int{topic: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stopBroker()

	reg := prometheus.NewRegistry()
	mon, err := stream.NewMonitor(stream.Config{
		Brokers:  []string{addr},
		Group:    "deploy-metrics-test",
		StateDir: t.TempDir(),
		DLQTopic: "payroll-dlq",
		Streams: []stream.StreamConfig{{
			Name: "payroll", Topic: topic, Format: "json",
			Window: 400, Every: 200, Epsilon: 0.02,
		}},
	}, stream.Options{Logger: slog.New(slog.DiscardHandler), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopMonitor := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mon.Run(runCtx) }()
	defer func() {
		stopMonitor()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("monitor Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("monitor did not stop within 30 s of cancel")
		}
	}()

	srv := httptest.NewServer(stream.HealthHandler(mon, reg))
	defer srv.Close()

	// Clean records first, so dependencies are discovered, then 10% faulty
	// ones, so some are violated; and one record that is not JSON. At a
	// rate, not at once: a monitor catching up a backlog runs its checks
	// first and discovery after (the check gate), so a burst this short
	// would end before any discovery is merged.
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{
		Brokers: []string{addr}, Topic: topic, Count: 1200, Rate: 2000, CleanRecords: 600, ErrorRate: 0.1, Seed: 7,
	}); err != nil {
		t.Fatalf("produce payroll: %v", err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, BatchTimeout: 10 * time.Millisecond}
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"salary": 1000, "tax":`)}); err != nil {
		t.Fatalf("produce malformed record: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	var (
		last             scrape
		absent, noStream []string
	)
	deadline := time.Now().Add(60 * time.Second)
	for {
		last, err = get(ctx, srv.URL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		absent, noStream = last.missing(used)
		if len(absent) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("scraped %d odwatch families; used names: %v", len(last.types), sortedKeys(used))
	if len(absent) > 0 {
		t.Errorf("metric names used by the rules/dashboard that the running monitor does not expose:\n  %s\nexposed: %v",
			strings.Join(absent, "\n  "), sortedKeys(last.types))
	}
	if len(noStream) > 0 {
		t.Errorf("metrics used with a stream selector but exposed without a stream label: %v", noStream)
	}
	// The rules and the dashboard join and group these on their labels.
	for name, label := range map[string]string{
		"odwatch_dependency_error":       "dependency",
		"odwatch_dependency_violated":    "dependency",
		"odwatch_records_rejected_total": "reason",
		"odwatch_evaluations_total":      "result",
		"odwatch_events_total":           "type",
		"odwatch_dependencies":           "state",
	} {
		if _, ok := used[name]; ok && len(last.labels[name]) > 0 && !last.labels[name][label] {
			t.Errorf("%s has no %s label: %v", name, label, sortedKeys(last.labels[name]))
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code := status(ctx, t, srv.URL+path); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, code)
		}
	}
}

func get(ctx context.Context, url string) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return scrape{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return scrape{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return scrape{}, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}

func status(ctx context.Context, t *testing.T, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestScrapeChecker: the comparison TestMetricNamesRegistered relies on
// finds renamed metrics, histogram series and missing stream labels.
func TestScrapeChecker(t *testing.T) {
	f, err := os.Open("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := parseExposition(f)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                 string
		used                 []string
		wantAbsent, wantNoSt []string
	}{
		{"present", []string{"odwatch_window_records", "odwatch_dependency_error", "odwatch_dependency_violated", "odwatch_pebble_disk_usage_bytes"}, nil, nil},
		{"histogram series", []string{"odwatch_evaluation_duration_seconds_bucket", "odwatch_evaluation_duration_seconds_count"}, nil, nil},
		{"renamed", []string{"odwatch_window_size", "odwatch_window_records_bucket"}, []string{"odwatch_window_records_bucket", "odwatch_window_size"}, nil},
		{"no stream label", []string{"odwatch_consumer_lag"}, nil, []string{"odwatch_consumer_lag"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := map[string]string{}
			for _, n := range tc.used {
				used[n] = "test"
			}
			absent, noStream := s.missing(used)
			for i := range absent {
				absent[i], _, _ = strings.Cut(absent[i], " ")
			}
			if !slices.Equal(absent, tc.wantAbsent) || !slices.Equal(noStream, tc.wantNoSt) {
				t.Errorf("missing(%v) = %v, %v; want %v, %v", tc.used, absent, noStream, tc.wantAbsent, tc.wantNoSt)
			}
		})
	}
	for _, name := range []string{"odwatch_dependency_error", "odwatch_dependency_violated"} {
		if !s.labels[name]["dependency"] {
			t.Errorf("labels of %s = %v, want dependency among them", name, s.labels[name])
		}
	}
}
