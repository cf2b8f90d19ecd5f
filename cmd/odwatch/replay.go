package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/stream"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/odwatch/odwatch/stream/window"
)

const replayDescription = `Runs the monitor's window, evaluation and tracker code offline over a file
(CSV or JSON Lines, records in file order) or a topic range (--brokers,
--topic, --from, --to; partitions merged by record time), and prints the
events it would have raised, then a summary: events by type, evaluations,
time. The same input and flags give the same events and event ids.
Required: a FILE, or --brokers and --topic.

Example: how many alerts would epsilon 0.03 have raised on last week's data:
  odwatch replay --brokers kafka:9092 --topic payments --from 2026-11-23T00:00:00Z --to 2026-11-30T00:00:00Z --epsilon 0.03
  odwatch replay events.jsonl --window 1000 --every 500 --time-field ts

Exit status: 0 success, 1 failure, 2 usage or input error.`

// marginFlag is --margin: a share, or "auto" (negative inside): the noise
// margin of the window's size (alerts.NoiseMargin).
type marginFlag float64

func (m *marginFlag) String() string {
	if *m < 0 {
		return "auto"
	}
	return strconv.FormatFloat(float64(*m), 'g', -1, 64)
}

func (m *marginFlag) Set(v string) error {
	if v == "auto" {
		*m = marginFlag(alerts.AutoMargin)
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f < 1) {
		return errors.New("want a share in [0, 1) or auto")
	}
	*m = marginFlag(f)
	return nil
}

// UnmarshalYAML reads the config file's margin: a number or auto.
func (m *marginFlag) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	if err := m.Set(s); err != nil {
		return fmt.Errorf("margin %q: %w", s, err)
	}
	return nil
}

// autoShare is --min-score: a share in [0, 1], or "auto" (negative
// inside).
type autoShare float64

func (a *autoShare) String() string { return (*marginFlag)(a).String() }

func (a *autoShare) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil && f == 1 {
		*a = 1
		return nil
	}
	return (*marginFlag)(a).Set(v)
}

// UnmarshalYAML reads the config file's min-score: a number or auto.
func (a *autoShare) UnmarshalYAML(unmarshal func(any) error) error {
	return (*marginFlag)(a).UnmarshalYAML(unmarshal)
}

// minScoreHelp is the help of --min-score for run and replay.
const minScoreHelp = "do not track new dependencies whose score (share of row pairs their context groups) is below this: a share, or auto = 3/window records (a near-key context, whose records share their class with fewer than 2 others on average)"

// discoverEveryHelp is the help of --discover-every for run and replay.
const discoverEveryHelp = "run full discovery every D records (a multiple of --every), apart from the checks (run: on its own goroutine), the tracked rules being re-checked incrementally every --every records; D = --every runs discovery at every evaluation; auto (the default): as often as half a core allows, at most at every check and at least once per window (replay: once per window) (--every with --interval or an --ordinal value list)"

// everyOrAuto is --discover-every: records, or "auto" (0 inside,
// stream.AutoDiscoverEvery once configured: value).
type everyOrAuto int

func (d *everyOrAuto) String() string {
	if *d == 0 {
		return "auto"
	}
	return strconv.Itoa(int(*d))
}

func (d *everyOrAuto) Set(v string) error {
	if v == "auto" {
		*d = 0
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return errors.New("want a number of records or auto")
	}
	*d = everyOrAuto(n)
	return nil
}

// UnmarshalYAML reads the config file's discover-every: records or auto.
func (d *everyOrAuto) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	if err := d.Set(s); err != nil {
		return fmt.Errorf("discover-every %q: %w", s, err)
	}
	return nil
}

// value is the stream configuration's DiscoverEvery.
func (d everyOrAuto) value() int {
	if d == 0 {
		return stream.AutoDiscoverEvery
	}
	return int(d)
}

