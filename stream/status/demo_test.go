package status

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/stream"
)

// demoRun is the demo pipeline (in-process broker, payroll generator,
// monitor) with the status page served over HTTP.
type demoRun struct {
	m      *stream.Monitor
	srv    *httptest.Server
	addr   string // the broker
	dir    string // the state directory
	stopM  context.CancelFunc
	runErr chan error
}

// startMonitor runs a monitor of the demo's stream on the broker and state
// directory.
func (d *demoRun) startMonitor(t *testing.T) {
	t.Helper()
	m, err := stream.NewMonitor(demoConfig(d.addr, d.dir), stream.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.m, d.stopM, d.runErr = m, cancel, make(chan error, 1)
	go func() { d.runErr <- m.Run(ctx) }()
}

// stopMonitor stops the running monitor and waits for it.
func (d *demoRun) stopMonitor(t *testing.T) {
	t.Helper()
	d.stopM()
	select {
	case err := <-d.runErr:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("monitor: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("monitor did not stop within 30 s")
	}
}

// waitViolated waits until the monitor holds salary ~ tax violated and
// returns its id.
func (d *demoRun) waitViolated(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		rules, err := d.m.StatusRules("payroll")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if r.State == alerts.StateViolated && isSalaryTax(r.Text) {
				return r.ID
			}
		}
		select {
		case err := <-d.runErr:
			t.Fatalf("monitor stopped: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("salary ~ tax not violated within 2 minutes")
	return ""
}

// startDemo runs the payroll demo until the tracker holds salary ~ tax
// violated, and returns it with the rule's id. The test's cleanup stops
// it.
func startDemo(t *testing.T, values bool) (*demoRun, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	const topic = "payroll"
	addr, stopBroker, err := demo.StartBroker(ctx, map[string]int{topic: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &demoRun{addr: addr, dir: t.TempDir()}
	d.startMonitor(t)
	genErr := make(chan error, 1)
	go func() {
		genErr <- demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: topic,
			Rate: 4000, CleanRecords: 6000, ErrorRate: 0.03, Seed: 7})
	}()
	d.srv = httptest.NewServer(Handler(d.m, Options{Values: values}))
	t.Cleanup(func() {
		d.srv.Close()
		d.stopMonitor(t)
		cancel()
		select {
		case err := <-genErr:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("payroll generator: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("payroll generator did not stop within 30 s")
		}
		stopBroker()
	})
	return d, d.waitViolated(t)
}

// demoConfig is the stream of odwatch demo, with its default settings
// (there, salary ~ tax turns violated as a related rule of another's
// event).
func demoConfig(broker, dir string) stream.Config {
	const topic = "payroll"
	return stream.Config{
		Brokers: []string{broker}, Group: "status-test", StateDir: dir,
		Streams: []stream.StreamConfig{{Name: topic, Topic: topic, Format: "json",
			Window: 2000, Every: 1000, Epsilon: 0.01, Margin: 0.004, K: 1, Sample: 3, MinScore: 0.01}},
	}
}

func isSalaryTax(text string) bool {
	return text == "{}: salary ~ tax (asc)" || text == "{}: tax ~ salary (asc)"
}

// TestDemoAPI: on the real pipeline, the API shows the violated salary/tax
// rule with its history and band, and its violating records; with values
// hidden, the offsets stay and the values go.
func TestDemoAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo pipeline")
	}
	d, id := startDemo(t, false)
	h := d.srv.Config.Handler
	var v struct {
		Rule struct {
			State   string
			Band    struct{ Low, High float64 }
			History []struct {
				Error    float64
				Violated bool
			}
		}
		Samples []struct {
			Offset int64
			Values map[string]string
		}
	}
	// The tracker turns violated before the evaluation's events reach the
	// status history (after the save): wait for the samples.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		getJSON(t, h, "/api/streams/payroll/rules/"+id, &v)
		if len(v.Samples) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if v.Rule.State != "violated" || len(v.Rule.History) < 2 || v.Rule.Band.High != 0.014 {
		t.Errorf("rule %+v", v.Rule)
	}
	// The chart crosses the band: held at first, then violated above it.
	first, crossed := v.Rule.History[0], false
	for _, p := range v.Rule.History {
		crossed = crossed || (p.Violated && p.Error > v.Rule.Band.High)
	}
	if first.Violated || first.Error > v.Rule.Band.Low || !crossed {
		t.Errorf("history %+v, want it to start below the band and cross it", v.Rule.History)
	}
	if len(v.Samples) == 0 || v.Samples[0].Offset < 6000 {
		t.Fatalf("samples %+v, want records past the clean ones", v.Samples)
	}
	for _, s := range v.Samples {
		if s.Values != nil {
			t.Errorf("values %v sent with --status-values=false", s.Values)
		}
	}
	// The history survives a restart: a new monitor on the same state
	// directory shows the chart and the events it had.
	d.stopMonitor(t)
	d.startMonitor(t)
	if id2 := d.waitViolated(t); id2 != id {
		t.Fatalf("rule id %s after the restart, was %s", id2, id)
	}
	var after struct {
		Rule struct {
			History []struct {
				WindowEnd uint64 `json:"window_end"`
			}
		}
		Events []struct{ Type string }
	}
	getJSON(t, Handler(d.m, Options{}), "/api/streams/payroll/rules/"+id, &after)
	if len(after.Rule.History) < len(v.Rule.History) || len(after.Events) < 2 {
		t.Errorf("after a restart: %d points (had %d), %d events", len(after.Rule.History), len(v.Rule.History), len(after.Events))
	}
}

// chromiumPath finds Debian's chromium (or another Chrome) for the browser
// test.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowser drives Chromium through the page as a person would: the
// stream list, the stream, the violated salary/tax rule; it checks the
// chart, the violated state, the eps band and a violating record's offset
// are on screen, and saves a screenshot (in $ODWATCH_ARTIFACTS too when
// set).
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo pipeline and a browser")
	}
	exe := needChromium(t)
	d, id := startDemo(t, true)
	samples := func() []string {
		var v struct{ Samples []struct{ Offset int64 } }
		getJSON(t, d.srv.Config.Handler, "/api/streams/payroll/rules/"+id, &v)
		var out []string
		for _, s := range v.Samples {
			out = append(out, strconv.FormatInt(s.Offset, 10))
		}
		return out
	}

	ctx := newBrowser(t, exe)
	ruleLink := chromedp.Search(`//section[contains(@class,"rule") and contains(@class,"violated")]//a[contains(@class,"rule-link")][normalize-space(.)="{}: salary ~ tax (asc)" or normalize-space(.)="{}: tax ~ salary (asc)"]`)
	err := chromedp.Do(ctx,
		chromedp.Navigate(d.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`a.stream-link`)),
		chromedp.Click(chromedp.CSS(`a.stream-link`)),
		chromedp.WaitVisible(ruleLink),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	streamShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(ruleLink),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart polyline.error`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart rect.band`)),
		chromedp.WaitVisible(chromedp.CSS(`h1 .state.violated`)),
		chromedp.WaitVisible(chromedp.CSS(`table.samples td.offset`)),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(url, "/streams/payroll/rules/"+id) {
		t.Errorf("landed on %s (%v), want the salary/tax rule page", url, err)
	}
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`h1 .state`)))
	if err != nil || state != "violated" {
		t.Errorf("rule state %q (%v), want violated", state, err)
	}
	bandH, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`svg.chart rect.band`), "height"))
	if h, perr := strconv.ParseFloat(bandH.Value, 64); err != nil || perr != nil || h <= 0 {
		t.Errorf("eps band height %q (%v), want a visible band", bandH.Value, err)
	}
	line, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`svg.chart polyline.error`), "points"))
	if err != nil || strings.Count(line.Value, ",") < 2 {
		t.Errorf("chart line %q (%v), want at least two points", line.Value, err)
	}
	offset, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`table.samples td.offset`)))
	if want := samples(); err != nil || len(want) == 0 || !slices.Contains(want, strings.TrimSpace(offset)) {
		t.Errorf("offset on the page %q (%v), want one of the API's %v", offset, err, want)
	}
	// The page refreshes itself in place: after the next evaluation its
	// version changes while the document stays the same (no reload) and
	// the chart is still there.
	version, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.odwatchTestMark = 1; document.body.dataset.version`))
	if err != nil {
		t.Fatal(err)
	}
	refreshed := false
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !refreshed; time.Sleep(200 * time.Millisecond) {
		now, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.odwatchTestMark === 1 && document.querySelector("svg.chart polyline.error") ? document.body.dataset.version : "reloaded"`))
		if err != nil || now == "reloaded" {
			t.Fatalf("the page reloaded or lost its chart while refreshing (%q, %v)", now, err)
		}
		refreshed = now != version
	}
	if !refreshed {
		t.Error("the rule page did not refresh itself within a minute of evaluations")
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if a := os.Getenv("ODWATCH_ARTIFACTS"); a != "" {
		dir = a
	}
	for name, png := range map[string][]byte{"status-stream.png": streamShot, "status-rule.png": shot} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
}

