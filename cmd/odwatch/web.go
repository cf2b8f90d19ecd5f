package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/odwatch/odwatch/stream"
	"github.com/odwatch/odwatch/stream/status"
)

// webSettings are the flags of the metrics address shared by run and demo.
type webSettings struct {
	Addr string
	// ConfigFile is an exporter-toolkit web config (TLS, basic auth with
	// bcrypt hashes); empty serves plain HTTP to anyone who can connect.
	ConfigFile string
}

// webHandler serves the status page and its API at / and /api/, and
// /metrics, /healthz and /readyz.
func webHandler(m *stream.Monitor, g prometheus.Gatherer, values bool, logger *slog.Logger) http.Handler {
	health := stream.HealthHandler(m, g)
	mux := http.NewServeMux()
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		mux.Handle(p, health)
	}
	mux.Handle("/", status.Handler(m, status.Options{Values: values, Logger: logger}))
	return mux
}

// serveWeb serves h on ws.Addr (nothing when it is empty), through the web
// config file when one is set: the way Prometheus exporters do, it applies
// to every path of the address. A busy or bad address, or a web config
// that does not load, is a start-up error naming its flag. addr is the
// address bound (with the port chosen for ":0").
func serveWeb(ws webSettings, h http.Handler, logger *slog.Logger) (addr string, stop func(), err error) {
	if ws.Addr == "" {
		return "", func() {}, nil
	}
	if ws.ConfigFile != "" {
		if err := web.Validate(ws.ConfigFile); err != nil {
			return "", nil, fmt.Errorf("--web-config-file %s: %w", ws.ConfigFile, err)
		}
	}
	ln, err := net.Listen("tcp", ws.Addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr %s: %w", ws.Addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &[]string{ws.Addr}, WebSystemdSocket: &systemd, WebConfigFile: &ws.ConfigFile}
	go func() {
		if err := web.Serve(ln, srv, flags, logger); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "err", err)
		}
	}()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
