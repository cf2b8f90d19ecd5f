package stream

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream/internal/eval"
	"github.com/segmentio/kafka-go"
)

// StreamConfig describes one monitored stream: one topic, its record
// format, the columns to keep, the window and the discovery parameters.
type StreamConfig struct {
	// Name identifies the stream in the state store, metrics and events;
	// it defaults to Topic.
	Name        string
	Topic       string
	Format      string // json (default), avro, avro-confluent
	SchemaFile  string // Avro schema file (format avro), read at NewMonitor
	RegistryURL string // Schema Registry URL (format avro-confluent)
	Include     []string
	Exclude     []string
	// MaxRecordBytes and MaxFields bound one record (larger ones are
	// rejected as too_large / too_many_fields); 0 means the decoder
	// defaults (see decode.DecoderConfig).
	MaxRecordBytes int
	MaxFields      int

	// Window is the number of records in the window; Every the number of
	// records between evaluations (defaults to Window: tumbling). A count
	// window is evaluated only when full: first once it holds Window
	// records, then every Every records. Interval, when set, evaluates on a
	// timer instead and keeps the records of the last Interval (bounded by
	// Window), full or not.
	Window   int
	Every    int
	Interval time.Duration
	// DiscoverEvery, when above Every, splits the evaluation into two
	// cadences (count windows only): every Every records the tracked
	// dependencies are re-checked incrementally, and every DiscoverEvery
	// records (a multiple of Every) full discovery runs on its own
	// goroutine and never delays a check (see cadence.go). Every runs
	// discovery with every evaluation. 0 means the window size rounded up
	// to a multiple of Every (so a tumbling window runs discovery at every
	// evaluation), or Every for a time window (Interval) or an ordinal
	// value list (Typing), which the incremental checks do not support.
	// AutoDiscoverEvery (-1) paces discovery by its cost (pace.Pacer);
	// Validate sets DiscoverEvery to its bound, the 0 value's.
	DiscoverEvery int

	Epsilon float64
	// Margin is the hysteresis half-width around Epsilon; AutoMargin (-1)
	// derives it from the window's size (alerts.NoiseMargin).
	Margin float64
	// DiscoverAfter: consecutive windows a rule a discovery found must hold
	// and be reliable in before it is discovered (alerts.Config; 0 means 1).
	DiscoverAfter int
	K             int // consecutive windows before violated/restored (default 1)
	RetireAfter   int // alerts.Config.RetireAfter (alerts' default when 0)
	MaxLevel      int // lattice level bound (0 = none)
	Sample        int // violating records per event (default 5)
	// EvaluationTimeout bounds one discovery run; the tracked dependencies
	// are still validated when discovery stops early. 0 = no bound.
	EvaluationTimeout time.Duration
	// MinScore, when > 0, keeps newly minimal dependencies whose Score
	// (discovery.Result.Score: the share of tuple pairs their context
	// constrains) is below it from being tracked: no discovered event for
	// them. A context close to a key ({salary}: experience ~ tax) makes a
	// dependency hold trivially in classes of one or two records; that is
	// noise, not a property of the stream. Pinned and already tracked
	// dependencies are unaffected. In [0, 1]; 0 = off.
	// AutoMinScore (-1) is the near-key score of the window's size.
	MinScore float64
	// Typing says how the window's columns are typed and ordered
	// (discovery.EncodeTyped): which text is ordinal, or every text ordered
	// (OrderText, the paper's rule).
	Typing table.Typing
	// MinStrength is the strength from which a dependency is reliable
	// (discovery.Options.MinStrength); only reliable ones are newly
	// tracked. The CLI defaults it to discovery.DefaultMinStrength. In
	// [0, 1]; 0 makes every dependency reliable.
	MinStrength float64
	// Pinned dependencies in the CLI text form ("{}: salary ~ tax (asc)"),
	// always tracked and never retired.
	Pinned []string

	schema       string                 // SchemaFile content, read by Validate
	autoDiscover bool                   // AutoDiscoverEvery with two cadences; DiscoverEvery is the bound
	pinned       []discovery.Dependency // parsed Pinned, filled by Validate
}

