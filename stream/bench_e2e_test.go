package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/benchstream"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"
)

// The end-to-end run of issue 9 (BenchmarkEndToEnd): the 20-field stream,
// its first window produced at once and the rest at e2eRate records/s
// (ODWATCH_E2E_RATE overrides it), window e2eWindow, checks every e2eEvery
// records, discovery at `odwatch run`'s default cadence (auto: paced by
// its cost, at most every window; ODWATCH_E2E_DISCOVER_EVERY=N sets a
// count instead), and a fault from record
// e2eFault on: every record's age_group is wrong, so the pinned e2eFaultDep
// breaks.
const (
	e2eRecords  = 400_000
	e2eRate     = 100_000
	e2eWindow   = 100_000
	e2eEvery    = 1_000
	e2eFault    = 300_000
	e2eFaultDep = benchstream.FaultRule
)

// e2eStream is the 20-field stream of discovery's BenchmarkCheck
// (internal/benchstream) as JSON records. Records from fault on carry a
// random wrong age_group.
type e2eStream struct {
	s     *benchstream.Stream
	n     int
	fault int
	vals  []string
	buf   []byte
}

func newE2EStream(seed uint64, fault int) *e2eStream {
	return &e2eStream{s: benchstream.New(seed), fault: fault, vals: make([]string, len(benchstream.Fields))}
}

// next returns the next record as a JSON object (valid until the next call).
func (s *e2eStream) next() []byte {
	s.s.Row(s.vals, s.n >= s.fault)
	s.n++
	b := append(s.buf[:0], '{')
	for i, name := range benchstream.Fields {
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		if benchstream.Text[name] {
			b = append(b, '"')
			b = append(b, s.vals[i]...)
			b = append(b, '"')
		} else {
			b = append(b, s.vals[i]...)
		}
		b = append(b, ',')
	}
	b[len(b)-1] = '}'
	s.buf = b
	return b
}

// e2eEvent is an event as the monitor process saw it arrive at its sink.
type e2eEvent struct {
	Type       string `json:"type"`
	Dependency string `json:"dependency"`
	// Related, Equivalents, ImpliedBy: the event's (alerts.Event), as
	// dependency texts.
	Related     []string `json:"related,omitempty"`
	Equivalents []string `json:"equivalents,omitempty"`
	ImpliedBy   []string `json:"implied_by,omitempty"`
	EndSeq      uint64   `json:"end_seq"`
	Consumed    int      `json:"consumed"` // records consumed when it arrived
	UnixNano    int64    `json:"unix_nano"`
}

// reports says whether e is a violated event that reports the break of
// the rule fault (its text): the event's rule, one of its Related (the
// rules that broke in the same window sharing a column with it: one cause,
// one event, so a consumer learns of each), or one it names as its
// equivalent or implying rule (Summarize states them once). A break of
// another rule over the faulted column, which the fault breaks too, is not
// one: the benchmark measures how soon the rule it breaks is reported.
func (e e2eEvent) reports(fault string) bool {
	if e.Type != string(alerts.EventViolated) {
		return false
	}
	return e.Dependency == fault || slices.Contains(e.Related, fault) ||
		slices.Contains(e.Equivalents, fault) || slices.Contains(e.ImpliedBy, fault)
}

// e2eResult is what the monitor process of BenchmarkEndToEnd reports.
type e2eResult struct {
	Records        int     `json:"records"` // consumed after the warm-up
	Seconds        float64 `json:"seconds"` // the warm-up's end to the last record consumed
	FirstCheck     float64 `json:"first_check_s"`
	RecordsPerSec  float64 `json:"records_per_sec"`
	Checks         uint64  `json:"checks"`
	Skipped        float64 `json:"skipped"`
	CheckMean      float64 `json:"check_mean_s"`
	CheckP99       float64 `json:"check_p99_le_s"` // upper bound of the histogram bucket holding the p99
	CheckMax       float64 `json:"check_max_s"`
	Discoveries    uint64  `json:"discoveries"`
	DiscoveryMean  float64 `json:"discovery_mean_s"`
	DiscoverySkips float64 `json:"discovery_skipped"`
	// DiscoveryWaits counts the checks consumption held back for a
	// discovery, but the cold start's (ColdStartWaits: the check after the
	// first full window waits for that window's discovery, by design, so
	// that a cold start tracks its rules there), DiscoveryCost the
	// measured cost (pacer) of the discoveries started after the warm-up.
	DiscoveryWaits float64    `json:"discovery_waited"`
	ColdStartWaits float64    `json:"cold_start_waited"`
	DiscoveryCost  float64    `json:"discovery_cost_s"`
	Tracked        int        `json:"tracked"`
	MaxLag         float64    `json:"max_lag"`
	CPU            float64    `json:"cpu_s"` // the process's CPU time (user + system) over Seconds
	RSSMB          float64    `json:"rss_hwm_mb"`
	Events         []e2eEvent `json:"events"`
}

