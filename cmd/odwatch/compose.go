package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/crypto/bcrypt"
)

// Two small commands for container deployments, whose image has no shell
// (docker-compose.yml): web-config writes the basic-auth web config from a
// password in the environment, probe is a healthcheck.

const webConfigHelp = `Writes an exporter-toolkit web config (the format of --web-config-file,
and of Prometheus' and Alertmanager's --web.config.file) that asks for basic
auth as --user with the password in the environment variable --password-env,
stored as a bcrypt hash: DIR/web-config.yml. The password itself goes to
DIR/password, for a scraper's password_file and for odwatch probe. Refuses an
empty or unset password.

Example (docker-compose.yml's odwatch-secrets service, the password in
$ODWATCH_WEB_PASSWORD):
  odwatch web-config --user odwatch --password-env ODWATCH_WEB_PASSWORD --out /etc/odwatch/secrets

Exit status: 0 written, 1 failure, 2 usage error.`

// webConfigCost is the bcrypt cost of the hash: bcrypt's default, as
// htpasswd -B uses.
const webConfigCost = bcrypt.DefaultCost

func runWebConfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("web-config", "--password-env NAME --out DIR [flags]", webConfigHelp)
	user := fs.String("user", "odwatch", "basic-auth user name")
	env := fs.String("password-env", "", "environment variable holding the password (required)")
	out := fs.String("out", "", "directory to write web-config.yml and password to (required)")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := wantNoArgs(pos); err != nil {
		return err
	}
	if *env == "" || *out == "" {
		return usageErr("--password-env and --out are required", "for example --password-env ODWATCH_WEB_PASSWORD --out /etc/odwatch/secrets")
	}
	pass := os.Getenv(*env)
	if pass == "" {
		return usageErr(fmt.Sprintf("$%s is empty or unset", *env), "set it, e.g. in the .env file docker compose reads (see the README, Deploy)")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), webConfigCost)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf("# Written by odwatch web-config from $%s; do not edit.\nbasic_auth_users:\n  %s: %s\n", *env, *user, hash)
	// 0644: Prometheus reads the password as another user of its own.
	if err := os.WriteFile(filepath.Join(*out, "web-config.yml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "password"), []byte(pass), 0o644)
}

const probeHelp = `A healthcheck for an image without a shell: GET URL and exit 0 on a 2xx
answer, or with --brokers, ask the brokers for their metadata and exit 0
when they answer. Otherwise one line saying what failed, and exit 1.

Example (docker-compose.yml's healthchecks):
  odwatch probe --user odwatch --password-file /etc/odwatch/secrets/password http://127.0.0.1:9464/readyz
  odwatch probe --brokers kafka:9092

Exit status: 0 healthy, 1 not, 2 usage error.`

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("probe", "URL [flags] | --brokers HOST:PORT", probeHelp)
	user := fs.String("user", "", "basic-auth user")
	passFile := fs.String("password-file", "", "file holding the basic-auth password")
	var brokers listFlag
	fs.Var(&brokers, "brokers", "probe these Kafka brokers instead of a URL")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if len(brokers) > 0 {
		c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: *timeout}
		if _, err := c.Metadata(ctx, &kafka.MetadataRequest{}); err != nil {
			return fmt.Errorf("kafka at %s: %w", strings.Join(brokers, ","), err)
		}
		return nil
	}
	if len(pos) != 1 {
		return usageErr("want one URL, or --brokers", "for example odwatch probe http://127.0.0.1:9464/healthz")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pos[0], nil)
	if err != nil {
		return usageErr(err.Error(), "for example http://127.0.0.1:9464/healthz")
	}
	if *passFile != "" {
		b, err := os.ReadFile(*passFile)
		if err != nil {
			return inputErr(err, "--password-file names the file odwatch web-config wrote")
		}
		req.SetBasicAuth(*user, strings.TrimRight(string(b), "\r\n"))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", pos[0], res.Status)
	}
	return nil
}