// Config is the configuration of a Monitor.
type Config struct {
	Brokers []string
	Group   string
	Streams []StreamConfig
	// EventsTopic receives dependency events as CloudEvents (optional).
	EventsTopic string
	// EventsRegistry, a Schema Registry URL (optional, with EventsTopic):
	// the event schema is registered as the events topic's value subject
	// ("<topic>-value", JSON Schema) and the values are written in the
	// Confluent wire format, for the standard deserializers.
	EventsRegistry string
	// DLQTopic receives undecodable records with odwatch_* headers (optional).
	DLQTopic string
	// WebhookURL receives events as HTTP POSTs (optional).
	WebhookURL string
	StateDir   string
	// RebuildState: when the store in StateDir is damaged (state.ErrCorrupt),
	// move it aside (state.SetAside, nothing deleted) and start on a fresh
	// one, whose windows are read back from Kafka and whose tracked
	// dependencies come from StateTopic, as on a takeover. A healthy store
	// is used as is.
	RebuildState bool
	// Dialer, when set, is used by the consumer and (as Transport) by the
	// writers, for TLS or SASL.
	Dialer *kafka.Dialer
	// MaxDependencyMetrics caps the odwatch_dependency_error series per
	// stream (default 200): the dependencies with the highest error keep a
	// series, the series of the others are deleted.
	MaxDependencyMetrics int
	// SessionTimeout is the consumer group session timeout: how long a
	// crashed member keeps its topics before the group gives them to a
	// survivor (DefaultSessionTimeout when 0). A member that stops cleanly
	// leaves the group at once and does not wait for it.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often a member tells the group it is alive,
	// and so how soon it learns of a rebalance (DefaultHeartbeatInterval
	// when 0); below SessionTimeout.
	HeartbeatInterval time.Duration
	// RebalanceTimeout is how long the group waits for its members to
	// rejoin in a rebalance (DefaultRebalanceTimeout when 0).
	RebalanceTimeout time.Duration
	// StateTopic, when set, receives every stream's tracker state after
	// each evaluation (key = stream name, JSON value, see stateRecord), and
	// a member taking a stream over without a tracker of its own restores
	// it from there (docs/DESIGN.md "Scale-out"). Create the topic with
	// cleanup.policy=compact: only the latest value per stream is read.
	StateTopic string
}

// AutoMargin as StreamConfig.Margin derives the margin from the window
// size: alerts.NoiseMargin.
const AutoMargin = alerts.AutoMargin

// AutoMinScore as StreamConfig.MinScore is the near-key score of the
// window: 3/n for a window of n records (see eval's nearKeyScore).
const AutoMinScore = -1.0

// AutoDiscoverEvery as StreamConfig.DiscoverEvery paces discovery by its
// measured cost (the CLI's default): see pacer.
const AutoDiscoverEvery = -1

// Defaults of the CLI (run, replay) for a stream; the zero values of
// StreamConfig keep the library's behaviour (no level bound, discovered at
// once). docs/DESIGN.md "Streaming semantics" gives the reasons.
const (
	// DefaultMaxLevel bounds a stream's lattice: a dependency mentions at
	// most 3 columns (an OFD with a context of up to 2 columns, an OC with
	// a context of up to 1): the lattice above it grows with the columns'
	// combinations, and an evaluation must keep up with its window.
	DefaultMaxLevel = 3
	// DefaultDiscoverAfter: a dependency is discovered once it held in two
	// consecutive windows, its discovery's and the check after it.
	DefaultDiscoverAfter = 2
)

// Defaults applied by Validate.
const (
	defaultGroup                = "odwatch"
	DefaultSample               = 5
	defaultMaxDependencyMetrics = 200
	// The group timings let a survivor take over within about 8 s of a
	// crash: 6 s to notice (the lowest session timeout a Kafka broker
	// accepts by default, group.min.session.timeout.ms), up to a heartbeat
	// to learn of the rebalance, then the rejoin and the window read-back.
	DefaultSessionTimeout    = 6 * time.Second
	DefaultHeartbeatInterval = time.Second
	DefaultRebalanceTimeout  = 10 * time.Second
)

// Validate fills defaults and checks the configuration, naming the
// offending field in the error ("streams[0].window: must be > 0").
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Brokers) == 0 {
		bad("brokers", "at least one broker is required")
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			bad(fmt.Sprintf("brokers[%d]", i), "must not be empty")
		}
	}
	if c.Group == "" {
		c.Group = defaultGroup
	}
	if c.StateDir == "" {
		bad("state-dir", "is required")
	}
	if c.MaxDependencyMetrics < 0 {
		bad("max-dependency-metrics", "must be >= 0")
	}
	if c.MaxDependencyMetrics == 0 {
		c.MaxDependencyMetrics = defaultMaxDependencyMetrics
	}
	c.validateGroupTimings(bad)
	if c.EventsRegistry != "" && c.EventsTopic == "" {
		bad("events-registry", "needs events-topic")
	}
	if len(c.Streams) == 0 {
		bad("streams", "at least one stream is required")
	}
	names := map[string]bool{}
	for i := range c.Streams {
		s := &c.Streams[i]
		prefix := fmt.Sprintf("streams[%d].", i)
		s.check(func(field, format string, args ...any) {
			bad(prefix+field, format, args...)
		})
		if names[s.Name] {
			bad(prefix+"name", "duplicate stream name %q", s.Name)
		}
		names[s.Name] = true
	}
	return errors.Join(errs...)
}

