package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// configKeySamples are two distinct values of every key of the config
// file, as YAML, for the tests that set each key at each level. A new key
// without samples fails TestConfigKeysAllSampled.
var configKeySamples = map[string][2]string{
	// Global keys.
	"brokers": {"[a:1]", "[b:2, c:3]"}, "group": {"g1", "g2"}, "events-topic": {"ev1", "ev2"},
	"events-registry": {"http://r1", "http://r2"}, "dlq-topic": {"d1", "d2"}, "state-topic": {"s1", "s2"},
	"webhook": {"http://w1", "http://w2"}, "state-dir": {"/s1", "/s2"}, "rebuild-state": {"true", "false"},
	"metrics-addr": {"127.0.0.1:1", "127.0.0.1:2"}, "web-config-file": {"w1.yml", "w2.yml"},
	"status-values": {"false", "true"}, "log-level": {"debug", "warn"}, "log-format": {"json", "text"},
	"max-dependency-metrics": {"7", "8"}, "session-timeout": {"7s", "8s"}, "heartbeat-interval": {"1s", "2s"},
	"rebalance-timeout": {"9s", "10s"}, "connect-timeout": {"3s", "4s"},
	"tls":  {"{enabled: true, ca: a.pem}", "{cert: c.pem, key: k.pem, insecure-skip-verify: true}"},
	"sasl": {"{mechanism: plain, username: u}", "{password-file: p}"},
	// Stream keys.
	"name": {"n1", "n2"}, "topic": {"t1", "t2"}, "record-format": {"avro", "avro-confluent"},
	"schema": {"a.avsc", "b.avsc"}, "registry": {"http://reg1", "http://reg2"},
	"include": {"[a]", "[b, c]"}, "exclude": {"[x]", "[y.*]"}, "window": {"100", "200"}, "every": {"10", "20"},
	"discover-every": {"40", "60"}, "interval": {"1m", "2m"}, "epsilon": {"0.05", "0"}, "margin": {"auto", "0.01"},
	"k": {"2", "3"}, "retire-after": {"4", "5"}, "max-level": {"0", "2"}, "discover-after": {"1", "3"},
	"sample": {"3", "4"}, "min-score": {"0.2", "auto"}, "ordinal": {"[size]", "['size=S,M,L']"},
	"order-text": {"true", "false"}, "min-strength": {"0.7", "0.2"}, "evaluation-timeout": {"5s", "6s"},
	"pinned": {"['{}: a ~ b']", "['{c}: [] -> d']"},
}

func TestConfigKeysAllSampled(t *testing.T) {
	for k := range globalKeys {
		if k == "streams" {
			continue
		}
		if _, ok := configKeySamples[k]; !ok {
			t.Errorf("key %q has no samples in configKeySamples", k)
		}
	}
	for k := range configKeySamples {
		if _, ok := globalKeys[k]; !ok && k != "streams" {
			t.Errorf("sample of %q, which is no key", k)
		}
	}
}

// decoded is value v (YAML) decoded into a fresh value of field f's type.
func decoded(t *testing.T, f reflect.Value, v string) any {
	t.Helper()
	p := reflect.New(f.Type())
	if err := yaml.Unmarshal([]byte(v), p.Interface()); err != nil {
		t.Fatalf("sample %s: %v", v, err)
	}
	return p.Elem().Interface()
}

