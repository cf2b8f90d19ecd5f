package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
)

const discoverHelp = `Discovers the minimal approximate order dependencies (OCs) and functional
dependencies (OFDs) of a CSV or JSON Lines file (gzip detected by content).
FILE may be - for standard input. Flags may come before or after FILE.

Example:
  odwatch discover data.csv --epsilon 0.05 --format json

Exit status: 0 success, 1 failure, 2 usage or input error.`

func runDiscover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tf := newTableFlags("discover", "FILE [flags]", discoverHelp, stdout,
		"approximation threshold in [0, 1): a dependency holds when at most floor(eps*rows) rows must be removed",
		"AOC validator: lis (exact, O(n log n)) or iterative (the paper's baseline, for comparison)")
	fs, in, eps := tf.fs, &tf.in, tf.eps
	format := fs.String("format", "text", "output format: text or json")
	maxLevel := fs.Int("max-level", 0, "stop the lattice at this level (columns a dependency mentions); 0 means no limit (default: no limit)")
	removalSample := fs.Int("removal-sample", 0, "list up to K rows of a minimal removal set per dependency (text: lines of the file; json: 0-based data rows)")
	all := fs.Bool("all", false, "also list the dependencies that hold but are not reliable (look like chance)")
	legend := fs.Bool("legend", true, "explain the text listing in three lines under it (--legend=false for the compact form)")
	timeout := fs.Duration("timeout", 0, "stop discovery after this long and print the levels completed; 0 means no limit (default: no limit)")
	workers := fs.Int("workers", 0, "validation workers (default: GOMAXPROCS, the usable CPUs)")

	pos, vk, err := tf.parse(args, 1, "exactly one FILE argument")
	if err != nil || pos == nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usageErr(fmt.Sprintf("--format %q: want text or json", *format), "for example --format json")
	}
	if *maxLevel < 0 || *removalSample < 0 || *workers < 0 || *timeout < 0 {
		return usageErr("--max-level, --removal-sample, --workers and --timeout must not be negative", "leave a flag out for its default")
	}

	bar := newProgressBar(stderr)
	defer bar.done()
	tab, err := in.load(ctx, pos[0], stderr, bar)
	if err != nil {
		return err
	}

	runCtx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	lp := &levelProgress{maxLevel: len(tab.Columns)}
	if *maxLevel > 0 {
		lp.maxLevel = min(lp.maxLevel, *maxLevel)
	}
	opts := discovery.Options{
		Epsilon:       *eps,
		MaxLevel:      *maxLevel,
		Workers:       *workers,
		Validator:     vk,
		RemovalSample: *removalSample,
		MinStrength:   *tf.minStrength,
		// The text listing without --all prints reliable results only.
		BoundUnreliable: *format == "text" && !*all,
		Progress: func(p discovery.Progress) {
			bar.set(lp.line(p, time.Since(bar.start)))
		},
	}
	d, err := discovery.Discover(runCtx, tab, opts)
	if err == nil {
		err = discovery.Summarize(runCtx, tab, d, opts)
	}
	bar.done()
	if err != nil {
		// A spent --timeout is the user's choice: print what was found.
		if d == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err // discovery's errors name themselves
		}
		fmt.Fprintf(stderr, "odwatch discover: --timeout %v reached after %d complete levels; the output is incomplete\n", *timeout, d.Stats.Levels)
	}
	if *format == "json" {
		return d.WriteJSON(stdout)
	}
	return writeListing(stdout, d, &in.lines, *all, *legend, *removalSample > 0)
}

// writeListing writes d as the text listing (all: the unreliable results
// too), its removal samples as lines of the file, and the legend under it
// when asked.
func writeListing(w io.Writer, d *discovery.Discovery, lines *tableio.Lines, all, legend, sample bool) error {
	for i := range d.Dependencies {
		for k, row := range d.Dependencies[i].RemovalSample {
			d.Dependencies[i].RemovalSample[k] = lines.Line(row)
		}
	}
	if err := d.WriteText(w, all); err != nil {
		return err
	}
	if legend {
		return writeLegend(w, d, sample)
	}
	return nil
}

// writeLegend explains the text listing in at most three lines, in plain
// words, with its first dependency as the example.
func writeLegend(w io.Writer, d *discovery.Discovery, sample bool) error {
	if len(d.Dependencies) == 0 {
		return nil
	}
	first := d.Dependencies[0]
	measures := "e = share of rows to remove for it to hold exactly (removals = how many); score = share of row pairs its context groups together (1 for {})"
	if first.Strength != discovery.NoStrength {
		measures = "strength: 1 = holds perfectly, 0 = no better than chance; " + measures
	}
	if sample {
		measures += "; sample = lines of the file"
	}
	_, err := fmt.Fprintf(w, "# how to read it: %s means %s.\n"+
		"# X: A ~ B = within each group of equal X, sorting by A sorts B (desc: in reverse); X: [] -> A = X determines A%s.\n"+
		"# %s.\n", first.Dependency, discovery.DescribeResult(first), ruleLegend(d), measures)
	return err
}

