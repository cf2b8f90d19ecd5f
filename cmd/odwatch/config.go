package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream"
)

// defaultEpsilon is the error threshold when neither the config file nor a
// flag sets one: a dependency may have 1% exceptions and still hold.
const defaultEpsilon = 0.01

// defaultConnectTimeout is how long `run` waits for Kafka at start-up.
const defaultConnectTimeout = 30 * time.Second

// streamSettings are the keys of one stream, at the top level of the config
// file (single stream) or in its `streams:` list.
type streamSettings struct {
	Name              string        `yaml:"name"`
	Topic             string        `yaml:"topic"`
	Format            string        `yaml:"record-format"`
	Schema            string        `yaml:"schema"`
	Registry          string        `yaml:"registry"`
	Include           []string      `yaml:"include"`
	Exclude           []string      `yaml:"exclude"`
	Window            int           `yaml:"window"`
	Every             int           `yaml:"every"`
	DiscoverEvery     everyOrAuto   `yaml:"discover-every"`
	Interval          time.Duration `yaml:"interval"`
	Epsilon           *float64      `yaml:"epsilon"`
	Margin            *marginFlag   `yaml:"margin"`
	K                 int           `yaml:"k"`
	RetireAfter       int           `yaml:"retire-after"`
	MaxLevel          *int          `yaml:"max-level"`
	DiscoverAfter     *int          `yaml:"discover-after"`
	Sample            int           `yaml:"sample"`
	MinScore          *autoShare    `yaml:"min-score"`
	Ordinal           []string      `yaml:"ordinal"`
	OrderText         bool          `yaml:"order-text"`
	MinStrength       *float64      `yaml:"min-strength"`
	EvaluationTimeout time.Duration `yaml:"evaluation-timeout"`
	Pinned            []string      `yaml:"pinned"`
}

type tlsSettings struct {
	Enabled            bool   `yaml:"enabled"`
	CA                 string `yaml:"ca"`
	Cert               string `yaml:"cert"`
	Key                string `yaml:"key"`
	InsecureSkipVerify bool   `yaml:"insecure-skip-verify"`
}

type saslSettings struct {
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password-file"`
}

// runSettings is everything `odwatch run` can be told, by a YAML file
// (--config) and by flags; flags win.
type runSettings struct {
	Brokers              []string `yaml:"brokers"`
	Group                string   `yaml:"group"`
	EventsTopic          string   `yaml:"events-topic"`
	EventsRegistry       string   `yaml:"events-registry"`
	DLQTopic             string   `yaml:"dlq-topic"`
	StateTopic           string   `yaml:"state-topic"`
	Webhook              string   `yaml:"webhook"`
	StateDir             string   `yaml:"state-dir"`
	RebuildState         bool     `yaml:"rebuild-state"`
	MetricsAddr          string   `yaml:"metrics-addr"`
	WebConfigFile        string   `yaml:"web-config-file"`
	StatusValues         *bool    `yaml:"status-values"`
	LogLevel             string   `yaml:"log-level"`
	LogFormat            string   `yaml:"log-format"`
	MaxDependencyMetrics int      `yaml:"max-dependency-metrics"`
	// Consumer group timings (0 = stream's defaults).
	SessionTimeout    time.Duration `yaml:"session-timeout"`
	HeartbeatInterval time.Duration `yaml:"heartbeat-interval"`
	RebalanceTimeout  time.Duration `yaml:"rebalance-timeout"`
	// ConnectTimeout bounds the wait for Kafka at start-up.
	ConnectTimeout time.Duration `yaml:"connect-timeout"`
	TLS            tlsSettings   `yaml:"tls"`
	SASL           saslSettings  `yaml:"sasl"`

	streamSettings `yaml:",inline"`
	Streams        []streamSettings `yaml:"streams"`
	// warnings are the config file's deprecated keys and flags, logged at
	// start-up.
	warnings []string
}

// statusValues is status-values, true unless set false.
func (s runSettings) statusValues() bool { return s.StatusValues == nil || *s.StatusValues }

// listFlag is a comma-separated or repeated string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// repeatedFlag is a string flag that may be given several times; unlike
// listFlag it does not split on commas (an --ordinal list holds them).
type repeatedFlag []string