// e2eSink records the events the monitor delivers, with the records
// consumed at their arrival.
type e2eSink struct {
	mu       sync.Mutex
	events   []e2eEvent
	consumed prometheus.Counter
}

func (k *e2eSink) Send(_ context.Context, events []alerts.Event) error {
	now := time.Now().UnixNano()
	var m dto.Metric
	_ = k.consumed.Write(&m)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range events {
		ev := e2eEvent{Type: string(e.Type), Dependency: e.Dependency.String(), Equivalents: e.Equivalents, ImpliedBy: e.ImpliedBy,
			EndSeq: e.Window.EndSeq, Consumed: int(m.GetCounter().GetValue()), UnixNano: now}
		for _, r := range e.Related {
			ev.Related = append(ev.Related, r.Dependency.String())
		}
		k.events = append(k.events, ev)
	}
	return nil
}

func (k *e2eSink) Close() error { return nil }

// TestHelperE2EMonitor is the monitor process of BenchmarkEndToEnd (a
// process of its own, so that its RSS is its own): it prints READY once it
// joined the group and WARM once the first window is checked, consumes
// e2eRecords records, waits for the last check and the discoveries under
// way, and prints an e2eResult line.
func TestHelperE2EMonitor(t *testing.T) {
	if os.Getenv("ODWATCH_E2E_HELPER") != "1" {
		t.Skip("helper process for BenchmarkEndToEnd")
	}
	h := newE2EHelper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.m.Run(ctx) }()
	testkit.Eventually(t, time.Minute, "join", h.m.Ready)
	profile := os.Getenv("ODWATCH_E2E_CPUPROFILE")
	stopProfile := e2eCPUProfile(t, profile, ".warm")
	fmt.Println("READY")
	w := h.warmUp()
	stopProfile()
	stopProfile = e2eCPUProfile(t, profile, "")
	fmt.Println("WARM")
	first, cpu := time.Now(), testkit.CPUTime(t)
	w.waited, w.spent = discoveryWaits(t, h.reg, "e2e"), discoverySpent(h.s)
	maxLag := h.consumeAll(&w)
	took := time.Since(first)
	cpu = testkit.CPUTime(t) - cpu
	h.waitDrained()
	stopProfile()
	e2eAllocsProfile(t, profile)
	b, _ := json.Marshal(h.result(w, took, cpu, maxLag))
	fmt.Printf("E2E %s\n", b)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// e2eHelper is TestHelperE2EMonitor's monitor, its only stream, its
// metrics and its sink.
type e2eHelper struct {
	t    *testing.T
	reg  *prometheus.Registry
	m    *Monitor
	s    *streamRun
	sink *e2eSink
}

// e2eStreamLabels select the stream's series.
var e2eStreamLabels = map[string]string{"stream": "e2e"}

// e2eConfig is the stream of `odwatch run --topic e2e --window 100000
// --every 1000` with the 50 rules pinned: every other field at the CLI's
// default (cmd/odwatch/config.go), min-strength included, so that the
// monitor judges strength on the check path as the CLI's does (Summarize,
// the tracker's Needs). ODWATCH_E2E_MIN_STRENGTH sets min-strength (0
// judges none) and ODWATCH_E2E_DISCOVER_EVERY=N discover-every (auto,
// the default, when unset).
func e2eConfig(t testing.TB) StreamConfig {
	sc := StreamConfig{
		Topic: "e2e", Format: "json", Window: e2eWindow, Every: e2eEvery, Pinned: benchstream.Rules,
		DiscoverEvery: AutoDiscoverEvery, Epsilon: 0.01, Margin: AutoMargin, K: 1,
		RetireAfter: alerts.DefaultRetireAfter, MaxLevel: DefaultMaxLevel, DiscoverAfter: DefaultDiscoverAfter,
		Sample: 5, MinScore: AutoMinScore, MinStrength: discovery.DefaultMinStrength,
	}
	if d := os.Getenv("ODWATCH_E2E_DISCOVER_EVERY"); d != "auto" && d != "" {
		n, err := strconv.Atoi(d)
		if err != nil {
			t.Fatalf("ODWATCH_E2E_DISCOVER_EVERY: %v", err)
		}
		sc.DiscoverEvery = n
	}
	if s := os.Getenv("ODWATCH_E2E_MIN_STRENGTH"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v > 1 {
			t.Fatalf("ODWATCH_E2E_MIN_STRENGTH %q: want a strength in [0, 1]", s)
		}
		sc.MinStrength = v
	}
	return sc
}