// ruleLegend explains the notation of keys and equivalences, and of
// entries that state other rules with theirs, when the listing has any.
func ruleLegend(d *discovery.Discovery) string {
	var rules, with string
	for _, r := range d.Dependencies {
		if r.Kind == discovery.KindKey || r.Kind == discovery.KindEquivalence {
			rules = "; key(A) = A identifies a record; A <-> B = A and B determine each other"
		}
		if r.Reliable && len(r.With) > 0 {
			with = "; with=[...] = rules the line states too"
		}
	}
	return rules + with
}

// inputFlags are the flags that say how to read the input file.
type inputFlags struct {
	delimiter string
	input     string
	maxRows   int
	ordinal   ordinalFlag
	orderText bool

	// lines maps the rows of the table load read to the lines of the file.
	lines tableio.Lines
}

func (in *inputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&in.delimiter, "delimiter", ",", `CSV field delimiter, one character ("tab" or \t for a tab)`)
	fs.StringVar(&in.input, "input", "auto", "input format: csv, jsonl, or auto (jsonl for .jsonl/.ndjson names, .gz stripped, and for - when it starts with '{'; csv otherwise)")
	fs.IntVar(&in.maxRows, "max-rows", 0, "read at most N data rows; 0 means all (default: all)")
	fs.Var(&in.ordinal, "ordinal", "declare a text column ordered, by the listed values lowest first (COL=v1,v2,...) or by bytes (COL); repeatable")
	fs.BoolVar(&in.orderText, "order-text", false, "order every text column by bytes and skip temporal typing: the paper's complete discovery")
}

// ordinalFlag collects --ordinal COL[=v1,v2,...] declarations.
type ordinalFlag map[string][]string

func (o *ordinalFlag) String() string {
	var parts []string
	for col, list := range *o {
		parts = append(parts, col+"="+strings.Join(list, ","))
	}
	return strings.Join(parts, " ")
}

func (o *ordinalFlag) Set(v string) error {
	col, list, hasList := strings.Cut(v, "=")
	if col == "" {
		return fmt.Errorf("want COL or COL=v1,v2,..., got %q", v)
	}
	if *o == nil {
		*o = ordinalFlag{}
	}
	if _, dup := (*o)[col]; dup {
		return fmt.Errorf("column %q declared twice", col)
	}
	var values []string
	if hasList {
		values = strings.Split(list, ",")
		if list == "" {
			return fmt.Errorf("column %q: empty list (leave out = to order by bytes)", col)
		}
	}
	(*o)[col] = values
	return nil
}

// typing is the discovery.Typing the flags ask for.
func (in *inputFlags) typing() table.Typing {
	return table.Typing{OrderText: in.orderText, Ordinal: in.ordinal}
}

// format resolves --input for a file name.
func (in *inputFlags) format(path string) (string, error) {
	switch in.input {
	case "csv", "jsonl":
		return in.input, nil
	case "auto":
		name := strings.TrimSuffix(strings.ToLower(path), ".gz")
		if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".ndjson") {
			return "jsonl", nil
		}
		return "csv", nil
	}
	return "", usageErr(fmt.Sprintf("--input %q: want csv, jsonl or auto", in.input), "for example --input jsonl")
}

func (in *inputFlags) comma() (rune, error) {
	switch in.delimiter {
	case "tab", `\t`:
		return '\t', nil
	}
	r, size := utf8.DecodeRuneInString(in.delimiter)
	if size == 0 || size != len(in.delimiter) || r == utf8.RuneError || r == '"' || r == '\r' || r == '\n' {
		return 0, usageErr(fmt.Sprintf("--delimiter %q: want one character other than a quote or newline", in.delimiter), `for example --delimiter ";" or --delimiter tab`)
	}
	return r, nil
}