// needChromium returns the browser's path, or skips the test (fails it in
// CI, which installs Chromium).
func needChromium(t *testing.T) string {
	t.Helper()
	exe := chromiumPath()
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium missing: .ci/run must install it (Debian package chromium)")
		}
		t.Skip("chromium not installed (apt-get install chromium); the browser test needs it")
	}
	return exe
}

// newBrowser starts a headless Chromium with a fresh profile; it stops
// with the test.
func newBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(func() {
		cancel()
		cancelBrowser()
		cancelAlloc()
	})
	return ctx
}

// TestBrowserInjection: a record whose field name and value hold markup
// is shown as text by a real browser: no element comes from it, no script
// runs, and the cell reads as the value.
func TestBrowserInjection(t *testing.T) {
	exe := needChromium(t)
	const evilCol = `<script>document.body.dataset.pwned="col"</script>`
	const evilVal = `"><img src=x onerror="document.body.dataset.pwned='value'">`
	d := discovery.Dependency{Kind: discovery.KindOC, Left: evilCol, Right: "tax", Polarity: discovery.Asc}
	src := payrollSource(t)
	src.rules["payroll"] = append(src.rules["payroll"], stream.RuleStatus{ID: d.ID(), Text: d.String(), Dependency: d, State: alerts.StateViolated, Measured: true, Error: 0.5})
	src.events["payroll"] = append(src.events["payroll"], stream.StatusEvent{Event: alerts.Event{ID: "evil", Type: alerts.EventViolated, Stream: "payroll", DependencyID: d.ID(), Dependency: d, DependencyText: d.String(),
		Window:  alerts.WindowInfo{StartOffsets: map[int32]int64{0: 1}, EndOffsets: map[int32]int64{0: 2}},
		Samples: []alerts.Sample{{Topic: "payroll", Offset: 7, Values: map[string]string{evilCol: evilVal, "tax": evilVal}}}}})
	srv := httptest.NewServer(Handler(src, Options{Values: true}))
	defer srv.Close()
	ctx := newBrowser(t, exe)
	for _, path := range []string{streamHref("payroll"), ruleHref("payroll", d.ID())} {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+path), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		injected, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img, main script, main [onerror]").length`))
		if err != nil || injected != 0 {
			t.Errorf("%s: %d elements from record data (%v)", path, injected, err)
		}
		ran, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.pwned || ""`))
		if err != nil || ran != "" {
			t.Errorf("%s: a script from record data ran (%q, %v)", path, ran, err)
		}
	}
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table.samples td.value, table.samples th")).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cells, evilCol) || !slices.Contains(cells, evilVal) {
		t.Errorf("sample table cells %q, want the column name and the value as text", cells)
	}
}