// marginHelp is the help of --margin for run and replay.
const marginHelp = "hysteresis margin around epsilon: a share, or auto = 3 standard errors of a proportion at epsilon in a window of its size, at most epsilon/2"

// replayFlags are the flags of `odwatch replay`.
type replayFlags struct {
	fs     *flag.FlagSet
	in     inputFlags
	cfg    stream.StreamConfig
	margin marginFlag
	// minScore: auto (negative) or a share.
	minScore      autoShare
	discoverEvery everyOrAuto
	include       listFlag
	exclude       listFlag
	pinned        listFlag
	format        string
	log           string
	// timeField names the file column holding the record time.
	timeField string

	brokers     listFlag
	topic       string
	from, to    string
	inputFormat string
}

func newReplayFlags() *replayFlags {
	f := &replayFlags{fs: newFlagSet("replay", "[FILE] [flags]", replayDescription), margin: marginFlag(alerts.AutoMargin), minScore: autoShare(stream.AutoMinScore)}
	fs, c := f.fs, &f.cfg
	f.in.register(fs)
	fs.Var(&f.brokers, "brokers", "Kafka brokers to read --topic from, HOST:PORT[,HOST:PORT...] (instead of FILE)")
	fs.StringVar(&f.topic, "topic", "", "topic to replay (with --brokers)")
	fs.StringVar(&f.from, "from", "", "first record of the topic: an offset (every partition) or an RFC 3339 time (default: the first)")
	fs.StringVar(&f.to, "to", "", "end of the topic range, exclusive: an offset or an RFC 3339 time (default: the end when replay starts)")
	fs.StringVar(&f.inputFormat, "record-format", "json", "topic record format: json, avro or avro-confluent")
	fs.StringVar(&c.SchemaFile, "schema", "", "Avro schema file (--record-format avro)")
	fs.StringVar(&c.RegistryURL, "registry", "", "Schema Registry URL (--record-format avro-confluent)")
	fs.StringVar(&c.Name, "name", "", "stream name in events (default: the topic, or the file's base name)")
	fs.Var(&f.include, "include", "only these columns (names or prefix.*), comma-separated or repeated")
	fs.Var(&f.exclude, "exclude", "drop these columns (names or prefix.*)")
	fs.IntVar(&c.Window, "window", 10000, "window size in records")
	fs.IntVar(&c.Every, "every", 0, "evaluate every M records (default: the window size, tumbling)")
	fs.Var(&f.discoverEvery, "discover-every", discoverEveryHelp)
	fs.Float64Var(&c.Epsilon, "epsilon", defaultEpsilon, "error threshold: a dependency holds when removals <= floor(eps*n)")
	fs.Var(&f.margin, "margin", marginHelp)
	fs.IntVar(&c.K, "k", 1, "consecutive windows beyond the margin before violated/restored")
	fs.IntVar(&c.RetireAfter, "retire-after", alerts.DefaultRetireAfter, "windows before a replaced dependency is retired")
	fs.IntVar(&c.DiscoverAfter, "discover-after", stream.DefaultDiscoverAfter, "consecutive windows a new dependency must hold (minimal and reliable) before it is discovered")
	fs.IntVar(&c.MaxLevel, "max-level", stream.DefaultMaxLevel, "lattice level limit: the most columns a dependency may mention (0: none)")
	fs.Float64Var(&c.MinStrength, "min-strength", discovery.DefaultMinStrength, "strength in [0, 1] from which a new dependency is reliable and tracked")
	fs.Var(&f.minScore, "min-score", minScoreHelp)
	fs.IntVar(&c.Sample, "sample", stream.DefaultSample, "violating records carried per event")
	fs.Var(&f.pinned, "pin", "a dependency to always track, e.g. '{}: salary ~ tax (asc)' (repeatable)")
	fs.StringVar(&f.format, "format", "text", "output: text, or json (one event per line; the summary goes to standard error)")
	fs.StringVar(&f.timeField, "time-field", "", "FILE replay: the column holding each record's time (ISO 8601 / RFC 3339, e.g. 2026-11-30T01:05:00Z), for event and window times; without it a file's events carry no time")
	fs.StringVar(&f.log, "log-level", "info", "debug|info|warn|error (logs go to standard error)")
	return f
}