// TestConfigTopLevelStreamKeysAreDefaults: every stream key set at the top
// level of a file with streams: is inherited by the entries that leave it
// out and overridden by those that set it; every key alone at the top
// level, the single-stream form, is read.
func TestConfigTopLevelStreamKeysAreDefaults(t *testing.T) {
	for key := range streamKeys {
		samples := configKeySamples[key]
		t.Run(key, func(t *testing.T) {
			if perStreamOnlyKeys[key] {
				path := writeFile(t, "c.yaml", fmt.Sprintf("%s: %s\nstreams:\n  - topic: a\n", key, samples[0]))
				if _, err := loadConfigFile(path); err == nil || !strings.Contains(err.Error(), key+": set either") {
					t.Errorf("top-level %s with streams: err %v, want it refused", key, err)
				}
				return
			}
			file := fmt.Sprintf("%s: %s\nstreams:\n  - topic: a\n  - topic: b\n    %s: %s\n", key, samples[0], key, samples[1])
			s, err := loadConfigFile(writeFile(t, "c.yaml", file))
			if err != nil {
				t.Fatal(err)
			}
			idx := streamKeys[key]
			a := reflect.ValueOf(s.Streams[0]).FieldByIndex(idx)
			b := reflect.ValueOf(s.Streams[1]).FieldByIndex(idx)
			if want := decoded(t, a, samples[0]); !reflect.DeepEqual(a.Interface(), want) {
				t.Errorf("stream a (key left out): %s = %v, want the top level's %v", key, a, want)
			}
			if want := decoded(t, b, samples[1]); !reflect.DeepEqual(b.Interface(), want) {
				t.Errorf("stream b (key set): %s = %v, want its own %v", key, b, want)
			}
		})
	}
	for key, idx := range globalKeys {
		if key == "streams" {
			continue
		}
		t.Run("top/"+key, func(t *testing.T) {
			s, err := loadConfigFile(writeFile(t, "c.yaml", key+": "+configKeySamples[key][0]+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			f := reflect.ValueOf(s).FieldByIndex(idx)
			if want := decoded(t, f, configKeySamples[key][0]); !reflect.DeepEqual(f.Interface(), want) {
				t.Errorf("%s = %v, want %v", key, f, want)
			}
			if _, stream := streamKeys[key]; stream {
				return
			}
			// A global key inside a stream entry is refused, saying where it goes.
			file := "streams:\n  - topic: a\n    " + key + ": " + configKeySamples[key][0] + "\n"
			_, err = loadConfigFile(writeFile(t, "c.yaml", file))
			if err == nil || !strings.Contains(err.Error(), "c.yaml:3: streams[0]."+key+" is not a stream key") || !strings.Contains(err.Error(), "top level") {
				t.Errorf("global key %s in a stream: err %v", key, err)
			}
		})
	}
}

// TestConfigInheritanceThroughSettings: the inherited keys survive the
// flag defaults, and a flag set on the command line wins over both levels.
func TestConfigInheritanceThroughSettings(t *testing.T) {
	file := writeFile(t, "c.yaml", "brokers: [a:1]\nstate-dir: /x\nepsilon: 0.05\nwindow: 500\nmargin: 0.01\n"+
		"streams:\n  - topic: a\n  - topic: b\n    window: 800\n")
	cfg := monitorConfigOf(t, "--config", file)
	a, b := cfg.Streams[0], cfg.Streams[1]
	if a.Epsilon != 0.05 || b.Epsilon != 0.05 || a.Window != 500 || b.Window != 800 || a.Margin != 0.01 || b.Margin != 0.01 {
		t.Errorf("streams %+v / %+v, want epsilon 0.05 and margin 0.01 for both, windows 500 and 800", a, b)
	}
	s, err := parseRun(t, "--config", file, "--epsilon", "0.02")
	if err != nil {
		t.Fatal(err)
	}
	if *s.Streams[0].Epsilon != 0.02 || *s.Streams[1].Epsilon != 0.02 {
		t.Errorf("--epsilon 0.02 did not win over the file's top level")
	}
}

// TestConfigErrors: each mistake in a config file is one error naming the
// file, the line and the key, with the fix; none says "set it with the
// flag of that name", which only fits a bad value the flags can set too.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"typo", "brokers: [a:1]\nwindw: 5\n", []string{"c.yaml:2: unknown key windw", "did you mean window?"}},
		{"typo in a stream", "streams:\n  - topic: a\n    epsilom: 0.1\n", []string{"c.yaml:3: unknown key streams[0].epsilom", "did you mean epsilon?"}},
		{"typo in tls", "tls:\n  enabld: true\n", []string{"c.yaml:2: unknown key tls.enabld", "did you mean enabled?"}},
		{"typo of streams", "stream:\n  - topic: a\n", []string{"c.yaml:1: unknown key stream", "streams"}},
		{"not a number", "epsilon: abc\n", []string{"c.yaml:1: epsilon: \"abc\": want a number"}},
		{"not a whole number", "streams:\n  - topic: a\n    window: 1.5\n", []string{"c.yaml:3: streams[0].window: \"1.5\": want a whole number"}},
		{"not a duration", "session-timeout: soon\n", []string{"c.yaml:1: session-timeout: \"soon\": want a duration"}},
		{"bad margin", "margin: lots\n", []string{"c.yaml:1: margin: \"lots\": want a share in [0, 1) or auto"}},
		{"not a bool", "order-text: maybe\n", []string{"c.yaml:1: order-text: \"maybe\": want true or false"}},
		{"twice", "window: 1\nwindow: 2\n", []string{"c.yaml:2: window is set twice (lines 1 and 2)"}},
		{"syntax", "brokers: [a:1\nwindow: 2\n", []string{"config ", "c.yaml: yaml: line", "fix the YAML"}},
		{"not a mapping", "- a\n- b\n", []string{"c.yaml:1: the file is not a mapping"}},
		{"streams not a list", "streams: {topic: a}\n", []string{"c.yaml:1: streams: want a list"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRun(t, "--config", writeFile(t, "c.yaml", tc.file))
			var b strings.Builder
			code := printError(&b, "run", configErr(err))
			if code != exitUsage {
				t.Errorf("exit %d, want %d; output %q", code, exitUsage, b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("error %q does not say %q", b.String(), w)
				}
			}
			if strings.Contains(b.String(), "flag of that name") || strings.Contains(b.String(), "main.") || strings.Contains(b.String(), "!!") {
				t.Errorf("error %q leaks the decoder or the generic fix", b.String())
			}
		})
	}
	_, err := parseRun(t, "--config", "/nonexistent/odwatch.yaml")
	var b strings.Builder
	printError(&b, "run", configErr(err))
	if !strings.Contains(b.String(), "/nonexistent/odwatch.yaml") || !strings.Contains(b.String(), "check the --config path") || strings.Contains(b.String(), "flag of that name") {
		t.Errorf("missing file: %q", b.String())
	}
}

// TestDeprecatedFormat: --format and the key format still set the record
// format of run, each with a warning naming record-format.
func TestDeprecatedFormat(t *testing.T) {
	s, err := parseRun(t, "--brokers", "a:1", "--topic", "t", "--state-dir", "/x", "--format", "avro-confluent")
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != "avro-confluent" || !slices.ContainsFunc(s.warnings, func(w string) bool { return strings.Contains(w, "--format is deprecated; use --record-format") }) {
		t.Errorf("--format: format %q, warnings %q", s.Format, s.warnings)
	}
	s, err = parseRun(t, "--config", writeFile(t, "c.yaml", "streams:\n  - topic: a\n    format: avro\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Streams[0].Format != "avro" || !slices.ContainsFunc(s.warnings, func(w string) bool {
		return strings.Contains(w, "c.yaml:3: streams[0].format is deprecated; use record-format")
	}) {
		t.Errorf("key format: format %q, warnings %q", s.Streams[0].Format, s.warnings)
	}
	s, err = parseRun(t, "--brokers", "a:1", "--topic", "t", "--record-format", "avro")
	if err != nil || s.Format != "avro" || len(s.warnings) != 0 {
		t.Errorf("--record-format: %q, %q, %v", s.Format, s.warnings, err)
	}
}
