package deploy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// TestCLIAcceptsDeployFiles builds the odwatch binary and checks that what
// the deployment files tell it is something it understands: every flag the
// compose services pass exists, and `odwatch run` starts (config parsed with
// unknown keys rejected, streams validated, pinned dependencies and schema
// files read, state store opened) with deploy/odwatch.yaml and every example
// config, then exits 0 on SIGTERM as `docker stop` expects.
func TestCLIAcceptsDeployFiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the odwatch binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "odwatch")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/odwatch")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/odwatch: %v\n%s", err, out)
	}

	t.Run("compose flags", func(t *testing.T) {
		c := loadCompose(t, composeFile)
		checked := 0
		for _, name := range sortedKeys(c.Services) {
			s := c.Services[name]
			if s.Build == nil {
				continue // not the odwatch image
			}
			args := composeCommand(t, name, s.Command)
			if len(args) == 0 {
				t.Errorf("service %s: no command (the image's default is run --config)", name)
				continue
			}
			help, _ := exec.Command(bin, args[0], "-h").CombinedOutput()
			for _, a := range args[1:] {
				flag, ok := strings.CutPrefix(a, "--")
				if !ok {
					continue
				}
				flag, _, _ = strings.Cut(flag, "=")
				if !helpHasFlag(string(help), flag) {
					t.Errorf("service %s: odwatch %s has no flag --%s:\n%s", name, args[0], flag, help)
				}
				checked++
			}
		}
		if checked == 0 {
			t.Error("no odwatch flags found in the compose services")
		}
	})

	// TLS and SASL material for the example that points at a secured
	// cluster; passing it to every run is harmless (nothing connects).
	ca := filepath.Join(tmp, "ca.pem")
	writeSelfSignedCA(t, ca)
	pw := filepath.Join(tmp, "sasl-password")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	webConfigFile := writeWebConfig(t, bin)
	configs, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	configs = append([]string{repoPath(odwatchConfig)}, configs...)
	for _, cfg := range configs {
		rel, err := filepath.Rel(repoRoot, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			runUntilStarted(t, bin, "run", "--config", rel,
				"--brokers", "127.0.0.1:1", "--state-dir", t.TempDir(), "--metrics-addr", "127.0.0.1:0",
				"--tls-ca", ca, "--sasl-password-file", pw,
				// The compose config names the web config's path in the
				// container; this is the same file in the repository.
				"--web-config-file", webConfigFile)
		})
	}
}

// writeWebConfig runs odwatch web-config as the compose stack's
// odwatch-secrets service does and checks that the hash it writes accepts
// the password it writes beside it; it returns the web config's path.
func writeWebConfig(t *testing.T, bin string) string {
	t.Helper()
	web := t.TempDir()
	gen := exec.Command(bin, "web-config", "--user", "odwatch", "--password-env", "ODWATCH_WEB_PASSWORD", "--out", web)
	gen.Env = append(os.Environ(), "ODWATCH_WEB_PASSWORD=test-password")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("odwatch web-config: %v\n%s", err, out)
	}
	webConfigFile := filepath.Join(web, "web-config.yml")
	checkWebConfig(t, webConfigFile, filepath.Join(web, "password"))
	return webConfigFile
}

// checkWebConfig: the web config's only user has a bcrypt hash of the
// password in passwordFile.
func checkWebConfig(t *testing.T, webConfigFile, passwordFile string) {
	t.Helper()
	var web struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	b, err := os.ReadFile(webConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &web); err != nil {
		t.Fatal(err)
	}
	pass, err := os.ReadFile(passwordFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(web.Users) != 1 || bcrypt.CompareHashAndPassword([]byte(web.Users["odwatch"]), pass) != nil || string(pass) != "test-password" {
		t.Errorf("web config %s does not accept user odwatch with the password written beside it:\n%s", webConfigFile, b)
	}
}

// helpHasFlag reports whether a subcommand's -h output lists the flag, in
// either the one-dash or the two-dash help style.
func helpHasFlag(help, flag string) bool {
	for _, dash := range []string{"  -", "  --"} {
		for _, end := range []string{" ", "\n"} {
			if strings.Contains(help, dash+flag+end) {
				return true
			}
		}
	}
	return false
}

// composeCommand returns a service's command as an argument list.
func composeCommand(t *testing.T, service string, cmd any) []string {
	t.Helper()
	switch c := cmd.(type) {
	case nil:
		return nil
	case string:
		return strings.Fields(c)
	case []any:
		var out []string
		for _, a := range c {
			s, ok := a.(string)
			if !ok {
				t.Fatalf("service %s: command element %v is not a string", service, a)
			}
			out = append(out, s)
		}
		return out
	}
	t.Fatalf("service %s: command %v: unexpected form", service, cmd)
	return nil
}

// runUntilStarted runs odwatch from the repository root until it logs that
// it is running, then stops it with SIGTERM and expects exit status 0.
func runUntilStarted(t *testing.T, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repoRoot
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		log bytes.Buffer
	)
	started := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			// Configured, store open: run then waits for Kafka (here
			// 127.0.0.1:1, which never answers), up to --connect-timeout.
			if strings.Contains(sc.Text(), "waiting for kafka") || strings.Contains(sc.Text(), "odwatch running") {
				once.Do(func() { close(started) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
	select {
	case <-started:
	case <-scanned:
		err := cmd.Wait()
		t.Fatalf("odwatch %s exited before running (%v):\n%s", strings.Join(args, " "), err, output())
	case <-ctx.Done():
		t.Fatalf("odwatch %s did not report running within the deadline:\n%s", strings.Join(args, " "), output())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-scanned
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("odwatch did not stop within the deadline after SIGTERM:\n%s", output())
	case errors.As(err, &exit):
		t.Errorf("odwatch exited with %v after SIGTERM, want 0:\n%s", err, output())
	case err != nil:
		t.Fatal(err)
	}
}

// writeSelfSignedCA writes a throwaway CA certificate in PEM to path.
func writeSelfSignedCA(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "odwatch deploy test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}