func newE2EHelper(t *testing.T) *e2eHelper {
	sc := e2eConfig(t)
	h := &e2eHelper{t: t, reg: prometheus.NewRegistry(), sink: &e2eSink{}}
	m, err := NewMonitor(Config{
		Brokers: []string{os.Getenv("ODWATCH_BROKER")}, Group: "e2e", StateDir: os.Getenv("ODWATCH_STATE"),
		Streams: []StreamConfig{sc}, MaxDependencyMetrics: 200, // the CLI's --max-dependency-metrics
		SessionTimeout: DefaultSessionTimeout, HeartbeatInterval: DefaultHeartbeatInterval, RebalanceTimeout: DefaultRebalanceTimeout,
	}, Options{Logger: testkit.Logger(t), Registerer: h.reg, Sinks: []alerts.Sink{h.sink}})
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	h.m, h.s = m, m.streams[0]
	h.sink.consumed = h.s.consumed
	return h
}

// metric is the stream's series of name with extra labels (none: nil).
func (h *e2eHelper) metric(name string, extra map[string]string) float64 {
	labels := maps.Clone(e2eStreamLabels)
	maps.Copy(labels, extra)
	return metricValue(h.t, h.reg, name, labels)
}

// e2eWarm is what the warm-up leaves to subtract from the run's figures;
// waited and spent are the discovery waits and cost at its end.
type e2eWarm struct {
	firstCheck        float64 // seconds
	evals             histogram
	skipped, consumed float64
	waited            float64
	spent             time.Duration
	// coldWaited and coldSpent: the waits and the discovery cost up to the
	// check that merges the first full window's discovery (cold set once
	// it is saved): that discovery started in the warm-up.
	coldWaited float64
	coldSpent  time.Duration
	cold       bool
}

// warmUp waits for the first window's check (which builds the checker's
// state from the whole window), produced at once.
func (h *e2eHelper) warmUp() e2eWarm {
	testkit.Eventually(h.t, 10*time.Minute, "the first check", func() bool {
		n, _ := histogramStats(h.t, h.reg, "odwatch_evaluation_duration_seconds") // counted after evaluated moves
		return h.s.evaluated.Load() >= e2eWindow && n > 0
	})
	w := e2eWarm{
		firstCheck: time.Duration(h.s.maxEval.Load()).Seconds(),
		evals:      histogramOf(h.t, h.reg, "odwatch_evaluation_duration_seconds"),
		skipped:    h.metric("odwatch_evaluations_total", map[string]string{"result": "skipped"}),
		consumed:   h.metric("odwatch_records_consumed_total", nil),
	}
	h.s.maxEval.Store(0)
	return w
}

// consumeAll waits until every record is consumed and returns the largest
// consumer lag seen meanwhile; it sets w's cold-start waits once the check
// after the first full window is saved (the next wait can come a window
// later at the earliest: polled well before).
func (h *e2eHelper) consumeAll(w *e2eWarm) (maxLag float64) {
	testkit.Eventually(h.t, 10*time.Minute, "all records consumed", func() bool {
		maxLag = max(maxLag, h.metric("odwatch_consumer_lag", nil))
		if !w.cold && h.s.evaluated.Load() >= uint64(e2eWindow+h.s.cfg.Every) {
			w.cold, w.coldWaited, w.coldSpent = true, discoveryWaits(h.t, h.reg, "e2e")-w.waited, discoverySpent(h.s)-w.spent
		}
		return h.metric("odwatch_records_consumed_total", nil) >= e2eRecords
	})
	return maxLag
}