// validateGroupTimings fills the consumer group timings' defaults and checks
// them: positive, a heartbeat below the session timeout.
func (c *Config) validateGroupTimings(bad func(field, format string, args ...any)) {
	for _, t := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"session-timeout", &c.SessionTimeout, DefaultSessionTimeout},
		{"heartbeat-interval", &c.HeartbeatInterval, DefaultHeartbeatInterval},
		{"rebalance-timeout", &c.RebalanceTimeout, DefaultRebalanceTimeout},
	} {
		switch {
		case *t.v < 0:
			bad(t.field, "must be > 0, not %v", *t.v)
		case *t.v == 0:
			*t.v = t.def
		case *t.v < time.Millisecond:
			bad(t.field, "must be at least 1ms, not %v", *t.v)
		}
	}
	if c.HeartbeatInterval > 0 && c.SessionTimeout > 0 && c.HeartbeatInterval >= c.SessionTimeout {
		bad("heartbeat-interval", "must be below session-timeout (%v), not %v", c.SessionTimeout, c.HeartbeatInterval)
	}
}

// Validate fills the stream's defaults and checks it alone (no
// duplicate-name check), naming the offending field in the error
// ("window: must be > 0"). Config.Validate prefixes the fields with the
// stream's index.
func (s *StreamConfig) Validate() error {
	var errs []error
	s.check(func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	})
	return errors.Join(errs...)
}

// check fills defaults and reports every bad field to bad, one group of
// fields at a time.
func (s *StreamConfig) check(bad func(field, format string, args ...any)) {
	s.checkInput(bad)
	s.checkCadence(bad)
	s.checkThresholds(bad)
	s.checkPinned(bad)
}

// checkInput checks what to read: topic, name, record format and limits.
func (s *StreamConfig) checkInput(bad func(field, format string, args ...any)) {
	if s.Topic == "" {
		bad("topic", "is required")
	}
	if s.Name == "" {
		s.Name = s.Topic
	}
	if strings.ContainsRune(s.Name, 0) {
		bad("name", "must not contain NUL")
	}
	if s.Format == "" {
		s.Format = "json"
	}
	switch s.Format {
	case "json":
	case "avro":
		if s.SchemaFile == "" {
			bad("schema", "is required for format avro")
		} else if b, err := os.ReadFile(s.SchemaFile); err != nil {
			bad("schema", "%v", err)
		} else {
			s.schema = string(b)
		}
	case "avro-confluent":
		if s.RegistryURL == "" {
			bad("registry", "is required for format avro-confluent")
		}
	default:
		bad("format", "must be json, avro or avro-confluent, not %q", s.Format)
	}
	if s.MaxRecordBytes < 0 {
		bad("max-record-bytes", "must be >= 0")
	}
	if s.MaxFields < 0 {
		bad("max-fields", "must be >= 0")
	}
}

// checkCadence checks the window and when it is checked and discovered.
func (s *StreamConfig) checkCadence(bad func(field, format string, args ...any)) {
	if s.Window <= 0 {
		bad("window", "must be > 0")
	}
	if s.Every < 0 {
		bad("every", "must be >= 0")
	}
	if s.Every == 0 {
		s.Every = s.Window
	}
	if s.Interval == 0 && s.Window > 0 && s.Every > s.Window {
		bad("every", "must be at most window (%d), not %d: the records between two windows would never be evaluated (every = window is a tumbling window)", s.Window, s.Every)
	}
	if s.Interval < 0 {
		bad("interval", "must be >= 0")
	}
	switch {
	case s.DiscoverEvery == AutoDiscoverEvery: // one cadence where the default has one
		s.DiscoverEvery = s.defaultDiscoverEvery()
		s.autoDiscover = s.DiscoverEvery > s.Every
	case s.DiscoverEvery < 0:
		bad("discover-every", "must be >= 0, or AutoDiscoverEvery (-1)")
	case s.DiscoverEvery == 0:
		s.DiscoverEvery = s.defaultDiscoverEvery()
	case s.DiscoverEvery == s.Every:
	case s.Interval > 0:
		bad("discover-every", "needs a count window (every), not interval")
	case s.Every > 0 && s.DiscoverEvery%s.Every != 0:
		bad("discover-every", "must be a multiple of every (%d), not %d", s.Every, s.DiscoverEvery)
	case s.hasOrdinalList():
		bad("discover-every", "the incremental checks order an ordinal column by bytes only; drop the value list of ordinal or discover-every")
	}
}

