package main

import (
	"context"
	"errors"

	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream"
)

const runHelp = `Watches Kafka topics for approximate order and functional dependencies and
emits an event when one is discovered, violated, restored or retired. Every
flag can also be set in a YAML file given with --config (keys are the flag
names; flags win over the file): the README's Configuration table says which
keys are global and which per stream, deploy/examples has files to start
from. Required: --brokers and --topic (or a --config file naming them), and
--state-dir. Runs until interrupted.

Example (odwatch dev-broker runs a broker to try it on):
  odwatch run --brokers 127.0.0.1:9092 --topic payroll --state-dir /tmp/odwatch --events-topic odwatch-events
  odwatch run --config deploy/examples/odwatch-json.yaml

Exit status: 0 stopped by a signal, 1 failure, 2 usage or configuration error.`

// runRun is `odwatch run`: watch Kafka topics until interrupted.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newRunFlags("run")
	pos, err := parseArgs(f.fs, args, stdout)
	if err != nil {
		return err
	}
	if err := wantNoArgs(pos); err != nil {
		return err
	}
	s, err := f.settings()
	if err != nil {
		return configErr(err)
	}
	logger, err := newLogger(stderr, s.LogLevel, s.LogFormat)
	if err != nil {
		return err
	}
	for _, w := range s.warnings {
		logger.Warn(w)
	}
	cfg, err := s.monitorConfig()
	if err != nil {
		return configErr(err)
	}
	if err := ensureStateDir(logger, cfg.StateDir); err != nil {
		return err
	}
	reg := newRegistry()
	m, err := stream.NewMonitor(cfg, stream.Options{Logger: logger, Registerer: reg})
	if err != nil {
		return damageHint(err)
	}
	defer m.Close() // releases the store when Run is not reached; a no-op after Run
	webAddr, stopServing, err := serveWeb(webSettings{Addr: s.MetricsAddr, ConfigFile: s.WebConfigFile},
		webHandler(m, reg, s.statusValues(), logger), logger)
	if err != nil {
		return err
	}
	defer stopServing()
	if err := waitForKafka(ctx, logger, cfg, s.ConnectTimeout); err != nil {
		if ctx.Err() != nil {
			logger.Info("odwatch stopped before kafka answered")
			return nil
		}
		return err
	}
	logger.Info("odwatch running", "brokers", strings.Join(cfg.Brokers, ","), "streams", len(cfg.Streams), "state_dir", cfg.StateDir, "metrics_addr", webAddr)
	err = m.Run(ctx)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		logger.Info("odwatch stopped")
		return nil
	}
	return damageHint(err)
}

// damageHint adds to the error of a damaged state store how to recover.
func damageHint(err error) error {
	if errors.Is(err, state.ErrCorrupt) {
		return fmt.Errorf("%w (start with --rebuild-state to move it aside and rebuild it from Kafka)", err)
	}
	return err
}

// newRegistry is the process's metrics registry: odwatch's own collectors
// plus the Go runtime and process collectors operators expect.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErr(fmt.Sprintf("--log-level %q: want debug, info, warn or error", level), "for example --log-level info")
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErr(fmt.Sprintf("--log-format %q: want text or json", format), "for example --log-format json")
}