// waitDrained waits for the last check and for a discovery still running,
// so that its time is counted (its window is the last one); a skipped one
// never ends.
func (h *e2eHelper) waitDrained() {
	for deadline := time.Now().Add(2 * time.Minute); h.s.evaluated.Load() < e2eRecords && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // polling, with a deadline
	}
	if got := h.s.evaluated.Load(); got < e2eRecords {
		h.t.Logf("the last check saved window end %d, want %d", int64(got)-1, e2eRecords-1)
	}
	if de := h.s.cfg.DiscoverEvery; de > 0 && de <= e2eRecords {
		testkit.Eventually(h.t, 10*time.Minute, "the discoveries", func() bool {
			n, _ := histogramStats(h.t, h.reg, "odwatch_discovery_duration_seconds")
			skipped := h.metric("odwatch_discoveries_total", map[string]string{"result": "skipped"})
			return n+uint64(skipped) >= uint64((e2eRecords-e2eWindow)/de+1)
		})
	}
}

// result is the run's e2eResult after the warm-up w: took and cpu are the
// wall and CPU time of consuming the records after it.
func (h *e2eHelper) result(w e2eWarm, took, cpu time.Duration, maxLag float64) e2eResult {
	live := histogramOf(h.t, h.reg, "odwatch_evaluation_duration_seconds").minus(w.evals)
	disc, dsum := histogramStats(h.t, h.reg, "odwatch_discovery_duration_seconds")
	res := e2eResult{
		Records: e2eRecords - int(w.consumed), Seconds: took.Seconds(),
		FirstCheck:     w.firstCheck,
		Checks:         live.count,
		Skipped:        h.metric("odwatch_evaluations_total", map[string]string{"result": "skipped"}) - w.skipped,
		CheckP99:       live.quantile(0.99),
		CheckMax:       time.Duration(h.s.maxEval.Load()).Seconds(),
		Discoveries:    disc,
		DiscoverySkips: h.metric("odwatch_discoveries_total", map[string]string{"result": "skipped"}),
		DiscoveryWaits: discoveryWaits(h.t, h.reg, "e2e") - w.waited - w.coldWaited,
		ColdStartWaits: w.coldWaited,
		DiscoveryCost:  (discoverySpent(h.s) - w.spent - w.coldSpent).Seconds(),
		MaxLag:         maxLag,
		CPU:            cpu.Seconds(),
		RSSMB:          vmHWM() / 1024,
	}
	res.RecordsPerSec = float64(res.Records) / res.Seconds
	if live.count > 0 {
		res.CheckMean = live.sum / float64(live.count)
	}
	if disc > 0 {
		res.DiscoveryMean = dsum / float64(disc)
	}
	if rules, err := h.m.StatusRules("e2e"); err == nil {
		res.Tracked = len(rules)
	}
	h.sink.mu.Lock()
	res.Events = h.sink.events
	h.sink.mu.Unlock()
	return res
}

// discoveryWaits is how many times stream's consumption waited for a
// discovery (odwatch_discoveries_total{result="waited"}).
func discoveryWaits(t testing.TB, reg prometheus.Gatherer, stream string) float64 {
	return metricValue(t, reg, "odwatch_discoveries_total", map[string]string{"stream": stream, "result": "waited"})
}

// discoverySpent is the measured cost of the stream's discoveries so far
// (the pacer's).
func discoverySpent(s *streamRun) time.Duration {
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	if s.mb.feed.pace == nil {
		return 0
	}
	return s.mb.feed.pace.Spent()
}

// e2eCPUProfile starts a CPU profile of the monitor process into
// path+suffix (none when path is empty); the returned function stops it.
func e2eCPUProfile(t testing.TB, path, suffix string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path + suffix)
	if err != nil {
		t.Fatalf("cpu profile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatalf("cpu profile: %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Errorf("cpu profile: %v", err)
		}
	}
}

// e2eAllocsProfile writes the monitor process's allocations since it
// started (pprof's allocs profile) to path.allocs, when path is set.
func e2eAllocsProfile(t testing.TB, path string) {
	if path == "" {
		return
	}
	f, err := os.Create(path + ".allocs")
	if err != nil {
		t.Fatalf("allocs profile: %v", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		t.Errorf("allocs profile: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("allocs profile: %v", err)
	}
}

// histogram is a histogram's samples summed over its label sets.
type histogram struct {
	bounds []float64 // bucket upper bounds, increasing
	cum    []uint64  // cumulative counts per bound
	count  uint64
	sum    float64
}

func histogramOf(t testing.TB, g prometheus.Gatherer, name string) histogram {
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h histogram
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			mh := m.GetHistogram()
			h.count += mh.GetSampleCount()
			h.sum += mh.GetSampleSum()
			for i, b := range mh.GetBucket() {
				if i == len(h.bounds) {
					h.bounds = append(h.bounds, b.GetUpperBound())
					h.cum = append(h.cum, 0)
				}
				h.cum[i] += b.GetCumulativeCount()
			}
		}
	}
	return h
}

