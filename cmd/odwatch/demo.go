package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/stream"
)

const demoHelp = `Runs the whole loop on one machine: an in-process Kafka broker, the payroll
stream of the paper's running example (clean at first, then with data-entry
errors), and the monitor on it, printing events as they happen and serving
the status page and Prometheus metrics. Ctrl-C stops it.

Example:
  odwatch demo --rate 2000 --duration 1m

Exit status: 0 stopped, 1 failure, 2 usage error.`

// The demo's topics on its in-process broker.
const demoTopic, demoEventsTopic = "payroll", "odwatch-events"

// demoFlags binds the flags of `odwatch demo`.
type demoFlags struct {
	fs           *flag.FlagSet
	metricsAddr  string
	webConfig    string
	statusValues bool
	window       int
	every        int
	eps          float64
	margin       marginFlag
	k            int
	minScore     float64
	payroll      demo.PayrollOptions // the generator's flags; brokers and topic are the demo's
	duration     time.Duration
	stateDir     string
	logLevel     string
}

func newDemoFlags() *demoFlags {
	f := &demoFlags{fs: newFlagSet("demo", "[flags]", demoHelp)}
	fs := f.fs
	fs.StringVar(&f.metricsAddr, "metrics-addr", "127.0.0.1:9464", "address for the status page (/, /api/), /metrics, /healthz and /readyz; empty turns them off")
	fs.StringVar(&f.webConfig, "web-config-file", "", "exporter-toolkit web config file (TLS, basic auth) for everything on --metrics-addr")
	fs.BoolVar(&f.statusValues, "status-values", true, "show sampled records' values on the status page; false shows topic, partition and offset only")
	fs.IntVar(&f.window, "window", 2000, "window size in records")
	fs.IntVar(&f.every, "every", 1000, "evaluate every M records")
	fs.Float64Var(&f.eps, "epsilon", 0.01, "error threshold")
	// run's automatic margin (at the demo's window of 2000 and epsilon
	// 0.01, 0.005) keeps the near-threshold dependencies that appear once
	// errors start from flapping between violated and restored.
	f.margin = marginFlag(alerts.AutoMargin)
	fs.Var(&f.margin, "margin", marginHelp)
	fs.IntVar(&f.k, "k", 1, "consecutive windows beyond the margin before violated/restored")
	// Dependencies whose context is nearly a key ({salary}: experience ~ tax)
	// hold trivially in small classes; they would drown the interesting ones.
	fs.Float64Var(&f.minScore, "min-score", 0.01, "do not track newly found dependencies with a lower score")
	payrollFlags(fs, &f.payroll, demo.PayrollOptions{Rate: 1000, CleanRecords: 6000, ErrorRate: 0.03}, "stop producing after this many records; 0 never stops")
	fs.DurationVar(&f.duration, "duration", 0, "stop the demo after this long; 0 runs until Ctrl-C")
	fs.StringVar(&f.stateDir, "state-dir", "", "state directory; empty uses a temporary one, removed at exit")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug|info|warn|error (logs go to standard error; warn keeps the terminal to the story)")
	return f
}

// runDemo is `odwatch demo`: an in-process Kafka broker, the payroll stream
// of the paper's running example (clean at first, then with data-entry
// errors), and the monitor on it, printing events as they happen. It
// starts the broker, the monitor and its web server, tells the story
// (demoFlags.story) and shuts them down in the reverse order.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newDemoFlags()
	pos, err := parseArgs(f.fs, args, stdout)
	if err != nil {
		return err
	}
	if err := wantNoArgs(pos); err != nil {
		return err
	}
	logger, err := newLogger(stderr, f.logLevel, "text")
	if err != nil {
		return err
	}
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	dir := f.stateDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "odwatch-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}

	// The broker outlives the monitor: it stops after Run returned, so
	// that a Ctrl-C lets the monitor commit and leave its group cleanly.
	addr, stopBroker, err := demo.StartBroker(context.WithoutCancel(ctx), map[string]int{demoTopic: 1, demoEventsTopic: 1})
	if err != nil {
		return fmt.Errorf("start in-process broker: %w", err)
	}
	defer stopBroker()
	cfg := f.monitorConfig(addr, dir)
	if err := cfg.Validate(); err != nil {
		return configErr(err)
	}
	reg := newRegistry()
	m, err := stream.NewMonitor(cfg, stream.Options{
		Logger:     logger,
		Registerer: reg,
		Sinks:      []alerts.Sink{&demoSink{w: stdout}},
	})
	if err != nil {
		return err
	}
	defer m.Close() // releases the store when Run is not reached; a no-op after Run
	webAddr, stopServing, err := serveWeb(webSettings{Addr: f.metricsAddr, ConfigFile: f.webConfig},
		webHandler(m, reg, f.statusValues, logger), logger)
	if err != nil {
		return err
	}
	defer stopServing()

	f.printIntro(stdout, addr, webAddr, cfg.Streams[0].DiscoverEvery)
	runErr, genErr := f.story(ctx, m, addr)
	if genErr != nil {
		return fmt.Errorf("payroll generator: %w", genErr)
	}
	fmt.Fprintln(stdout, "odwatch demo: stopped")
	return runErr
}