// load reads and encodes the table at path ("-" = standard input).
func (in *inputFlags) load(ctx context.Context, path string, stderr io.Writer, bar *progressBar) (*table.Table, error) {
	format, err := in.format(path)
	if err != nil {
		return nil, err
	}
	comma, err := in.comma()
	if err != nil {
		return nil, err
	}
	if in.maxRows < 0 {
		return nil, usageErr(fmt.Sprintf("--max-rows %d: must not be negative", in.maxRows), "leave it out to read all rows")
	}
	var r io.Reader = os.Stdin
	if path == "-" {
		br := bufio.NewReaderSize(os.Stdin, 1<<16)
		if in.input == "auto" && looksLikeJSON(br) {
			format = "jsonl"
		}
		r = br
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, inputErr(err, "check the path; FILE may also be - for standard input")
		}
		defer f.Close()
		r = f
	}
	r = ctxReader{ctx: ctx, r: r}
	progress := func(rows int) { bar.set(fmt.Sprintf("loading %s: %d rows", path, rows)) }
	var tab *table.Table
	if format == "jsonl" {
		var info tableio.JSONInfo
		tab, info, err = tableio.ReadJSONLines(r, tableio.JSONOptions{MaxRows: in.maxRows, Progress: progress, Lines: &in.lines, Typing: in.typing()})
		if err == nil && info.Skipped > 0 {
			fmt.Fprintf(stderr, "odwatch: %s: ignored %d array values (only scalar fields become columns)\n", path, info.Skipped)
		}
	} else {
		tab, err = tableio.ReadCSV(r, tableio.CSVOptions{Delimiter: comma, MaxRows: in.maxRows, Progress: progress, Lines: &in.lines, Typing: in.typing()})
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, table.ErrOrdinal) {
			return nil, usageErr("--ordinal: "+err.Error(), "list every value of the column, or name it without = to order it by bytes")
		}
		return nil, inputErr(fmt.Errorf("%s: %w", path, err), loadFix(format, err))
	}
	if tab.Rows == 0 {
		// Nothing to find or check: a listing of no dependencies would
		// read as "none hold".
		fix := "the file has a header line and no record under it"
		if format == "jsonl" {
			fix = "the file holds no JSON object"
		}
		return nil, inputErr(fmt.Errorf("%s: no data rows", path), fix)
	}
	return tab, nil
}

// loadFix is the advice under a file that could not be read as format.
func loadFix(format string, err error) string {
	switch {
	case errors.Is(err, tableio.ErrTruncatedGzip):
		return "the gzip file is incomplete: copy or download it again"
	case errors.Is(err, tableio.ErrNotText):
		return "give a CSV file with a header line or a JSON Lines file (either may be gzipped)"
	case format == "jsonl":
		return "each line must be one JSON object; pass --input csv if the file is CSV"
	}
	return "the file must be CSV with a header line; see --delimiter, and --input jsonl for JSON Lines"
}