// minus is the samples of h not in an earlier state o of it.
func (h histogram) minus(o histogram) histogram {
	d := histogram{bounds: h.bounds, cum: slices.Clone(h.cum), count: h.count - o.count, sum: h.sum - o.sum}
	for i := range o.cum {
		d.cum[i] -= o.cum[i]
	}
	return d
}

// quantile is the upper bound of the bucket holding quantile q (+Inf past
// the last bucket, 0 without samples).
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	for i, c := range h.cum {
		if float64(c) >= q*float64(h.count) {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

// BenchmarkEndToEnd is issue 9's end-to-end run: the monitor (in a process
// of its own, as `odwatch run` with --window 100000 --every 1000, the 50
// rules of discovery's BenchmarkCheck pinned, and the defaults otherwise,
// min-strength 0.5 included: e2eConfig) on the in-process broker. The first window is produced at once and its check
// (which builds the checker's state: first-check-s) awaited; then the rest
// is produced live at 100k records/s, with a fault from record e2eFault on.
// After the warm-up it reports the consume rate, the check time (mean, p99
// as its histogram bucket's bound, max), skipped checks, discovery time,
// peak RSS, and the fault's violated event (the first that reports the
// break of e2eFaultDep: e2eEvent.reports): its window end and the records
// consumed when it arrived, both past e2eFault, and its wall time after the
// first faulty record was produced; a missed target is logged. Run with
// -benchtime=1x:
//
//	go test ./stream -run '^$' -bench BenchmarkEndToEnd -benchtime=1x
//	ODWATCH_E2E_RATE=20000 ODWATCH_E2E_DISCOVER_EVERY=10000000 go test ./stream -run '^$' -bench BenchmarkEndToEnd -benchtime=1x
//	ODWATCH_E2E_MIN_STRENGTH=0 go test ./stream -run '^$' -bench BenchmarkEndToEnd -benchtime=1x
//
// procLines keeps the monitor process's output lines as they come, so that
// the process never blocks on a full pipe: with ODWATCH_TEST_DEBUG=1 it logs
// every check, and a pipe nobody read while the benchmark produced stalled
// the monitor for seconds, which showed as coalesced checks.
type procLines struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines []string
	next  int // the first line find has not passed yet
	done  bool
}

// readLines reads r's lines into a procLines until r ends.
func readLines(r io.Reader) *procLines {
	p := &procLines{}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			p.cond.Broadcast()
		}
		_, _ = io.Copy(io.Discard, r) // a line too long ends the scan, not the reading
		p.mu.Lock()
		p.done = true
		p.mu.Unlock()
		p.cond.Broadcast()
	}()
	return p
}

// find waits for the next line that starts with prefix and returns the
// rest of it, or false once the output ended without one.
func (p *procLines) find(prefix string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for ; p.next < len(p.lines); p.next++ {
			if rest, ok := strings.CutPrefix(p.lines[p.next], prefix); ok {
				p.next++
				return rest, true
			}
		}
		if p.done {
			return "", false
		}
		p.cond.Wait()
	}
}

// text is the output read so far.
func (p *procLines) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n") + "\n"
}

// ODWATCH_E2E_CPUPROFILE=FILE writes CPU profiles of the monitor process:
// of the warm-up (the first window's ingest, its check and the discovery
// running meanwhile) to FILE.warm, of the rest to FILE, and its
// allocations over the whole run to FILE.allocs.
func BenchmarkEndToEnd(b *testing.B) {
	rate := e2eRate
	if r := os.Getenv("ODWATCH_E2E_RATE"); r != "" {
		var err error
		if rate, err = strconv.Atoi(r); err != nil || rate <= 0 {
			b.Fatalf("ODWATCH_E2E_RATE %q: want records per second", r)
		}
	}
	for range b.N {
		runEndToEnd(b, rate, os.Getenv("ODWATCH_E2E_DISCOVER_EVERY"))
	}
}

