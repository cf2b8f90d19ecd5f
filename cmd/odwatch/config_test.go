package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/odwatch/odwatch/stream"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// monitorConfigOf is the monitor configuration of run's args.
func monitorConfigOf(t *testing.T, args ...string) stream.Config {
	t.Helper()
	s, err := parseRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.monitorConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func parseRun(t *testing.T, args ...string) (runSettings, error) {
	t.Helper()
	f := newRunFlags("run")
	f.fs.SetOutput(&strings.Builder{})
	if err := f.fs.Parse(args); err != nil {
		return runSettings{}, err
	}
	return f.settings()
}

func TestRunSettingsFlagsOnly(t *testing.T) {
	s, err := parseRun(t, "--brokers", "a:9092,b:9092", "--topic", "payroll", "--window", "500", "--every", "100",
		"--epsilon", "0.05", "--state-dir", "/tmp/x", "--events-topic", "ev", "--state-topic", "st", "--min-score", "0.02", "--pin", "{}: salary ~ tax (asc)")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.monitorConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Brokers, ","); got != "a:9092,b:9092" {
		t.Errorf("brokers = %q", got)
	}
	st := cfg.Streams[0]
	if st.Topic != "payroll" || st.Name != "payroll" || st.Window != 500 || st.Every != 100 || st.Epsilon != 0.05 || len(st.Pinned) != 1 {
		t.Errorf("stream = %+v", st)
	}
	if st.MinScore != 0.02 {
		t.Errorf("min-score = %v", st.MinScore)
	}
	if st.Margin != stream.AutoMargin || st.MaxLevel != stream.DefaultMaxLevel || st.DiscoverAfter != stream.DefaultDiscoverAfter {
		t.Errorf("margin %v, max-level %d, discover-after %d; want the stream defaults auto, %d, %d",
			st.Margin, st.MaxLevel, st.DiscoverAfter, stream.DefaultMaxLevel, stream.DefaultDiscoverAfter)
	}
	if cfg.EventsTopic != "ev" || cfg.StateTopic != "st" || cfg.Group != "odwatch" {
		t.Errorf("config = %+v", cfg)
	}
}

func TestRunSettingsFileAndFlagsWin(t *testing.T) {
	file := writeFile(t, "odwatch.yaml", `
brokers: [k1:9092]
group: g1
state-dir: /var/lib/odwatch
events-topic: events
streams:
  - name: pay
    topic: payroll
    window: 2000
    every: 1000
    epsilon: 0
  - topic: orders
    window: 300
`)
	s, err := parseRun(t, "--config", file, "--group", "g2", "--margin", "0.01")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.monitorConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Group != "g2" || cfg.StateDir != "/var/lib/odwatch" || cfg.EventsTopic != "events" {
		t.Errorf("config = %+v", cfg)
	}
	if len(cfg.Streams) != 2 {
		t.Fatalf("streams = %d", len(cfg.Streams))
	}
	a, b := cfg.Streams[0], cfg.Streams[1]
	if a.Name != "pay" || a.Epsilon != 0 || a.Every != 1000 || a.Margin != 0.01 {
		t.Errorf("stream 0 = %+v (an explicit epsilon: 0 must stay 0)", a)
	}
	if b.Name != "orders" || b.Epsilon != defaultEpsilon || b.Every != 300 || b.Margin != 0.01 {
		t.Errorf("stream 1 = %+v", b)
	}
}

func TestRunSettingsErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		file string
		args []string
		want string
	}{
		{name: "unknown key", file: "brokers: [a:1]\nwindwo: 5\n", want: "windwo"},
		{name: "missing brokers", args: []string{"--topic", "t", "--state-dir", "/x"}, want: "brokers"},
		{name: "missing topic", args: []string{"--brokers", "a:1", "--state-dir", "/x"}, want: "topic"},
		{name: "bad epsilon", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--epsilon", "1.5"}, want: "epsilon"},
		{name: "bad format", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--record-format", "xml"}, want: "format"},
		{name: "avro without schema", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--record-format", "avro"}, want: "schema"},
		{name: "bad min-score", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--min-score", "2"}, want: "min-score"},
		{name: "bad pin", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--pin", "{a: b"}, want: "pinned"},
		{name: "topic flag with many streams", file: "brokers: [a:1]\nstate-dir: /x\nstreams:\n - topic: a\n - topic: b\n", args: []string{"--topic", "c"}, want: "--topic"},
		{name: "sasl without user", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--sasl-mechanism", "plain"}, want: "sasl-username"},
		{name: "bad sasl mechanism", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--sasl-mechanism", "gssapi", "--sasl-username", "u"}, want: "sasl-mechanism"},
		{name: "missing tls ca", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--tls-ca", "/nonexistent/ca.pem"}, want: "tls-ca"},
		{name: "bad session-timeout", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--session-timeout", "-1s"}, want: "session-timeout"},
		{name: "heartbeat above session", file: "brokers: [a:1]\nstate-dir: /x\ntopic: t\nheartbeat-interval: 10s\n", want: "heartbeat-interval"},
		{name: "bad rebalance-timeout", file: "brokers: [a:1]\nstate-dir: /x\ntopic: t\nrebalance-timeout: -5s\n", want: "rebalance-timeout"},
		{name: "discover-every with interval", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--interval", "1m", "--discover-every", "20000"}, want: "discover-every"},
		{name: "discover-every with an ordinal list", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--every", "1000", "--discover-every", "5000", "--ordinal", "size=S,M,L"}, want: "discover-every"},
		{name: "bad discover-every", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--discover-every", "0"}, want: "discover-every"},
		{name: "bad discover-every in the file", file: "brokers: [a:1]\nstate-dir: /x\ntopic: t\ndiscover-every: often\n", want: "discover-every"},
		{name: "every above window", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--window", "100", "--every", "300"}, want: "every: must be at most window (100), not 300"},
		{name: "cert without key", args: []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--tls-cert", "/c.pem"}, want: "tls-cert"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, "c.yaml", tc.file)}, args...)
			}
			s, err := parseRun(t, args...)
			if err == nil {
				_, err = s.monitorConfig()
			}
			if err == nil {
				t.Fatalf("no error, want one naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

func TestSASLDialer(t *testing.T) {
	pw := writeFile(t, "pw", "s3cret\n")
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		s, err := parseRun(t, "--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--tls",
			"--sasl-mechanism", mech, "--sasl-username", "u", "--sasl-password-file", pw)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := s.monitorConfig()
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if cfg.Dialer == nil || cfg.Dialer.SASLMechanism == nil || cfg.Dialer.TLS == nil {
			t.Fatalf("%s: dialer = %+v", mech, cfg.Dialer)
		}
		if got := strings.ToLower(cfg.Dialer.SASLMechanism.Name()); got != mech {
			t.Errorf("mechanism = %q, want %q", got, mech)
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"run", "--no-such-flag"}, &out, &errOut); code != 2 {
		t.Errorf("exit code = %d, want 2", code)
	}
	if code := run([]string{"nope"}, &out, &errOut); code != 2 {
		t.Errorf("exit code = %d, want 2", code)
	}
	err := runRun(t.Context(), []string{"--brokers", "a:1", "--topic", "t"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "state-dir") {
		t.Errorf("err = %v, want one naming state-dir", err)
	}
	if errors.Is(err, errUsage) {
		t.Logf("config errors are start-up errors (exit 1): %v", err)
	}
}

// TestRunSettingsStreamDefaults: margin, max-level and discover-after keys
// left out of the file take the stream defaults; 0 and a number are kept.
func TestRunSettingsStreamDefaults(t *testing.T) {
	file := writeFile(t, "odwatch.yaml", `
brokers: [k1:9092]
state-dir: /var/lib/odwatch
streams:
  - topic: a
  - topic: b
    margin: 0.02
    max-level: 0
    discover-after: 1
  - topic: c
    margin: auto
`)
	cfg := monitorConfigOf(t, "--config", file)
	a, b, c := cfg.Streams[0], cfg.Streams[1], cfg.Streams[2]
	if a.Margin != stream.AutoMargin || a.MaxLevel != stream.DefaultMaxLevel || a.DiscoverAfter != stream.DefaultDiscoverAfter {
		t.Errorf("stream a = %+v, want the defaults", a)
	}
	if b.Margin != 0.02 || b.MaxLevel != 0 || b.DiscoverAfter != 1 {
		t.Errorf("stream b = %+v, want margin 0.02, max-level 0, discover-after 1", b)
	}
	if c.Margin != stream.AutoMargin {
		t.Errorf("stream c margin %v, want auto", c.Margin)
	}
}

// TestRunSettingsTyping: ordinal, order-text and min-strength reach the
// stream's configuration from the flags and from the file (a list of
// COL[=v1,...] strings), the flags winning; a bad declaration names its
// field.
func TestRunSettingsTyping(t *testing.T) {
	s, err := parseRun(t, "--brokers", "k:9092", "--state-dir", "/tmp/x", "--topic", "t", "--ordinal", "size=S,M,L", "--ordinal", "code", "--min-strength", "0.7")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.monitorConfig()
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.Streams[0]
	if st.MinStrength != 0.7 || st.Typing.OrderText || strings.Join(st.Typing.Ordinal["size"], ",") != "S,M,L" || st.Typing.Ordinal["code"] != nil {
		t.Errorf("flags: min-strength %v, typing %+v", st.MinStrength, st.Typing)
	}
	if _, ok := st.Typing.Ordinal["code"]; !ok {
		t.Errorf("flags: code not declared: %+v", st.Typing)
	}

	file := writeFile(t, "odwatch.yaml", `
brokers: [k:9092]
state-dir: /tmp/x
topic: t
order-text: true
min-strength: 0
ordinal: ["grade=low,mid,high"]
`)
	s, err = parseRun(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = s.monitorConfig(); err != nil {
		t.Fatal(err)
	}
	st = cfg.Streams[0]
	if st.MinStrength != 0 || !st.Typing.OrderText || strings.Join(st.Typing.Ordinal["grade"], ",") != "low,mid,high" {
		t.Errorf("file: min-strength %v, typing %+v", st.MinStrength, st.Typing)
	}

	s, err = parseRun(t, "--brokers", "k:9092", "--state-dir", "/tmp/x", "--topic", "t")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = s.monitorConfig(); err != nil {
		t.Fatal(err)
	}
	if cfg.Streams[0].MinStrength != 0.5 {
		t.Errorf("default min-strength %v, want 0.5", cfg.Streams[0].MinStrength)
	}

	file = writeFile(t, "bad.yaml", "brokers: [k:9092]\nstate-dir: /tmp/x\ntopic: t\nordinal: [\"=x\"]\n")
	if s, err = parseRun(t, "--config", file); err == nil {
		_, err = s.monitorConfig()
	}
	if err == nil || !strings.Contains(err.Error(), "ordinal") {
		t.Errorf("bad ordinal: err %v, want it to name ordinal", err)
	}
}

// TestRunFlagsAllOverrideTheFile: every flag of `odwatch run` but --config
// has exactly one override of a config file key (a flag missing there
// would be silently ignored whenever --config is given), and every
// override names a flag.
func TestRunFlagsAllOverrideTheFile(t *testing.T) {
	f := newRunFlags("run")
	overrides := map[string]int{}
	for _, o := range globalOverrides() {
		overrides[o.name]++
	}
	for _, o := range streamOverrides() {
		overrides[o.name]++
	}
	f.fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name != "config" && overrides[fl.Name] != 1 {
			t.Errorf("--%s has %d overrides of the config file, want 1", fl.Name, overrides[fl.Name])
		}
	})
	for name := range overrides {
		if f.fs.Lookup(name) == nil {
			t.Errorf("override %q names no flag", name)
		}
	}
}

// TestRunSettingsFileStreams: the file's streams are its streams: list or
// its top-level stream keys, not both; a flag naming one stream does not
// apply to a list; flags left unset keep the file's keys and fill the
// missing ones with the flag defaults.
func TestRunSettingsFileStreams(t *testing.T) {
	_, err := parseRun(t, "--config", writeFile(t, "c.yaml", "topic: a\nstreams:\n - topic: b\n"))
	if err == nil || !strings.Contains(err.Error(), "topic: set either") {
		t.Errorf("top-level topic and streams: err %v, want one naming topic", err)
	}
	_, err = parseRun(t, "--config", writeFile(t, "c.yaml", "streams:\n - topic: b\n"), "--schema", "s.avsc")
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--schema") {
		t.Errorf("--schema over a streams list: err %v, want a usage error naming --schema", err)
	}
	s, err := parseRun(t, "--config", writeFile(t, "c.yaml", "topic: a\nwindow: 7\nformat: avro\nlog-level: debug\n"), "--sample", "9", "--metrics-addr", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Topic != "a" || s.Window != 7 || s.Format != "avro" || s.Sample != 9 || *s.Epsilon != defaultEpsilon || s.K != 0 {
		t.Errorf("stream = %+v, want the file's topic, window and format, --sample 9, default epsilon, k unset", s.streamSettings)
	}
	if s.LogLevel != "debug" || s.LogFormat != "text" || s.Group != "odwatch" || s.MetricsAddr != "" {
		t.Errorf("log %q %q group %q metrics %q, want the file's level, the default format and group, --metrics-addr empty", s.LogLevel, s.LogFormat, s.Group, s.MetricsAddr)
	}
}

// TestRunSettingsDiscoverEveryDefault: discover-every defaults to auto,
// bounded by the window (rounded up to a multiple of every); a time window or an ordinal
// value list, which the incremental checks do not support, runs discovery
// at every evaluation instead of failing a config that never named
// discover-every.
func TestRunSettingsDiscoverEveryDefault(t *testing.T) {
	base := []string{"--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--window", "10000"}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{name: "sliding", args: []string{"--every", "1000"}, want: 10000},
		{name: "every not dividing the window", args: []string{"--every", "3000"}, want: 12000},
		{name: "tumbling", want: 10000},
		{name: "explicit", args: []string{"--every", "1000", "--discover-every", "2000"}, want: 2000},
		{name: "auto", args: []string{"--every", "1000", "--discover-every", "auto"}, want: 10000},
		{name: "interval", args: []string{"--interval", "1m"}, want: 10000},
		{name: "ordinal list", args: []string{"--every", "1000", "--ordinal", "size=S,M,L"}, want: 1000},
		{name: "ordinal by bytes", args: []string{"--every", "1000", "--ordinal", "size"}, want: 10000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseRun(t, append(slices.Clone(base), tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := s.monitorConfig()
			if err != nil {
				t.Fatalf("a config that does not set discover-every: %v", err)
			}
			if got := cfg.Streams[0].DiscoverEvery; got != tc.want {
				t.Errorf("discover-every %d, want %d", got, tc.want)
			}
		})
	}
}
