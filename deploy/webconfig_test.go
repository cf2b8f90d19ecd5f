package deploy

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

const webConfigFile = "deploy/web-config.yml"

// TestComposeWebConfig: the compose stack serves odwatch's port through
// its web config (mounted where odwatch.yaml's web-config-file points),
// and Prometheus scrapes odwatch with credentials the web config accepts.
func TestComposeWebConfig(t *testing.T) {
	var ocfg struct {
		WebConfigFile string `yaml:"web-config-file"`
	}
	decodeYAML(t, odwatchConfig, &ocfg)
	if ocfg.WebConfigFile == "" {
		t.Fatalf("%s sets no web-config-file: the published port 9464 would serve record values to anyone", odwatchConfig)
	}
	c := loadCompose(t, composeFile)
	mounted := false
	for _, v := range c.Services["odwatch"].Volumes {
		src, dst, err := parseVolume(v)
		if err == nil && dst == ocfg.WebConfigFile && src == "./"+webConfigFile {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("service odwatch does not mount ./%s at %s", webConfigFile, ocfg.WebConfigFile)
	}

	var web struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	decodeYAML(t, webConfigFile, &web)
	var prom struct {
		ScrapeConfigs []struct {
			JobName   string `yaml:"job_name"`
			BasicAuth struct {
				Username string `yaml:"username"`
				Password string `yaml:"password"`
			} `yaml:"basic_auth"`
		} `yaml:"scrape_configs"`
	}
	decodeYAML(t, prometheusConfig, &prom)
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName != "odwatch" {
			continue
		}
		hash, ok := web.Users[sc.BasicAuth.Username]
		if !ok {
			t.Fatalf("%s: job odwatch scrapes as %q, a user %s does not have", prometheusConfig, sc.BasicAuth.Username, webConfigFile)
		}
		if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(sc.BasicAuth.Password)); err != nil {
			t.Errorf("%s: job odwatch's password does not match %s's hash for %s: %v", prometheusConfig, webConfigFile, sc.BasicAuth.Username, err)
		}
		return
	}
	t.Errorf("%s: no odwatch job", prometheusConfig)
}