// monitorConfig is the monitor's configuration for the payroll topic on
// the broker at addr, with its state in dir.
func (f *demoFlags) monitorConfig(addr, dir string) stream.Config {
	return stream.Config{
		Brokers:     []string{addr},
		Group:       "odwatch-demo",
		EventsTopic: demoEventsTopic,
		StateDir:    dir,
		Streams: []stream.StreamConfig{{
			Name: demoTopic, Topic: demoTopic, Format: "json",
			Window: f.window, Every: f.every, Epsilon: f.eps, Margin: float64(f.margin), K: f.k, Sample: 3, MinScore: f.minScore,
			// run's defaults: reliable rules only, found in two windows in a
			// row, at most three columns.
			MinStrength: discovery.DefaultMinStrength, DiscoverAfter: stream.DefaultDiscoverAfter, MaxLevel: stream.DefaultMaxLevel,
		}},
	}
}

// printIntro tells what the demo runs: the broker at addr, the stream
// (discovering every discoverEvery records), and where the status page is
// (webAddr) when it is served.
func (f *demoFlags) printIntro(w io.Writer, addr, webAddr string, discoverEvery int) {
	fmt.Fprintf(w, "odwatch demo: in-process Kafka at %s, topic %q, events topic %q\n", addr, demoTopic, demoEventsTopic)
	fmt.Fprintf(w, "  payroll stream: %d clean records, then %.0f%% with a data-entry error (a percentage with a zero appended)\n", f.payroll.CleanRecords, f.payroll.ErrorRate*100)
	margin := f.margin.String()
	if f.margin < 0 {
		margin = fmt.Sprintf("auto, %.3g", alerts.NoiseMargin(f.eps, f.window))
	}
	fmt.Fprintf(w, "  window %d records, rules checked every %d and discovered every %d, epsilon %g (margin %s)\n",
		f.window, f.every, discoverEvery, f.eps, margin)
	if f.metricsAddr != "" {
		tls := ""
		if f.webConfig != "" {
			tls = " (https:// when the web config sets TLS)"
		}
		fmt.Fprintf(w, "  open http://%s/ for the status page%s; metrics at /metrics. Ctrl-C stops.\n\n", webAddr, tls)
	}
}

// story produces the payroll stream to the broker at addr while m watches
// it, until ctx ends or the monitor stops; the generator stops with the
// monitor, so that a monitor that fails does not leave the demo waiting
// for Ctrl-C. It returns the monitor's error (nil when ctx ended it) and
// the generator's (nil when it was stopped).
func (f *demoFlags) story(ctx context.Context, m *stream.Monitor, addr string) (runErr, genErr error) {
	seed := f.payroll.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	genDone := make(chan error, 1)
	go func() {
		o := f.payroll
		o.Brokers, o.Topic, o.Seed = []string{addr}, demoTopic, seed
		genDone <- demo.ProducePayroll(genCtx, o)
	}()
	runErr = m.Run(ctx)
	stopGen()
	if err := <-genDone; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return runErr, err
	}
	if runErr != nil && ctx.Err() != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)) {
		runErr = nil
	}
	return runErr, nil
}
