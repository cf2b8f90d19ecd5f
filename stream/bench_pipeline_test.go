package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
)

// benchResult is what the benchmark's monitor process reports.
type benchResult struct {
	Records       int     `json:"records"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	Evaluations   uint64  `json:"evaluations"`
	Skipped       float64 `json:"skipped"`
	EvalMean      float64 `json:"eval_mean_s"`
	EvalMax       float64 `json:"eval_max_s"`
	WindowRecords float64 `json:"window_records"`
	HeapMB        float64 `json:"heap_mb"`
	RSSMB         float64 `json:"rss_hwm_mb"`
}

// TestHelperBenchMonitor is the monitor process of BenchmarkPipelineIngest:
// a process of its own, so that its RSS does not include the broker and
// the producer. It consumes ODWATCH_BENCH_RECORDS records and prints a
// benchResult line.
func TestHelperBenchMonitor(t *testing.T) {
	if os.Getenv("ODWATCH_BENCH_HELPER") != "1" {
		t.Skip("helper process for BenchmarkPipelineIngest")
	}
	atoi := func(k string) int {
		n, err := strconv.Atoi(os.Getenv(k))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return n
	}
	records, window, every := atoi("ODWATCH_BENCH_RECORDS"), atoi("ODWATCH_BENCH_WINDOW"), atoi("ODWATCH_BENCH_EVERY")
	defer e2eCPUProfile(t, os.Getenv("ODWATCH_BENCH_CPUPROFILE"), "")()
	sc := StreamConfig{Topic: "bench", Window: window, Every: every, Epsilon: 0.01}
	if d := os.Getenv("ODWATCH_BENCH_DISCOVER_EVERY"); d != "" {
		sc.DiscoverEvery = atoi("ODWATCH_BENCH_DISCOVER_EVERY") // two cadences
	}
	if every == 0 {
		// No evaluation: a count window is evaluated as soon as it is
		// full, so the baseline uses a window bounded by size whose timer
		// does not fire during the run.
		sc.Interval = time.Hour
	}
	reg := prometheus.NewRegistry()
	m, err := NewMonitor(Config{
		Brokers:  []string{os.Getenv("ODWATCH_BROKER")},
		Group:    "bench",
		StateDir: os.Getenv("ODWATCH_STATE"),
		Streams:  []StreamConfig{sc},
	}, Options{Logger: testkit.Logger(t), Registerer: reg})
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stream := map[string]string{"stream": "bench"}
	consumed := func() float64 { return metricValue(t, reg, "odwatch_records_consumed_total", stream) }
	testkit.Eventually(t, time.Minute, "join", func() bool { return m.Ready() || consumed() > 0 })
	start := time.Now()
	testkit.Eventually(t, 10*time.Minute, "all records consumed", func() bool { return consumed() >= float64(records) })
	elapsed := time.Since(start).Seconds()
	// Let the evaluation of the last window (a full one) finish, so that
	// the peak RSS includes it.
	testkit.Eventually(t, 2*time.Minute, "evaluation of the last window", func() bool {
		return m.streams[0].evaluated.Load() == uint64(records) || every == 0
	})
	n, sum := histogramStats(t, reg, "odwatch_evaluation_duration_seconds")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res := benchResult{
		Records: records, Seconds: elapsed, RecordsPerSec: float64(records) / elapsed,
		Evaluations:   n,
		Skipped:       metricValue(t, reg, "odwatch_evaluations_total", map[string]string{"stream": "bench", "result": "skipped"}),
		EvalMax:       time.Duration(m.streams[0].maxEval.Load()).Seconds(),
		WindowRecords: metricValue(t, reg, "odwatch_window_records", stream),
		HeapMB:        float64(ms.HeapInuse) / (1 << 20),
		RSSMB:         vmHWM() / 1024,
	}
	if n > 0 {
		res.EvalMean = sum / float64(n)
	}
	b, _ := json.Marshal(res)
	fmt.Printf("BENCH %s\n", b)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// vmHWM is the peak resident set size of this process in KiB (Linux).
func vmHWM() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb
		}
	}
	return 0
}

// BenchmarkPipelineIngest measures sustained ingest of 6-field JSON
// (payroll) records into the Pebble-backed window with evaluations
// running, against the in-process broker. The records are produced before
// the clock starts; the monitor runs in a child process so its RSS is its
// own. Run with -benchtime=1x:
//
//	go test ./stream -run '^$' -bench BenchmarkPipelineIngest -benchtime=1x
func BenchmarkPipelineIngest(b *testing.B) {
	cases := []struct {
		name                   string
		records, window, every int
		discoverEvery          int // two cadences when above every
	}{
		{"window100k_every20k", 600_000, 100_000, 20_000, 0},
		{"window100k_noeval", 600_000, 100_000, 0, 0}, // baseline: ingest alone (every 0: no evaluation)
		{"window1M", 1_200_000, 1_000_000, 200_000, 0},
		// Checks every 1k records, discovery every 20k on its own goroutine.
		{"window100k_every1k_discover20k", 600_000, 100_000, 1_000, 20_000},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				res := runIngest(b, c.records, c.window, c.every, c.discoverEvery)
				b.ReportMetric(res.RecordsPerSec, "records/s")
				b.ReportMetric(res.EvalMean, "eval-mean-s")
				b.ReportMetric(res.EvalMax, "eval-max-s")
				b.ReportMetric(float64(res.Evaluations), "evaluations")
				b.ReportMetric(res.Skipped, "eval-skipped")
				b.ReportMetric(res.HeapMB, "heap-MB")
				b.ReportMetric(res.RSSMB, "rss-peak-MB")
				b.Logf("%+v", res)
			}
		})
	}
}

func runIngest(b *testing.B, records, window, every, discoverEvery int) benchResult {
	b.StopTimer()
	addr, stop, err := demo.StartBroker(context.Background(), map[string]int{"bench": 1})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	t0 := time.Now()
	if err := demo.ProducePayroll(context.Background(), demo.PayrollOptions{Brokers: []string{addr}, Topic: "bench", Count: records, Seed: 3}); err != nil {
		b.Fatalf("produce: %v", err)
	}
	b.Logf("produced %d records in %v", records, time.Since(t0))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBenchMonitor$", "-test.v")
	cmd.Env = append(os.Environ(), "ODWATCH_BENCH_HELPER=1", "ODWATCH_BROKER="+addr, "ODWATCH_STATE="+b.TempDir(),
		"ODWATCH_BENCH_RECORDS="+strconv.Itoa(records), "ODWATCH_BENCH_WINDOW="+strconv.Itoa(window), "ODWATCH_BENCH_EVERY="+strconv.Itoa(every))
	if discoverEvery > 0 {
		cmd.Env = append(cmd.Env, "ODWATCH_BENCH_DISCOVER_EVERY="+strconv.Itoa(discoverEvery))
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	b.StartTimer()
	err = cmd.Run()
	b.StopTimer()
	var res benchResult
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "BENCH "); ok {
			if jerr := json.Unmarshal([]byte(rest), &res); jerr != nil {
				b.Fatalf("bad result line %q: %v", line, jerr)
			}
		}
	}
	if path := os.Getenv("ODWATCH_BENCH_LOG"); path != "" {
		// The monitor process's output, for a look at the evaluation
		// timings (with ODWATCH_TEST_DEBUG=1).
		if werr := os.WriteFile(path, out.Bytes(), 0o644); werr != nil {
			b.Logf("write %s: %v", path, werr)
		}
	}
	if err != nil || res.Records == 0 {
		b.Fatalf("monitor process: %v\n%s", err, tail(out.String(), 4000))
	}
	return res
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