// runEndToEnd is one run of BenchmarkEndToEnd at rate records/s, with
// discover-every discoverEvery (a number, auto, or empty: the default,
// auto).
func runEndToEnd(b *testing.B, rate int, discoverEvery string) (res e2eResult) {
	b.StopTimer()
	addr, stop, err := demo.StartBroker(context.Background(), map[string]int{"e2e": 1})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	p := startE2EProcess(b, addr, discoverEvery)
	p.wait("READY")
	b.StartTimer()
	prod := newE2EProducer(addr)
	defer prod.close()
	if _, err := prod.produce(e2eWindow, 0); err != nil {
		b.Fatalf("produce the first window: %v", err)
	}
	p.wait("WARM")
	start, harnessCPU := time.Now(), testkit.CPUTime(b)
	faultAt, err := prod.produce(e2eRecords, rate)
	if err != nil {
		b.Fatalf("produce: %v", err)
	}
	prodSecs := time.Since(start).Seconds()
	harnessCPU = testkit.CPUTime(b) - harnessCPU
	if err := json.Unmarshal([]byte(p.wait("E2E ")), &res); err != nil {
		b.Fatalf("bad result line: %v", err)
	}
	b.StopTimer()
	p.end()
	b.ReportMetric(float64(e2eRecords-e2eWindow)/prodSecs, "produced/s")
	b.ReportMetric(harnessCPU.Seconds()/prodSecs, "harness-cores")
	b.Logf("after the warm-up: produced %d records in %.2f s, consumed %d in %.2f s; tracked %d; discoveries skipped %v; events %d",
		e2eRecords-e2eWindow, prodSecs, res.Records, res.Seconds, res.Tracked, res.DiscoverySkips, len(res.Events))
	reportE2E(b, res, faultAt)
	return res
}

// e2eProcess is BenchmarkEndToEnd's monitor process (TestHelperE2EMonitor
// in a process of its own), its output lines and its log.
type e2eProcess struct {
	b     *testing.B
	cmd   *exec.Cmd
	lines *procLines
	logs  strings.Builder
}

// startE2EProcess starts the monitor process on the broker at addr, with
// discover-every discoverEvery.
func startE2EProcess(b *testing.B, addr, discoverEvery string) *e2eProcess {
	p := &e2eProcess{b: b, cmd: exec.Command(os.Args[0], "-test.run=^TestHelperE2EMonitor$", "-test.v")}
	p.cmd.Env = append(os.Environ(), "ODWATCH_E2E_HELPER=1", "ODWATCH_BROKER="+addr, "ODWATCH_STATE="+b.TempDir(),
		"ODWATCH_E2E_DISCOVER_EVERY="+discoverEvery)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	p.cmd.Stderr = &p.logs
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.lines = readLines(stdout)
	return p
}

// wait returns the rest of the process's first line starting with prefix,
// failing the benchmark when the process ends before it.
func (p *e2eProcess) wait(prefix string) string {
	if rest, ok := p.lines.find(prefix); ok {
		return rest
	}
	_ = p.cmd.Wait()
	p.b.Fatalf("monitor process ended before %q:\n%s\n%s", prefix, tail(p.lines.text(), 4000), tail(p.logs.String(), 4000))
	return ""
}

// end waits for the process to exit and, with ODWATCH_BENCH_LOG=FILE,
// writes its output and log there (with ODWATCH_TEST_DEBUG=1: every
// check's and discovery's timings).
func (p *e2eProcess) end() {
	if err := p.cmd.Wait(); err != nil {
		p.b.Fatalf("monitor process: %v\n%s", err, tail(p.logs.String(), 4000))
	}
	if path := os.Getenv("ODWATCH_BENCH_LOG"); path != "" {
		if err := os.WriteFile(path, []byte(p.lines.text()+p.logs.String()), 0o644); err != nil {
			p.b.Logf("write %s: %v", path, err)
		}
	}
}