// runReplay is `odwatch replay`.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newReplayFlags()
	pos, err := parseArgs(f.fs, args, stdout)
	if err != nil {
		return err
	}
	src, err := f.source(pos)
	if err != nil {
		return err
	}
	if f.format != "text" && f.format != "json" {
		return usageErr(fmt.Sprintf("--format %q: want text or json", f.format), "for example --format json")
	}
	c := f.cfg
	c.Margin, c.MinScore, c.DiscoverEvery = float64(f.margin), float64(f.minScore), f.discoverEvery.value()
	c.Include, c.Exclude, c.Pinned = f.include, f.exclude, f.pinned
	c.Typing = f.in.typing()
	c.Topic = src.label
	if c.Name == "" {
		c.Name = src.label
	}
	logger, err := newLogger(stderr, f.log, "text")
	if err != nil {
		return err
	}
	r, err := stream.NewReplayer(c, logger)
	if err != nil {
		return usageErr(err.Error(), "see the flags with -h")
	}
	start := time.Now()
	p := &eventPrinter{w: bufio.NewWriter(stdout), json: f.format == "json"}
	add := func(meta window.RowMeta, rec *decode.FlatRecord) error {
		evs, err := r.Add(ctx, meta, rec)
		if err != nil {
			return err
		}
		return p.print(evs)
	}
	var skipped int
	if src.file != "" {
		skipped, err = f.replayFile(ctx, src.file, add)
	} else {
		skipped, err = f.replayTopic(ctx, add)
	}
	if ferr := p.w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	summary := stdout
	if p.json {
		summary = stderr
	}
	st := r.Stats()
	writeReplaySummary(summary, st, skipped, time.Since(start))
	return windowTooLarge(st, c.Window)
}

// windowTooLarge is replay's error when the input had fewer records than
// one window, so nothing was evaluated: an exit status 0 with zero
// evaluations read as "no alert would have been raised".
func windowTooLarge(st stream.ReplayStats, window int) error {
	if st.Evaluations > 0 || st.Failed > 0 || st.Records >= uint64(window) {
		return nil
	}
	if st.Records == 0 {
		return usageErr("no records: nothing was evaluated", "the input holds no record to replay: check the file, or --from and --to of the topic")
	}
	return usageErr(fmt.Sprintf("%d records, fewer than --window %d: no window was evaluated", st.Records, window),
		fmt.Sprintf("lower --window to at most %d (and --every with it), or replay more records", st.Records))
}

// replaySource is what replay reads: a file, or the topic of the flags.
type replaySource struct {
	file  string // empty for a topic
	label string // the records' topic in events
}

func (f *replayFlags) source(pos []string) (replaySource, error) {
	switch {
	case len(pos) > 1:
		return replaySource{}, usageErr(fmt.Sprintf("want one FILE, got %d arguments", len(pos)), "usage: odwatch replay FILE [flags], or --brokers B --topic T")
	case f.timeField != "" && f.topic != "":
		return replaySource{}, usageErr("--time-field is for a FILE", "a topic's records carry their Kafka timestamps; leave --time-field out")
	case len(pos) == 1 && f.topic != "":
		return replaySource{}, usageErr("give a FILE or --topic, not both", "drop FILE to replay the topic, or --topic to replay the file")
	case len(pos) == 1:
		label := strings.TrimSuffix(filepath.Base(pos[0]), ".gz")
		return replaySource{file: pos[0], label: strings.TrimSuffix(label, filepath.Ext(label))}, nil
	case f.topic == "":
		return replaySource{}, usageErr("nothing to replay", "give a CSV or JSON Lines FILE, or --brokers HOST:PORT --topic NAME")
	case len(f.brokers) == 0:
		return replaySource{}, usageErr("--topic needs --brokers", "for example --brokers localhost:9092")
	}
	return replaySource{label: f.topic}, nil
}

