package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// requiredVar is a compose variable that must be set: ${NAME:?message}.
var requiredVar = regexp.MustCompile(`^\$\{[A-Z_]+:\?[^}]+\}$`)

// TestComposeSafeOnASharedHost: the compose stack publishes every port on
// the loopback interface only, takes every password from the .env file the
// user creates (compose refuses to start without it; none is committed,
// .gitignore lists it), has a healthcheck on every long-running service,
// and none of the known unsafe defaults (Prometheus' lifecycle API, Grafana's
// admin/admin or anonymous access, a committed demo password).
func TestComposeSafeOnASharedHost(t *testing.T) {
	c := loadCompose(t, composeFile)
	for _, name := range sortedKeys(c.Services) {
		s := c.Services[name]
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q on every interface; want 127.0.0.1:HOST:CONTAINER", name, p)
			}
		}
		oneShot := s.Restart == "no"
		if !oneShot && len(s.Healthcheck.Test) < 2 {
			t.Errorf("service %s runs for good but has no healthcheck", name)
		}
		for k, v := range s.Environment {
			if strings.Contains(k, "PASSWORD") && !requiredVar.MatchString(v) {
				t.Errorf("service %s: %s = %q, want ${VAR:?message} from .env", name, k, v)
			}
		}
		if s.Environment["GF_AUTH_ANONYMOUS_ENABLED"] == "true" {
			t.Errorf("service %s lets anonymous users in", name)
		}
		if strings.HasPrefix(s.Image, "grafana/") && s.Environment["GF_SECURITY_ADMIN_PASSWORD"] == "" {
			t.Errorf("service %s keeps Grafana's admin/admin", name)
		}
		if slices.ContainsFunc(composeCommand(t, name, s.Command), func(a string) bool { return strings.Contains(a, "web.enable-lifecycle") }) {
			t.Errorf("service %s enables Prometheus' lifecycle API (reload and quit over HTTP)", name)
		}
	}
	raw, err := os.ReadFile(repoPath(composeFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"admin/admin", "odwatch-demo"} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("%s mentions %q", composeFile, bad)
		}
	}
	ignore, err := os.ReadFile(repoPath(".gitignore"))
	if err != nil || !slices.Contains(strings.Split(string(ignore), "\n"), "/.env") {
		t.Errorf(".gitignore does not list /.env (%v)", err)
	}
	if _, err := os.Stat(repoPath("deploy/web-config.yml")); err == nil {
		t.Error("deploy/web-config.yml is back: the web config is written from .env at start-up")
	}
}

// TestDockerfileExample: the Dockerfile's example builds the image under
// the name the README uses and mounts files that exist where its command
// reads them.
func TestDockerfileExample(t *testing.T) {
	df, err := os.ReadFile(repoPath("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(repoPath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var example []string
	for _, l := range strings.Split(string(df), "\n") {
		if l, ok := strings.CutPrefix(l, "#   "); ok && (strings.HasPrefix(l, "docker ") || strings.HasPrefix(l, "  ")) {
			example = append(example, strings.TrimSpace(strings.TrimSuffix(l, `\`)))
		}
	}
	text := strings.Join(example, " ")
	build := regexp.MustCompile(`docker build -t (\S+) \.`).FindStringSubmatch(text)
	if build == nil {
		t.Fatalf("the Dockerfile's example builds no image: %q", text)
	}
	image := build[1]
	if !strings.Contains(string(readme), "docker build -t "+image+" .") {
		t.Errorf("the Dockerfile builds %s; the README does not (docker build -t %s .)", image, image)
	}
	mounts := regexp.MustCompile(`-v "\$PWD/([^:"]+):([^:"]+):ro"`).FindAllStringSubmatch(text, -1)
	if len(mounts) == 0 {
		t.Fatalf("the Dockerfile's example mounts no config: %q", text)
	}
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
			t.Errorf("the Dockerfile's example mounts %s: %v", m[1], err)
		}
		if !strings.Contains(text, image+" run --config "+m[2]) {
			t.Errorf("the Dockerfile's example mounts %s at %s but does not run %s run --config %s", m[1], m[2], image, m[2])
		}
	}
	if !strings.Contains(string(df), `CMD ["help"]`) {
		t.Error("the image's default command names a config the image does not hold; want CMD [\"help\"]")
	}
}