// checkThresholds checks what makes a rule hold, tracked and alerted on.
func (s *StreamConfig) checkThresholds(bad func(field, format string, args ...any)) {
	// NaN fails every comparison: it is named explicitly.
	if math.IsNaN(s.Epsilon) || s.Epsilon < 0 || s.Epsilon >= 1 {
		bad("epsilon", "must be in [0, 1)")
	}
	if s.Margin != AutoMargin && !(s.Margin >= 0 && s.Margin < 1) {
		bad("margin", "must be in [0, 1), or AutoMargin (-1)")
	}
	if s.DiscoverAfter < 0 {
		bad("discover-after", "must be >= 0")
	}
	if s.MinScore != AutoMinScore && !(s.MinScore >= 0 && s.MinScore <= 1) {
		bad("min-score", "must be in [0, 1], or AutoMinScore (-1)")
	}
	if math.IsNaN(s.MinStrength) || s.MinStrength < 0 || s.MinStrength > 1 {
		bad("min-strength", "must be in [0, 1]")
	}
	if s.K < 0 {
		bad("k", "must be >= 0")
	}
	if s.K == 0 {
		s.K = 1
	}
	if s.RetireAfter < 0 {
		bad("retire-after", "must be >= 0")
	}
	if s.MaxLevel < 0 {
		bad("max-level", "must be >= 0")
	}
	if s.Sample < 0 {
		bad("sample", "must be >= 0")
	}
	if s.Sample == 0 {
		s.Sample = DefaultSample
	}
	if s.EvaluationTimeout < 0 {
		bad("evaluation-timeout", "must be >= 0")
	}
}

// checkPinned parses the pinned dependencies.
func (s *StreamConfig) checkPinned(bad func(field, format string, args ...any)) {
	// A fresh slice: a copy of this StreamConfig (NewMonitor clones
	// the caller's) must not share and overwrite its array.
	s.pinned = nil
	for j, p := range s.Pinned {
		d, err := discovery.ParseDependency(p)
		if err != nil {
			bad(fmt.Sprintf("pinned[%d]", j), "%v", err)
			continue
		}
		s.pinned = append(s.pinned, d)
	}
}

// defaultDiscoverEvery is DiscoverEvery when left 0: the window size,
// rounded up to a multiple of Every, so that a check runs every Every
// records and discovery about once per window. A time window (Interval)
// and an ordinal value list, which the incremental checks do not support,
// run discovery at every evaluation (Every) instead of failing a
// configuration that never mentioned discover-every.
func (s *StreamConfig) defaultDiscoverEvery() int {
	if s.Interval > 0 || s.hasOrdinalList() || s.Every <= 0 || s.Window <= 0 {
		return s.Every
	}
	return (s.Window + s.Every - 1) / s.Every * s.Every
}

// hasOrdinalList reports whether an ordinal declaration orders a column by
// a list of values, which the incremental checks of two cadences refuse.
func (s *StreamConfig) hasOrdinalList() bool {
	for _, list := range s.Typing.Ordinal {
		if len(list) > 0 {
			return true
		}
	}
	return false
}

// evalConfig is what an evaluation reads of the stream's configuration.
func (s *StreamConfig) evalConfig() *eval.Config {
	return &eval.Config{
		Name: s.Name, Topic: s.Topic, Epsilon: s.Epsilon, Margin: s.Margin,
		MinStrength: s.MinStrength, MaxLevel: s.MaxLevel, EvaluationTimeout: s.EvaluationTimeout,
		MinScore: s.MinScore, Sample: s.Sample, Window: s.Window, Every: s.Every, DiscoverEvery: s.DiscoverEvery,
		Typing: s.Typing, K: s.K, RetireAfter: s.RetireAfter, DiscoverAfter: s.DiscoverAfter, Pinned: s.pinned,
	}
}