// replayFile feeds the records of a CSV or JSON Lines file in file order;
// a record's offset is its line in the file (partition 0), its time is
// unset. Undecodable JSON lines are skipped and counted.
func (f *replayFlags) replayFile(ctx context.Context, path string, add func(window.RowMeta, *decode.FlatRecord) error) (skipped int, err error) {
	format, err := f.in.format(path)
	if err != nil {
		return 0, err
	}
	comma, err := f.in.comma()
	if err != nil {
		return 0, err
	}
	r, closeInput, err := openReplayInput(path)
	if err != nil {
		return 0, err
	}
	defer closeInput()
	if format == "jsonl" {
		return f.replayJSONLines(ctx, r, path, add)
	}
	return 0, f.replayCSV(r, comma, path, add)
}

// openReplayInput opens path (- for standard input), gunzipping a .gz
// file; closeInput closes what it opened.
func openReplayInput(path string) (r io.Reader, closeInput func(), err error) {
	if path == "-" {
		return os.Stdin, func() {}, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, inputErr(err, "check the path; FILE may also be - for standard input")
	}
	if !strings.HasSuffix(strings.ToLower(path), ".gz") {
		return file, func() { file.Close() }, nil
	}
	gz, err := gzip.NewReader(file)
	if err != nil {
		file.Close()
		return nil, nil, inputErr(fmt.Errorf("%s: %w", path, err), "give a gzip file, or one without .gz")
	}
	return gz, func() { gz.Close(); file.Close() }, nil
}

// replayJSONLines feeds the JSON objects of r, one a line (blank lines
// skipped), decoded as the stream decodes them; undecodable ones are
// skipped and counted.
func (f *replayFlags) replayJSONLines(ctx context.Context, r io.Reader, path string, add func(window.RowMeta, *decode.FlatRecord) error) (skipped int, err error) {
	dec, err := decode.NewDecoder(decode.DecoderConfig{Format: decode.FormatJSON, Include: f.include, Exclude: f.exclude})
	if err != nil {
		return 0, err
	}
	var rec decode.FlatRecord
	tf := recordTime{name: f.timeField}
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), decode.DefaultMaxRecordBytes)
	for line := int64(1); sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		if n++; f.in.maxRows > 0 && n > f.in.maxRows {
			break
		}
		if err := dec.Decode(ctx, b, &rec); err != nil {
			var de *decode.DecodeError
			if errors.As(err, &de) {
				skipped++
				continue
			}
			return skipped, err
		}
		meta := window.RowMeta{Offset: line}
		if f.timeField != "" {
			if meta.Time, err = tf.parse(path, line, tf.find(&rec)); err != nil {
				return skipped, err
			}
		}
		if err := add(meta, &rec); err != nil {
			return skipped, err
		}
	}
	if err := sc.Err(); err != nil {
		return skipped, inputErr(fmt.Errorf("%s: %w", path, err), "each line must be one JSON object")
	}
	return skipped, nil
}