// looksLikeJSON peeks at standard input: a first non-blank byte '{' means
// JSON Lines (gzip-compressed input is taken as CSV: name the file
// .jsonl.gz or pass --input jsonl).
func looksLikeJSON(br *bufio.Reader) bool {
	for n := 1; n <= 4096; n++ {
		b, _ := br.Peek(n)
		if len(b) < n {
			return false
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// ctxReader stops reading once ctx is done, so that an interrupt cancels a
// long load.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// tableFlags are the flags discover and validate share: the input, epsilon
// and the validator, parsed with positional arguments anywhere.
type tableFlags struct {
	fs          *flag.FlagSet
	stdout      io.Writer // where -h prints
	synopsis    string
	in          inputFlags
	eps         *float64
	validator   *string
	minStrength *float64
}

// newTableFlags makes the flag set of discover or validate (synopsis and
// description as newFlagSet takes them); help goes to stdout.
func newTableFlags(name, synopsis, description string, stdout io.Writer, epsHelp, validatorHelp string) *tableFlags {
	t := &tableFlags{fs: newFlagSet(name, synopsis, description), stdout: stdout, synopsis: synopsis}
	t.in.register(t.fs)
	t.eps = t.fs.Float64("epsilon", 0.05, epsHelp)
	t.validator = t.fs.String("validator", "lis", validatorHelp)
	t.minStrength = t.fs.Float64("min-strength", discovery.DefaultMinStrength, "strength in [0, 1] from which a dependency is reliable (how much better than chance it holds); 0 = every dependency")
	return t
}

// parse parses args, wants exactly nargs positional arguments (described by
// want) and checks epsilon and the validator. A nil pos with a nil error
// means help was asked for and printed. A wrong number of positional
// arguments returns them with the error.
func (t *tableFlags) parse(args []string, nargs int, want string) (pos []string, vk discovery.ValidatorKind, err error) {
	pos, err = parseArgs(t.fs, args, t.stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if len(pos) != nargs {
		return pos, 0, usageErr(fmt.Sprintf("want %s, got %d arguments", want, len(pos)), "usage: odwatch "+t.fs.Name()+" "+t.synopsis)
	}
	if err := checkEpsilon(*t.eps); err != nil {
		return nil, 0, err
	}
	if vk, err = parseValidator(*t.validator); err != nil {
		return nil, 0, err
	}
	if m := *t.minStrength; !(m >= 0 && m <= 1) {
		return nil, 0, usageErr(fmt.Sprintf("--min-strength %v: want a value in [0, 1]", m), fmt.Sprintf("for example --min-strength %v (the default)", discovery.DefaultMinStrength))
	}
	return pos, vk, nil
}

func checkEpsilon(eps float64) error {
	if !(eps >= 0 && eps < 1) {
		return usageErr(fmt.Sprintf("--epsilon %v: want a share in [0, 1)", eps), "for example --epsilon 0.05 (5% of the rows may be exceptions)")
	}
	return nil
}

func parseValidator(s string) (discovery.ValidatorKind, error) {
	switch s {
	case "lis":
		return discovery.ValidatorLIS, nil
	case "iterative":
		return discovery.ValidatorIterative, nil
	}
	return 0, usageErr(fmt.Sprintf("--validator %q: want lis or iterative", s), "leave it out for lis, the exact one")
}

// progressBar draws one self-overwriting status line on stderr, only when
// stderr is a terminal and only once the run has taken more than a second,
// so that quick runs and redirected output stay clean. It is safe for
// concurrent use (discovery reports from its workers).
type progressBar struct {
	w       io.Writer
	enabled bool
	start   time.Time

	mu    sync.Mutex
	last  time.Time
	shown bool
}

func newProgressBar(stderr io.Writer) *progressBar {
	p := &progressBar{w: stderr, start: time.Now()}
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.enabled = true
		}
	}
	return p
}

func (p *progressBar) set(msg string) {
	if p == nil || !p.enabled {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	p.shown = true
	fmt.Fprintf(p.w, "\r\033[K%s", msg)
}

// done erases the status line, if one was drawn.
func (p *progressBar) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// levelProgress turns discovery's progress reports into a status line in
// which every figure only moves forward:
//
//	level 3 of 9: FDs 30/30, orders 6/21 (28%), 42 dependencies found, 12s
//
// A level validates its FD candidates first, and only then knows its order
// candidates (those whose FDs did not hold); discovery reports them as one
// growing total, so a single bar over it would run backwards. Here each
// phase has its own count and the percentage is the running phase's. It is
// called from one goroutine at a time (discovery's guarantee).
type levelProgress struct {
	maxLevel int // the last level the lattice can reach

	level      int           // level of the last report
	fds        int64         // FD candidates of the level (its first total)
	orders     bool          // the level is in its order phase
	phaseStart time.Duration // elapsed time when the running phase began
}

// etaAfter is how long a phase must have run before its remaining time is
// estimated (a rate over less is noise).
const etaAfter = 2 * time.Second

func (lp *levelProgress) line(p discovery.Progress, elapsed time.Duration) string {
	if p.Level != lp.level {
		lp.level, lp.fds, lp.orders, lp.phaseStart = p.Level, p.Candidates, false, elapsed
	}
	if p.Candidates != lp.fds && !lp.orders {
		lp.orders, lp.phaseStart = true, elapsed
	}
	var b strings.Builder
	fmt.Fprintf(&b, "level %d of %d: ", p.Level, max(lp.maxLevel, p.Level))
	if !lp.orders {
		fmt.Fprintf(&b, "FDs %d/%d (%s)", p.Validated, lp.fds, lp.percent(p.Validated, lp.fds, elapsed))
	} else {
		orders, done := p.Candidates-lp.fds, max(p.Validated-lp.fds, 0)
		fmt.Fprintf(&b, "FDs %d/%d, orders %d/%d (%s)", lp.fds, lp.fds, done, orders, lp.percent(done, orders, elapsed))
	}
	fmt.Fprintf(&b, ", %d dependencies found, %s", p.Found, elapsed.Round(time.Second))
	return b.String()
}

// percent renders done/total of the running phase, with an estimate of the
// time it has left once it has run for etaAfter.
func (lp *levelProgress) percent(done, total int64, elapsed time.Duration) string {
	if total <= 0 {
		return "100%"
	}
	done = min(done, total)
	s := fmt.Sprintf("%d%%", done*100/total)
	if ran := elapsed - lp.phaseStart; ran >= etaAfter && done > 0 && done < total {
		left := time.Duration(float64(ran) * float64(total-done) / float64(done))
		s += ", about " + left.Round(time.Second).String() + " left"
	}
	return s
}