func (r *repeatedFlag) String() string     { return strings.Join(*r, " ") }
func (r *repeatedFlag) Set(v string) error { *r = append(*r, v); return nil }

// runFlags binds every flag of `odwatch run` to a fresh settings value.
type runFlags struct {
	fs      *flag.FlagSet
	config  string
	s       runSettings
	epsilon float64
	brokers listFlag
	include listFlag
	exclude listFlag
	pinned  listFlag
	// margin, maxLevel, discoverAfter: stream keys whose zero is a value
	// of its own (no margin, no level limit), so the file's are pointers.
	margin        marginFlag
	minScore      autoShare
	maxLevel      int
	discoverAfter int
	ordinal       repeatedFlag
	minStr        float64
	saslPass      string
	// statusValues is --status-values (runSettings.StatusValues is nil
	// when neither the file nor the flag sets it).
	statusValues bool
	// warnings: the deprecated flags used.
	warnings []string
}

// deprecatedFlag is the old spelling of flag to: it sets to and warns.
type deprecatedFlag struct {
	fs       *flag.FlagSet
	name, to string
	warnings *[]string
}

func (d *deprecatedFlag) String() string { return "" }
func (d *deprecatedFlag) Set(v string) error {
	*d.warnings = append(*d.warnings, fmt.Sprintf("--%s is deprecated; use --%s", d.name, d.to))
	return d.fs.Set(d.to, v)
}