// replayCSV feeds the rows of the CSV r (its first line the header), with
// the columns --include/--exclude select; an empty cell is NULL.
func (f *replayFlags) replayCSV(r io.Reader, comma rune, path string, add func(window.RowMeta, *decode.FlatRecord) error) error {
	cr := csv.NewReader(r)
	cr.Comma, cr.ReuseRecord, cr.FieldsPerRecord = comma, true, -1
	header, err := cr.Read()
	if err != nil {
		return inputErr(fmt.Errorf("%s: header: %w", path, err), "a CSV file starts with a header line naming the columns")
	}
	header = slices.Clone(header)
	keep := make([]bool, len(header))
	for i, h := range header {
		keep[i] = selected(h, f.include, f.exclude)
	}
	tf := recordTime{name: f.timeField, col: slices.Index(header, f.timeField)}
	if tf.name != "" && tf.col < 0 {
		return usageErr(fmt.Sprintf("--time-field %s: %s has no such column", tf.name, path), "columns: "+strings.Join(header, ", "))
	}
	var rec decode.FlatRecord
	for n := 1; ; n++ {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return inputErr(fmt.Errorf("%s: %w", path, err), "fix the CSV line, or set --delimiter")
		}
		if f.in.maxRows > 0 && n > f.in.maxRows {
			return nil
		}
		line, _ := cr.FieldPos(0)
		rec.Reset()
		for i, v := range row {
			if i < len(header) && keep[i] {
				rec.Add([]byte(header[i]), []byte(v), v == "")
			}
		}
		meta := window.RowMeta{Offset: int64(line)}
		if tf.name != "" {
			v := ""
			if tf.col < len(row) {
				v = row[tf.col]
			}
			if meta.Time, err = tf.parse(path, int64(line), v); err != nil {
				return err
			}
		}
		if err := add(meta, &rec); err != nil {
			return err
		}
	}
}

// recordTime reads a file record's time from the --time-field column
// (col: its index in a CSV header).
type recordTime struct {
	name   string
	col    int
	layout int // the table.ParseTemporalFrom layout that read the last one
}

// find is the value of the field in rec ("" when it has none).
func (t *recordTime) find(rec *decode.FlatRecord) string {
	for i := range rec.Len() {
		if name, v, null := rec.Field(i); string(name) == t.name && !null {
			return string(v)
		}
	}
	return ""
}

func (t *recordTime) parse(path string, line int64, v string) (time.Time, error) {
	if tm, ok := table.ParseTemporalFrom(v, &t.layout); ok {
		return tm, nil
	}
	return time.Time{}, usageErr(fmt.Sprintf("%s line %d: --time-field %s: %q is not an ISO 8601 time", path, line, t.name, v),
		"the column must hold times such as 2026-11-30T01:05:00Z on every record; or leave --time-field out")
}

// selected applies --include/--exclude (names, or prefix* patterns) to a
// CSV column, as the stream decoders do to fields.
func selected(name string, include, exclude []string) bool {
	match := func(pats []string) bool {
		return slices.ContainsFunc(pats, func(p string) bool {
			if pre, ok := strings.CutSuffix(p, "*"); ok {
				return strings.HasPrefix(name, pre)
			}
			return p == name
		})
	}
	return (len(include) == 0 || match(include)) && !match(exclude)
}

