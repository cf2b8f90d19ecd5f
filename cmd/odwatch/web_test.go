package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/odwatch/odwatch/stream"
)

// idleMonitor is a monitor that is never run: its status page lists its
// stream with nothing evaluated yet.
func idleMonitor(t *testing.T) *stream.Monitor {
	t.Helper()
	m, err := stream.NewMonitor(stream.Config{Brokers: []string{"127.0.0.1:1"}, StateDir: t.TempDir(),
		Streams: []stream.StreamConfig{{Name: "payroll", Topic: "payroll", Window: 100}}}, stream.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestWebConfigBasicAuth: with a web config that sets basic auth, the
// status page, its API and the metrics answer 401 without credentials or
// with wrong ones, and 200 with the right ones.
func TestWebConfigBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := newRegistry()
	logger := slog.New(slog.DiscardHandler)
	addr, stop, err := serveWeb(webSettings{Addr: "127.0.0.1:0", ConfigFile: cfg}, webHandler(idleMonitor(t), reg, true, logger), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path, user, pass string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, p := range []string{"/", "/api/streams", "/api/streams/payroll", "/streams/payroll", "/metrics"} {
		if code, _ := get(p, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", p, code)
		}
		if code, _ := get(p, "prometheus", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong password: %d, want 401", p, code)
		}
		code, body := get(p, "prometheus", "s3cret")
		if code != http.StatusOK {
			t.Errorf("GET %s with the right credentials: %d %s, want 200", p, code, body)
		}
	}
	if _, body := get("/api/streams", "prometheus", "s3cret"); !strings.Contains(body, `"name": "payroll"`) {
		t.Errorf("/api/streams: %s", body)
	}
	if _, body := get("/metrics", "prometheus", "s3cret"); !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics does not serve the registry")
	}
}

// TestWebConfigBad: a web config that does not load fails at start-up,
// naming the flag.
func TestWebConfigBad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("basic_auth_users: [not a map\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.yml")} {
		_, _, err := serveWeb(webSettings{Addr: "127.0.0.1:0", ConfigFile: path}, http.NotFoundHandler(), slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), "--web-config-file") {
			t.Errorf("web config %s: %v, want an error naming --web-config-file", path, err)
		}
	}
}

// TestStatusValuesSetting: --status-values defaults to true, and the
// config file and the flag can turn it off (the flag winning).
func TestStatusValuesSetting(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "odwatch.yaml")
	if err := os.WriteFile(cfg, []byte("brokers: [k:9092]\ntopic: t\nstatus-values: false\nweb-config-file: /etc/web.yml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--brokers", "k:9092", "--topic", "t"}, true},
		{[]string{"--brokers", "k:9092", "--topic", "t", "--status-values=false"}, false},
		{[]string{"--config", cfg}, false},
		{[]string{"--config", cfg, "--status-values=true"}, true},
	} {
		f := newRunFlags("run")
		f.fs.SetOutput(io.Discard)
		if err := f.fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		s, err := f.settings()
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := s.statusValues(); got != c.want {
			t.Errorf("%v: status values %v, want %v", c.args, got, c.want)
		}
		if c.args[0] == "--config" && s.WebConfigFile != "/etc/web.yml" {
			t.Errorf("%v: web config file %q from the config file", c.args, s.WebConfigFile)
		}
	}
}

// TestWebConfigTLS: a web config with a certificate serves the status
// page over HTTPS only.
func TestWebConfigTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "odwatch"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, cfg := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "web.yml")
	for path, data := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		cfg:      []byte("tls_server_config:\n  cert_file: " + certFile + "\n  key_file: " + keyFile + "\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.DiscardHandler)
	addr, stop, err := serveWeb(webSettings{Addr: "127.0.0.1:0", ConfigFile: cfg}, webHandler(idleMonitor(t), newRegistry(), true, logger), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Get("https://" + addr + "/api/streams")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET https://.../api/streams: %d, want 200", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + addr + "/api/streams"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200 on a TLS address")
		}
	}
}