func newRunFlags(name string) *runFlags {
	f := &runFlags{fs: newFlagSet(name, "--brokers HOST:PORT --topic NAME --state-dir DIR [flags] | --config FILE [flags]", runHelp)}
	fs := f.fs
	fs.StringVar(&f.config, "config", "", "YAML config file (keys = flag names; flags win)")
	fs.Var(&f.brokers, "brokers", "Kafka bootstrap brokers, HOST:PORT[,HOST:PORT...] (required)")
	fs.StringVar(&f.s.Group, "group", "odwatch", "Kafka consumer group")
	fs.StringVar(&f.s.EventsTopic, "events-topic", "", "topic for dependency-change events (CloudEvents)")
	fs.StringVar(&f.s.EventsRegistry, "events-registry", "", "Schema Registry URL: register the event schema as the events topic's value subject (JSON Schema) and write values in the Confluent wire format")
	fs.StringVar(&f.s.DLQTopic, "dlq-topic", "", "dead-letter topic for undecodable records")
	fs.StringVar(&f.s.StateTopic, "state-topic", "", "compacted topic holding each stream's tracked dependencies, for failover between instances")
	fs.StringVar(&f.s.Webhook, "webhook", "", "URL to POST events to")
	fs.StringVar(&f.s.StateDir, "state-dir", "", "directory of the Pebble state store (required; created, and logged, when it does not exist)")
	fs.BoolVar(&f.s.RebuildState, "rebuild-state", false, "if the state store is damaged, move it aside (kept) and rebuild the windows from Kafka and the tracked dependencies from --state-topic")
	fs.StringVar(&f.s.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "address for the status page (/, /api/), /metrics, /healthz and /readyz; empty turns them off")
	fs.StringVar(&f.s.WebConfigFile, "web-config-file", "", "exporter-toolkit web config file (TLS, basic auth) for everything on --metrics-addr")
	fs.BoolVar(&f.statusValues, "status-values", true, "show sampled records' values on the status page; false shows topic, partition and offset only")
	fs.StringVar(&f.s.LogLevel, "log-level", "info", "debug|info|warn|error")
	fs.StringVar(&f.s.LogFormat, "log-format", "text", "text|json")
	fs.IntVar(&f.s.MaxDependencyMetrics, "max-dependency-metrics", 200, "cap on odwatch_dependency_error series per stream")
	fs.DurationVar(&f.s.SessionTimeout, "session-timeout", stream.DefaultSessionTimeout, "consumer group session timeout: how soon a crashed member's topics go to a survivor")
	fs.DurationVar(&f.s.HeartbeatInterval, "heartbeat-interval", stream.DefaultHeartbeatInterval, "consumer group heartbeat interval (below session-timeout)")
	fs.DurationVar(&f.s.RebalanceTimeout, "rebalance-timeout", stream.DefaultRebalanceTimeout, "how long a rebalance waits for the members to rejoin")
	fs.DurationVar(&f.s.ConnectTimeout, "connect-timeout", defaultConnectTimeout, "how long start-up waits for the brokers to answer before it fails (an outage after start-up is waited out)")
	fs.BoolVar(&f.s.TLS.Enabled, "tls", false, "connect to Kafka with TLS")
	fs.StringVar(&f.s.TLS.CA, "tls-ca", "", "PEM CA bundle for the brokers' certificates")
	fs.StringVar(&f.s.TLS.Cert, "tls-cert", "", "PEM client certificate (mutual TLS)")
	fs.StringVar(&f.s.TLS.Key, "tls-key", "", "PEM client key (mutual TLS)")
	fs.BoolVar(&f.s.TLS.InsecureSkipVerify, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates (testing only)")
	fs.StringVar(&f.s.SASL.Mechanism, "sasl-mechanism", "", "plain|scram-sha-256|scram-sha-512")
	fs.StringVar(&f.s.SASL.Username, "sasl-username", "", "SASL user")
	fs.StringVar(&f.s.SASL.PasswordFile, "sasl-password-file", "", "file holding the SASL password (or set ODWATCH_SASL_PASSWORD)")

	st := &f.s.streamSettings
	fs.StringVar(&st.Name, "name", "", "stream name (default: the topic)")
	fs.StringVar(&st.Topic, "topic", "", "topic to watch (required, unless the --config file lists streams)")
	fs.StringVar(&st.Format, "record-format", "json", "record format: json|avro|avro-confluent")
	fs.Var(&deprecatedFlag{fs: fs, name: "format", to: "record-format", warnings: &f.warnings}, "format", "deprecated spelling of --record-format")
	fs.StringVar(&st.Schema, "schema", "", "Avro schema file (format avro)")
	fs.StringVar(&st.Registry, "registry", "", "Schema Registry URL (format avro-confluent)")
	fs.Var(&f.include, "include", "only these columns (names or prefix.*), comma-separated or repeated")
	fs.Var(&f.exclude, "exclude", "drop these columns (names or prefix.*)")
	fs.IntVar(&st.Window, "window", 10000, "window size in records")
	fs.IntVar(&st.Every, "every", 0, "evaluate every M records (default: the window size, tumbling)")
	fs.Var(&st.DiscoverEvery, "discover-every", discoverEveryHelp)
	fs.DurationVar(&st.Interval, "interval", 0, "time window: evaluate every interval over the records of the last interval (default: none, a count window)")
	fs.Float64Var(&f.epsilon, "epsilon", defaultEpsilon, "error threshold: a dependency holds when removals <= floor(eps*n)")
	f.margin = marginFlag(alerts.AutoMargin)
	fs.Var(&f.margin, "margin", marginHelp)
	fs.IntVar(&st.K, "k", 1, "consecutive windows beyond the margin before violated/restored")
	fs.IntVar(&st.RetireAfter, "retire-after", alerts.DefaultRetireAfter, "discoveries a replaced dependency (or rated windows a weak one) is kept before it is retired")
	fs.IntVar(&f.maxLevel, "max-level", stream.DefaultMaxLevel, "lattice level limit: the most columns a dependency may mention (0: none)")
	fs.IntVar(&f.discoverAfter, "discover-after", stream.DefaultDiscoverAfter, "consecutive windows a rule a discovery found must hold and be reliable in (its discovery's, then the checks after it) before it is discovered")
	fs.IntVar(&st.Sample, "sample", 5, "violating records carried per event")
	fs.Var(&f.ordinal, "ordinal", "declare a text column ordered, by the listed values lowest first (COL=v1,v2,...) or by bytes (COL); repeatable")
	fs.BoolVar(&st.OrderText, "order-text", false, "order every text column by bytes and skip temporal typing: the paper's complete discovery")
	fs.Float64Var(&f.minStr, "min-strength", discovery.DefaultMinStrength, "strength in [0, 1] from which a dependency is reliable (how much better than chance it holds)")
	f.minScore = autoShare(stream.AutoMinScore)
	fs.Var(&f.minScore, "min-score", minScoreHelp)
	fs.DurationVar(&st.EvaluationTimeout, "evaluation-timeout", 0, "time budget of one discovery run (default: none)")
	fs.Var(&f.pinned, "pin", "a dependency to always track, e.g. '{}: salary ~ tax (asc)' (repeatable)")
	return f
}

// singleStreamFlags name one stream; the other stream flags apply to every
// stream of a config file that lists several.
var singleStreamFlags = map[string]bool{"name": true, "topic": true, "schema": true}

// settings merges the config file (if any) with the flags that were set on
// the command line, flags winning, and returns the final settings. Without
// a config file every flag counts, defaults included; with one, the flags
// set override the file's keys (globalOverrides, streamOverrides) and the
// keys neither sets take the flag defaults (fileDefaults, streamDefaults).
func (f *runFlags) settings() (runSettings, error) {
	base := runSettings{}
	if f.config != "" {
		var err error
		if base, err = loadConfigFile(f.config); err != nil {
			return base, err
		}
	}
	fl := f.flagSettings()
	if f.config == "" {
		return fl, nil
	}
	base.warnings = append(base.warnings, fl.warnings...)
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, o := range globalOverrides() {
		if set[o.name] {
			o.apply(&base, &fl)
		}
	}
	fileDefaults(&base, &fl, set)
	streams, err := fileStreams(&base, set, f.config)
	if err != nil {
		return base, err
	}
	for _, st := range streams {
		for _, o := range streamOverrides() {
			if set[o.name] {
				o.apply(st, &fl.streamSettings)
			}
		}
		streamDefaults(st, &fl.streamSettings)
	}
	return base, nil
}

// flagSettings returns the settings the flags give, defaults included: f.s
// with the values of the flags that do not bind to it directly (lists, and
// the keys whose zero is a value of its own, pointers in the file).
func (f *runFlags) flagSettings() runSettings {
	fl := f.s
	fl.warnings = f.warnings
	fl.Brokers = f.brokers
	fl.Include, fl.Exclude, fl.Pinned = f.include, f.exclude, f.pinned
	eps := f.epsilon
	fl.Epsilon = &eps
	margin, maxLevel, discoverAfter := f.margin, f.maxLevel, f.discoverAfter
	fl.Margin, fl.MaxLevel, fl.DiscoverAfter = &margin, &maxLevel, &discoverAfter
	minScore := f.minScore
	fl.MinScore = &minScore
	values := f.statusValues
	fl.StatusValues = &values
	fl.Ordinal = f.ordinal
	minStrength := f.minStr
	fl.MinStrength = &minStrength
	return fl
}

// override is how one flag, when set on the command line, replaces the
// config file's key in dst with its value in fl (the flagSettings).
type override[T any] struct {
	name  string
	apply func(dst, fl *T)
}

// globalOverrides are the overrides of the keys that are not per stream.
func globalOverrides() []override[runSettings] {
	return []override[runSettings]{
		{"brokers", func(s, fl *runSettings) { s.Brokers = fl.Brokers }},
		{"group", func(s, fl *runSettings) { s.Group = fl.Group }},
		{"events-topic", func(s, fl *runSettings) { s.EventsTopic = fl.EventsTopic }},
		{"events-registry", func(s, fl *runSettings) { s.EventsRegistry = fl.EventsRegistry }},
		{"dlq-topic", func(s, fl *runSettings) { s.DLQTopic = fl.DLQTopic }},
		{"state-topic", func(s, fl *runSettings) { s.StateTopic = fl.StateTopic }},
		{"webhook", func(s, fl *runSettings) { s.Webhook = fl.Webhook }},
		{"state-dir", func(s, fl *runSettings) { s.StateDir = fl.StateDir }},
		{"rebuild-state", func(s, fl *runSettings) { s.RebuildState = fl.RebuildState }},
		{"metrics-addr", func(s, fl *runSettings) { s.MetricsAddr = fl.MetricsAddr }},
		{"web-config-file", func(s, fl *runSettings) { s.WebConfigFile = fl.WebConfigFile }},
		{"status-values", func(s, fl *runSettings) { s.StatusValues = fl.StatusValues }},
		{"log-level", func(s, fl *runSettings) { s.LogLevel = fl.LogLevel }},
		{"log-format", func(s, fl *runSettings) { s.LogFormat = fl.LogFormat }},
		{"max-dependency-metrics", func(s, fl *runSettings) { s.MaxDependencyMetrics = fl.MaxDependencyMetrics }},
		{"session-timeout", func(s, fl *runSettings) { s.SessionTimeout = fl.SessionTimeout }},
		{"heartbeat-interval", func(s, fl *runSettings) { s.HeartbeatInterval = fl.HeartbeatInterval }},
		{"rebalance-timeout", func(s, fl *runSettings) { s.RebalanceTimeout = fl.RebalanceTimeout }},
		{"connect-timeout", func(s, fl *runSettings) { s.ConnectTimeout = fl.ConnectTimeout }},
		{"tls", func(s, fl *runSettings) { s.TLS.Enabled = fl.TLS.Enabled }},
		{"tls-ca", func(s, fl *runSettings) { s.TLS.CA = fl.TLS.CA }},
		{"tls-cert", func(s, fl *runSettings) { s.TLS.Cert = fl.TLS.Cert }},
		{"tls-key", func(s, fl *runSettings) { s.TLS.Key = fl.TLS.Key }},
		{"tls-insecure-skip-verify", func(s, fl *runSettings) { s.TLS.InsecureSkipVerify = fl.TLS.InsecureSkipVerify }},
		{"sasl-mechanism", func(s, fl *runSettings) { s.SASL.Mechanism = fl.SASL.Mechanism }},
		{"sasl-username", func(s, fl *runSettings) { s.SASL.Username = fl.SASL.Username }},
		{"sasl-password-file", func(s, fl *runSettings) { s.SASL.PasswordFile = fl.SASL.PasswordFile }},
	}
}

// streamOverrides are the overrides of the stream keys, applied to every
// stream of the file; --pin adds to the file's pinned list.
func streamOverrides() []override[streamSettings] {
	return []override[streamSettings]{
		{"name", func(st, fl *streamSettings) { st.Name = fl.Name }},
		{"topic", func(st, fl *streamSettings) { st.Topic = fl.Topic }},
		{"record-format", func(st, fl *streamSettings) { st.Format = fl.Format }},
		{"format", func(st, fl *streamSettings) { st.Format = fl.Format }}, // deprecated spelling
		{"schema", func(st, fl *streamSettings) { st.Schema = fl.Schema }},
		{"registry", func(st, fl *streamSettings) { st.Registry = fl.Registry }},
		{"include", func(st, fl *streamSettings) { st.Include = fl.Include }},
		{"exclude", func(st, fl *streamSettings) { st.Exclude = fl.Exclude }},
		{"window", func(st, fl *streamSettings) { st.Window = fl.Window }},
		{"every", func(st, fl *streamSettings) { st.Every = fl.Every }},
		{"discover-every", func(st, fl *streamSettings) { st.DiscoverEvery = fl.DiscoverEvery }},
		{"interval", func(st, fl *streamSettings) { st.Interval = fl.Interval }},
		{"epsilon", func(st, fl *streamSettings) { st.Epsilon = fl.Epsilon }},
		{"margin", func(st, fl *streamSettings) { st.Margin = fl.Margin }},
		{"k", func(st, fl *streamSettings) { st.K = fl.K }},
		{"retire-after", func(st, fl *streamSettings) { st.RetireAfter = fl.RetireAfter }},
		{"max-level", func(st, fl *streamSettings) { st.MaxLevel = fl.MaxLevel }},
		{"discover-after", func(st, fl *streamSettings) { st.DiscoverAfter = fl.DiscoverAfter }},
		{"sample", func(st, fl *streamSettings) { st.Sample = fl.Sample }},
		{"min-score", func(st, fl *streamSettings) { st.MinScore = fl.MinScore }},
		{"ordinal", func(st, fl *streamSettings) { st.Ordinal = fl.Ordinal }},
		{"order-text", func(st, fl *streamSettings) { st.OrderText = fl.OrderText }},
		{"min-strength", func(st, fl *streamSettings) { st.MinStrength = fl.MinStrength }},
		{"evaluation-timeout", func(st, fl *streamSettings) { st.EvaluationTimeout = fl.EvaluationTimeout }},
		{"pin", func(st, fl *streamSettings) { st.Pinned = append(st.Pinned, fl.Pinned...) }},
	}
}

// fileDefaults gives the global keys the file left out (and no flag set)
// the flag defaults in fl.
func fileDefaults(s, fl *runSettings, set map[string]bool) {
	if s.Group == "" {
		s.Group = fl.Group
	}
	if s.MetricsAddr == "" && !set["metrics-addr"] {
		s.MetricsAddr = fl.MetricsAddr
	}
	if s.LogLevel == "" {
		s.LogLevel = fl.LogLevel
	}
	if s.LogFormat == "" {
		s.LogFormat = fl.LogFormat
	}
	if s.MaxDependencyMetrics == 0 {
		s.MaxDependencyMetrics = fl.MaxDependencyMetrics
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = fl.ConnectTimeout
	}
}

// fileStreams returns the streams of the config file at path: its
// `streams:` list, or its top-level stream keys when it has none. Setting
// both, or a flag that names one stream (singleStreamFlags) over a list,
// is an error.
func fileStreams(s *runSettings, set map[string]bool, path string) ([]*streamSettings, error) {
	if len(s.Streams) == 0 {
		return []*streamSettings{&s.streamSettings}, nil
	}
	var streams []*streamSettings
	for i := range s.Streams {
		streams = append(streams, &s.Streams[i])
	}
	for name := range singleStreamFlags {
		if set[name] {
			return nil, fmt.Errorf("%w: --%s names one stream but the config file has %d streams", errUsage, name, len(streams))
		}
	}
	return streams, nil
}

// streamDefaults gives the stream keys the file left out (and no flag
// set) the flag defaults in fl: epsilon defaultEpsilon, and the flags'
// format, window (unless the stream has an interval), sample, margin,
// max-level, discover-after and min-score.
func streamDefaults(st, fl *streamSettings) {
	if st.Epsilon == nil {
		e := defaultEpsilon
		st.Epsilon = &e
	}
	if st.Format == "" {
		st.Format = fl.Format
	}
	if st.Window == 0 && st.Interval == 0 {
		st.Window = fl.Window
	}
	if st.Sample == 0 {
		st.Sample = fl.Sample
	}
	if st.Margin == nil {
		st.Margin = fl.Margin
	}
	if st.MaxLevel == nil {
		st.MaxLevel = fl.MaxLevel
	}
	if st.DiscoverAfter == nil {
		st.DiscoverAfter = fl.DiscoverAfter
	}
	if st.MinScore == nil {
		st.MinScore = fl.MinScore
	}
}

// monitorConfig turns settings into the stream package's configuration and
// checks what only the command line can check (files, TLS material).
func (s runSettings) monitorConfig() (stream.Config, error) {
	cfg := stream.Config{
		Brokers:              s.Brokers,
		Group:                s.Group,
		EventsTopic:          s.EventsTopic,
		EventsRegistry:       s.EventsRegistry,
		DLQTopic:             s.DLQTopic,
		StateTopic:           s.StateTopic,
		WebhookURL:           s.Webhook,
		StateDir:             s.StateDir,
		RebuildState:         s.RebuildState,
		MaxDependencyMetrics: s.MaxDependencyMetrics,
		SessionTimeout:       s.SessionTimeout,
		HeartbeatInterval:    s.HeartbeatInterval,
		RebalanceTimeout:     s.RebalanceTimeout,
	}
	dialer, err := s.dialer()
	if err != nil {
		return cfg, err
	}
	cfg.Dialer = dialer
	list := s.Streams
	if len(list) == 0 {
		list = []streamSettings{s.streamSettings}
	}
	for i, st := range list {
		eps := defaultEpsilon
		if st.Epsilon != nil {
			eps = *st.Epsilon
		}
		minStrength := discovery.DefaultMinStrength
		if st.MinStrength != nil {
			minStrength = *st.MinStrength
		}
		var ordinal ordinalFlag
		for _, decl := range st.Ordinal {
			if err := ordinal.Set(decl); err != nil {
				field := "ordinal"
				if len(s.Streams) > 0 {
					field = fmt.Sprintf("streams[%d].ordinal", i)
				}
				return cfg, fmt.Errorf("%w: %s: %v", errUsage, field, err)
			}
		}
		cfg.Streams = append(cfg.Streams, stream.StreamConfig{
			Name: st.Name, Topic: st.Topic, Format: st.Format,
			SchemaFile: st.Schema, RegistryURL: st.Registry,
			Include: st.Include, Exclude: st.Exclude,
			Window: st.Window, Every: st.Every, Interval: st.Interval, DiscoverEvery: st.DiscoverEvery.value(),
			Epsilon: eps, Margin: float64(deref(st.Margin, alerts.AutoMargin)), K: st.K, RetireAfter: st.RetireAfter,
			MaxLevel: deref(st.MaxLevel, stream.DefaultMaxLevel), DiscoverAfter: deref(st.DiscoverAfter, stream.DefaultDiscoverAfter),
			Sample: st.Sample, MinScore: float64(deref(st.MinScore, stream.AutoMinScore)),
			EvaluationTimeout: st.EvaluationTimeout, Pinned: st.Pinned,
			Typing:      table.Typing{OrderText: st.OrderText, Ordinal: ordinal},
			MinStrength: minStrength,
		})
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// dialer builds the kafka-go dialer for TLS and SASL, or nil for plaintext.
func (s runSettings) dialer() (*kafka.Dialer, error) {
	if !s.TLS.Enabled && s.TLS.CA == "" && s.TLS.Cert == "" && s.SASL.Mechanism == "" {
		return nil, nil
	}
	d := &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true}
	if s.TLS.Enabled || s.TLS.CA != "" || s.TLS.Cert != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.TLS.InsecureSkipVerify}
		if s.TLS.CA != "" {
			pem, err := os.ReadFile(s.TLS.CA)
			if err != nil {
				return nil, fmt.Errorf("tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tls-ca: %s holds no PEM certificate", s.TLS.CA)
			}
			tc.RootCAs = pool
		}
		if (s.TLS.Cert == "") != (s.TLS.Key == "") {
			return nil, fmt.Errorf("tls-cert/tls-key: give both or neither")
		}
		if s.TLS.Cert != "" {
			pair, err := tls.LoadX509KeyPair(s.TLS.Cert, s.TLS.Key)
			if err != nil {
				return nil, fmt.Errorf("tls-cert: %w", err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		d.TLS = tc
	}
	if s.SASL.Mechanism != "" {
		mech, err := s.saslMechanism()
		if err != nil {
			return nil, err
		}
		d.SASLMechanism = mech
	}
	return d, nil
}

func (s runSettings) saslMechanism() (sasl.Mechanism, error) {
	pass := os.Getenv("ODWATCH_SASL_PASSWORD")
	if s.SASL.PasswordFile != "" {
		b, err := os.ReadFile(s.SASL.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("sasl-password-file: %w", err)
		}
		pass = strings.TrimRight(string(b), "\r\n")
	}
	if s.SASL.Username == "" {
		return nil, fmt.Errorf("sasl-username: required with sasl-mechanism %s", s.SASL.Mechanism)
	}
	switch strings.ToLower(s.SASL.Mechanism) {
	case "plain":
		return plain.Mechanism{Username: s.SASL.Username, Password: pass}, nil
	case "scram-sha-256":
		m, err := scram.Mechanism(scram.SHA256, s.SASL.Username, pass)
		if err != nil {
			return nil, fmt.Errorf("sasl-mechanism: %w", err)
		}
		return m, nil
	case "scram-sha-512":
		m, err := scram.Mechanism(scram.SHA512, s.SASL.Username, pass)
		if err != nil {
			return nil, fmt.Errorf("sasl-mechanism: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("sasl-mechanism: %q is not plain, scram-sha-256 or scram-sha-512", s.SASL.Mechanism)
}

// deref is *p, or def when p is nil (a key the config file left out).
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