// reportE2E reports the monitor's figures and the first violated event
// that reports the fault produced at faultAt (e2eEvent.reports): how long after the fault it came, in records
// and seconds.
func reportE2E(b *testing.B, res e2eResult, faultAt time.Time) {
	dep, err := discovery.ParseDependency(e2eFaultDep)
	if err != nil {
		b.Fatal(err)
	}
	var viol *e2eEvent
	for i, e := range res.Events {
		if e.Type == string(alerts.EventViolated) {
			b.Logf("violated %s at window end %d, %d consumed; related %v, equivalents %v, implied by %v",
				e.Dependency, e.EndSeq, e.Consumed, e.Related, e.Equivalents, e.ImpliedBy)
		}
		if viol == nil && e.reports(dep.String()) {
			viol = &res.Events[i]
		}
	}
	b.ReportMetric(res.FirstCheck, "first-check-s")
	b.ReportMetric(res.RecordsPerSec, "records/s")
	b.ReportMetric(res.CheckMean*1000, "check-mean-ms")
	b.ReportMetric(res.CheckP99*1000, "check-p99-le-ms")
	b.ReportMetric(res.CheckMax*1000, "check-max-ms")
	b.ReportMetric(float64(res.Checks), "checks")
	b.ReportMetric(res.Skipped, "checks-skipped")
	b.ReportMetric(res.DiscoveryMean, "discovery-mean-s")
	b.ReportMetric(float64(res.Discoveries), "discoveries")
	b.ReportMetric(res.DiscoveryWaits, "discovery-waits")
	b.ReportMetric(res.ColdStartWaits, "cold-start-waits")
	b.ReportMetric(res.DiscoveryCost/res.Seconds, "discovery-cores")
	b.ReportMetric(res.RSSMB, "rss-peak-MB")
	b.ReportMetric(res.MaxLag, "max-lag")
	b.ReportMetric(res.CPU/res.Seconds, "monitor-cores")
	b.ReportMetric(res.CPU/float64(res.Records)*1e6, "monitor-cpu-µs/record")
	if viol == nil {
		b.Fatalf("no violated event for %s (fault from record %d); events: %+v", dep, e2eFault, res.Events)
	}
	latency := time.Duration(viol.UnixNano - faultAt.UnixNano())
	b.ReportMetric(float64(viol.EndSeq)-e2eFault, "fault-window-end-after")
	b.ReportMetric(float64(viol.Consumed)-e2eFault, "fault-consumed-after")
	b.ReportMetric(latency.Seconds(), "fault-wall-s")
	if viol.Consumed >= e2eFault+3000 || latency > time.Second || res.Skipped > 0 {
		b.Logf("TARGET MISSED: violated event at window end %d, %d records consumed at its arrival (target < %d), %v after the fault was produced (target 1 s), %v skipped checks",
			viol.EndSeq, viol.Consumed, e2eFault+3000, latency, res.Skipped)
	}
}

// e2eProducer produces the 20-field stream to topic e2e.
type e2eProducer struct {
	w    *kafka.Writer
	gen  *e2eStream
	next int // records produced
}

func newE2EProducer(addr string) *e2eProducer {
	return &e2eProducer{
		w: &kafka.Writer{
			Addr: kafka.TCP(addr), Topic: "e2e", Balancer: &kafka.RoundRobin{},
			BatchSize: 2000, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll, Compression: kafka.Lz4,
		},
		gen: newE2EStream(1, e2eFault),
	}
}

func (p *e2eProducer) close() { _ = p.w.Close() }

// produce produces the records up to record to at rate records/s (0: at
// once) and returns when the first faulty record among them was handed to
// the producer (zero when none was).
func (p *e2eProducer) produce(to, rate int) (faultAt time.Time, err error) {
	chunk, tick := 2000, time.Duration(0)
	if rate > 0 {
		chunk = max(1, rate/100) // every 10 ms
		tick = time.Duration(float64(chunk) / float64(rate) * float64(time.Second))
	}
	msgs := make([]kafka.Message, chunk)
	start, from := time.Now(), p.next
	for p.next < to {
		n := min(chunk, to-p.next)
		for k := range n {
			msgs[k] = kafka.Message{Value: append([]byte(nil), p.gen.next()...)}
		}
		if p.next <= e2eFault && e2eFault < p.next+n {
			faultAt = time.Now()
		}
		if err := p.w.WriteMessages(context.Background(), msgs[:n]...); err != nil {
			return faultAt, err
		}
		p.next += n
		if d := time.Until(start.Add(time.Duration((p.next-from)/chunk) * tick)); d > 0 {
			time.Sleep(d) // pacing the producer, not synchronising
		}
	}
	return faultAt, nil
}
