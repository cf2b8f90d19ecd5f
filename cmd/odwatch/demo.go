package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/stream"
)

const demoHelp = `Runs the whole loop on one machine: an in-process Kafka broker, the payroll
stream of the paper's running example (clean at first, then with data-entry
errors), and the monitor on it, printing events as they happen and serving
the status page and Prometheus metrics. Ctrl-C stops it.

Exit status: 0 stopped, 1 failure, 2 usage error.`

// runDemo is `odwatch demo`: an in-process Kafka broker, the payroll stream
// of the paper's running example (clean at first, then with data-entry
// errors), and the monitor on it, printing events as they happen.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "[flags]", demoHelp)
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9464", "address for the status page (/, /api/), /metrics, /healthz and /readyz; empty turns them off")
	webConfig := fs.String("web-config-file", "", "exporter-toolkit web config file (TLS, basic auth) for everything on --metrics-addr")
	statusValues := fs.Bool("status-values", true, "show sampled records' values on the status page; false shows topic, partition and offset only")
	window := fs.Int("window", 2000, "window size in records")
	every := fs.Int("every", 1000, "evaluate every M records")
	eps := fs.Float64("epsilon", 0.01, "error threshold")
	// A margin keeps the near-threshold dependencies that appear once errors
	// start from flapping between violated and restored on every window.
	margin := fs.Float64("margin", 0.004, "hysteresis margin around epsilon")
	k := fs.Int("k", 1, "consecutive windows beyond the margin before violated/restored")
	// Dependencies whose context is nearly a key ({salary}: experience ~ tax)
	// hold trivially in small classes; they would drown the interesting ones.
	minScore := fs.Float64("min-score", 0.01, "do not track newly found dependencies with a lower score")
	rate := fs.Float64("rate", 1000, "payroll records per second; 0 produces as fast as possible")
	clean := fs.Int("clean", 6000, "clean records before data-entry errors start")
	errRate := fs.Float64("error-rate", 0.03, "share of records with a data-entry error after --clean")
	stopAfter := fs.Int("stop-errors-after", 0, "records after which the errors stop again; 0 never stops them")
	count := fs.Int("count", 0, "stop producing after this many records; 0 never stops")
	duration := fs.Duration("duration", 0, "stop the demo after this long; 0 runs until Ctrl-C")
	stateDir := fs.String("state-dir", "", "state directory; empty uses a temporary one, removed at exit")
	seed := fs.Int64("seed", 0, "random seed of the generator; 0 takes one from the clock")
	logLevel := fs.String("log-level", "warn", "debug|info|warn|error")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := wantNoArgs(pos); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logLevel, "text")
	if err != nil {
		return err
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	dir := *stateDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "odwatch-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}

	const topic, eventsTopic = "payroll", "odwatch-events"
	// The broker outlives the monitor: it stops after Run returned, so
	// that a Ctrl-C lets the monitor commit and leave its group cleanly.
	addr, stopBroker, err := stream.StartBroker(context.WithoutCancel(ctx), map[string]int{topic: 1, eventsTopic: 1})
	if err != nil {
		return fmt.Errorf("start in-process broker: %w", err)
	}
	defer stopBroker()

	cfg := stream.Config{
		Brokers:     []string{addr},
		Group:       "odwatch-demo",
		EventsTopic: eventsTopic,
		StateDir:    dir,
		Streams: []stream.StreamConfig{{
			Name: topic, Topic: topic, Format: "json",
			Window: *window, Every: *every, Epsilon: *eps, Margin: *margin, K: *k, Sample: 3, MinScore: *minScore,
			// run's defaults: reliable rules only, found in two windows in a
			// row, at most three columns.
			MinStrength: discovery.DefaultMinStrength, DiscoverAfter: stream.DefaultDiscoverAfter, MaxLevel: stream.DefaultMaxLevel,
		}},
	}
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
	webAddr, stopServing, err := serveWeb(webSettings{Addr: *metricsAddr, ConfigFile: *webConfig},
		webHandler(m, reg, *statusValues, logger), logger)
	if err != nil {
		return err
	}
	defer stopServing()

	fmt.Fprintf(stdout, "odwatch demo: in-process Kafka at %s, topic %q, events topic %q\n", addr, topic, eventsTopic)
	fmt.Fprintf(stdout, "  payroll stream: %d clean records, then %.0f%% with a data-entry error (a percentage with a zero appended)\n", *clean, *errRate*100)
	fmt.Fprintf(stdout, "  window %d records, evaluated every %d, epsilon %g (margin %g)\n", *window, *every, *eps, *margin)
	if *metricsAddr != "" {
		tls := ""
		if *webConfig != "" {
			tls = " (https:// when the web config sets TLS)"
		}
		fmt.Fprintf(stdout, "  open http://%s/ for the status page%s; metrics at /metrics. Ctrl-C stops.\n\n", webAddr, tls)
	}

	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	// The generator stops with the monitor: a monitor that fails must not
	// leave the demo waiting for Ctrl-C.
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	genErr := make(chan error, 1)
	go func() {
		genErr <- stream.ProducePayroll(genCtx, stream.PayrollOptions{
			Brokers: []string{addr}, Topic: topic, Rate: *rate, Count: *count,
			CleanRecords: *clean, ErrorRate: *errRate, StopErrorsAfter: *stopAfter, Seed: *seed,
		})
	}()
	runErr := m.Run(ctx)
	stopGen()
	if err := <-genErr; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("payroll generator: %w", err)
	}
	if runErr != nil && ctx.Err() != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)) {
		runErr = nil
	}
	fmt.Fprintln(stdout, "odwatch demo: stopped")
	return runErr
}
