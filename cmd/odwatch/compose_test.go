package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// TestWebConfigAndProbe: web-config writes a web config whose hash accepts
// the password of the environment, written beside it, and refuses an unset
// one; probe passes a server that wants that password, and fails (exit 1,
// one line) on a wrong one and on brokers that do not answer.
func TestWebConfigAndProbe(t *testing.T) {
	dir := t.TempDir()
	var out, errOut strings.Builder
	if code := run([]string{"web-config", "--password-env", "ODWATCH_TEST_UNSET_PASSWORD", "--out", dir}, &out, &errOut); code != exitUsage ||
		!strings.Contains(errOut.String(), "$ODWATCH_TEST_UNSET_PASSWORD is empty or unset") {
		t.Errorf("unset password: exit %d, %q", code, errOut.String())
	}
	t.Setenv("ODWATCH_TEST_PASSWORD", "s3cret")
	if code := run([]string{"web-config", "--password-env", "ODWATCH_TEST_PASSWORD", "--out", dir}, &out, &errOut); code != exitOK {
		t.Fatalf("web-config: exit %d, %s", code, errOut.String())
	}
	var web struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "web-config.yml"))
	if err := yaml.Unmarshal(b, &web); err != nil || bcrypt.CompareHashAndPassword([]byte(web.Users["odwatch"]), []byte("s3cret")) != nil {
		t.Errorf("web config %s (%v) does not accept odwatch/s3cret", b, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "odwatch" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	pass := filepath.Join(dir, "password")
	if code := run([]string{"probe", "--user", "odwatch", "--password-file", pass, srv.URL}, &out, &errOut); code != exitOK {
		t.Errorf("probe with the password: exit %d, %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"probe", srv.URL}, &out, &errOut); code != exitFailure || !strings.Contains(errOut.String(), "401") {
		t.Errorf("probe without the password: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"probe", "--brokers", "127.0.0.1:1"}, &out, &errOut); code != exitFailure || !strings.Contains(errOut.String(), "kafka at 127.0.0.1:1") {
		t.Errorf("probe of no broker: exit %d, %q", code, errOut.String())
	}
}
