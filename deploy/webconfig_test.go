package deploy

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// TestComposeWebConfig: the compose stack's basic auth is one chain: the
// odwatch-secrets service writes the web config and the password into the
// odwatch-secrets volume, odwatch reads the web config (odwatch.yaml's
// web-config-file) and its healthcheck the password from where it mounts
// that volume, and Prometheus scrapes with the password file from where it
// mounts it. (cli_test runs odwatch web-config and checks the hash.)
func TestComposeWebConfig(t *testing.T) {
	var ocfg struct {
		WebConfigFile string `yaml:"web-config-file"`
	}
	decodeYAML(t, odwatchConfig, &ocfg)
	if ocfg.WebConfigFile == "" {
		t.Fatalf("%s sets no web-config-file: port 9464 would serve record values without a password", odwatchConfig)
	}
	c := loadCompose(t, composeFile)
	secretsAt := func(service string) string { // where service mounts the odwatch-secrets volume
		for _, v := range c.Services[service].Volumes {
			if src, dst, err := parseVolume(v); err == nil && src == "odwatch-secrets" {
				return dst
			}
		}
		t.Errorf("service %s does not mount the odwatch-secrets volume", service)
		return "/nowhere"
	}
	writer := composeCommand(t, "odwatch-secrets", c.Services["odwatch-secrets"].Command)
	if i := slices.Index(writer, "--out"); i < 0 || i+1 >= len(writer) || writer[i+1] != secretsAt("odwatch-secrets") {
		t.Errorf("odwatch-secrets writes to %v, not where it mounts the volume", writer)
	}
	if dir := secretsAt("odwatch"); ocfg.WebConfigFile != path.Join(dir, "web-config.yml") {
		t.Errorf("%s: web-config-file %s, want %s/web-config.yml (the odwatch-secrets volume)", odwatchConfig, ocfg.WebConfigFile, dir)
	}
	if hc := strings.Join(c.Services["odwatch"].Healthcheck.Test, " "); !strings.Contains(hc, "--password-file "+path.Join(secretsAt("odwatch"), "password")) {
		t.Errorf("odwatch's healthcheck %q does not read the password from the secrets volume", hc)
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName   string `yaml:"job_name"`
			BasicAuth struct {
				Username     string `yaml:"username"`
				Password     string `yaml:"password"`
				PasswordFile string `yaml:"password_file"`
			} `yaml:"basic_auth"`
		} `yaml:"scrape_configs"`
	}
	decodeYAML(t, prometheusConfig, &prom)
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName != "odwatch" {
			continue
		}
		if sc.BasicAuth.Password != "" || sc.BasicAuth.PasswordFile != path.Join(secretsAt("prometheus"), "password") {
			t.Errorf("%s: job odwatch's basic_auth %+v, want password_file in the secrets volume and no password", prometheusConfig, sc.BasicAuth)
		}
		if want := flagValue(writer, "--user"); sc.BasicAuth.Username != want {
			t.Errorf("%s: job odwatch scrapes as %q, odwatch-secrets writes user %q", prometheusConfig, sc.BasicAuth.Username, want)
		}
		return
	}
	t.Errorf("%s: no odwatch job", prometheusConfig)
}

// flagValue is the value after flag in args, or "".
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