// replayTopic feeds the records of the topic range, decoded as the monitor
// decodes them; undecodable ones are skipped and counted.
func (f *replayFlags) replayTopic(ctx context.Context, add func(window.RowMeta, *decode.FlatRecord) error) (skipped int, err error) {
	from, err := parseBound("--from", f.from)
	if err != nil {
		return 0, err
	}
	to, err := parseBound("--to", f.to)
	if err != nil {
		return 0, err
	}
	dc := decode.DecoderConfig{Format: f.inputFormat, RegistryURL: f.cfg.RegistryURL, Include: f.include, Exclude: f.exclude}
	if f.cfg.SchemaFile != "" {
		b, err := os.ReadFile(f.cfg.SchemaFile)
		if err != nil {
			return 0, inputErr(err, "--schema names the Avro schema file")
		}
		dc.Schema = string(b)
	}
	dec, err := decode.NewDecoder(dc)
	if err != nil {
		return 0, usageErr(err.Error(), "--record-format json, avro (with --schema) or avro-confluent (with --registry)")
	}
	var rec decode.FlatRecord
	n := 0
	err = kafkaread.ReadRange(ctx, f.brokers, nil, f.topic, from, to, func(tr kafkaread.Record) error {
		if n++; f.in.maxRows > 0 && n > f.in.maxRows {
			return errStop
		}
		if err := dec.Decode(ctx, tr.Value, &rec); err != nil {
			var de *decode.DecodeError
			if errors.As(err, &de) {
				skipped++
				return nil
			}
			return err
		}
		return add(window.RowMeta{Partition: tr.Partition, Offset: tr.Offset, Time: tr.Time}, &rec)
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return skipped, err
}

var errStop = errors.New("stop")

// parseBound reads --from/--to: empty, an offset, or an RFC 3339 time.
func parseBound(name, v string) (kafkaread.Bound, error) {
	if v == "" {
		return kafkaread.Bound{}, nil
	}
	if off, err := strconv.ParseInt(v, 10, 64); err == nil && off >= 0 {
		return kafkaread.Bound{Offset: off, IsOffset: true}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return kafkaread.Bound{}, usageErr(fmt.Sprintf("%s %q: want an offset or an RFC 3339 time", name, v), "for example "+name+" 1000 or "+name+" 2026-11-23T00:00:00Z")
	}
	return kafkaread.Bound{Time: t}, nil
}

// eventPrinter writes events as text (the demo's plain-words lines, see
// eventText) or JSON Lines.
type eventPrinter struct {
	w    *bufio.Writer
	json bool
}

// replayHeadline is an event's headline in a replay: where in the input it
// came (the time of the window's last record, or, for a file, whose records
// carry no time, how many records had been read), its type, stream and
// dependency.
func replayHeadline(e alerts.Event) string {
	at := e.Window.EndTime.UTC().Format(time.RFC3339)
	if e.Window.EndTime.IsZero() {
		at = fmt.Sprintf("after record %d:", e.Window.EndSeq+1)
	}
	return fmt.Sprintf("%s %s %s %s", at, eventType(e), e.Stream, e.DependencyText)
}

// replayEventJSON is the event's JSON; an event of records without time (a
// file replayed without --time-field) leaves out the times rather than
// stating year 1, its keys then in sorted order.
func replayEventJSON(e alerts.Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil || !e.Time.IsZero() {
		return b, err
	}
	var m, w map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "time")
	if err := json.Unmarshal(m["window"], &w); err != nil {
		return nil, err
	}
	delete(w, "start_time")
	delete(w, "end_time")
	if m["window"], err = json.Marshal(w); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func (p *eventPrinter) print(evs []alerts.Event) error {
	for _, e := range evs {
		if p.json {
			b, err := replayEventJSON(e)
			if err != nil {
				return err
			}
			p.w.Write(b)
			if err := p.w.WriteByte('\n'); err != nil {
				return err
			}
		} else if _, err := p.w.WriteString(eventText(e, replayHeadline(e))); err != nil {
			return err
		}
	}
	return nil
}

// writeReplaySummary prints what a replay did, in three lines:
//
//	replay: 65000 records, 12 evaluations (evaluation mean 0.412 s, max 0.731 s), 9.8 s in all
//	events: violated 1, restored 0, changed 0, discovered 14, retired 2
func writeReplaySummary(w io.Writer, st stream.ReplayStats, skipped int, took time.Duration) {
	mean := 0.0
	if st.Evaluations > 0 {
		mean = st.EvalTime.Seconds() / float64(st.Evaluations)
	}
	fmt.Fprintf(w, "replay: %d records, %d evaluations (evaluation mean %.3f s, max %.3f s), %.1f s in all\n",
		st.Records, st.Evaluations, mean, st.MaxEval.Seconds(), took.Seconds())
	fmt.Fprintf(w, "events: violated %d, restored %d, changed %d, discovered %d, retired %d\n",
		st.Events[alerts.EventViolated], st.Events[alerts.EventRestored], st.Events[alerts.EventChanged],
		st.Events[alerts.EventDiscovered], st.Events[alerts.EventRetired])
	if st.Failed > 0 || skipped > 0 {
		fmt.Fprintf(w, "not counted: %d windows whose evaluation failed (see the log), %d undecodable records\n", st.Failed, skipped)
	}
}
