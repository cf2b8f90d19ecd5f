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
)

const discoverUsage = `usage: odwatch discover FILE [flags]

Discovers the minimal approximate order dependencies (OCs) and functional
dependencies (OFDs) of a CSV or JSON Lines file (gzip detected by content).
FILE may be - for standard input. Flags may come before or after FILE.

flags:`

func runDiscover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tf := newTableFlags("discover", discoverUsage, stderr,
		"approximation threshold in [0, 1): a dependency holds when at most floor(eps*rows) rows must be removed",
		"AOC validator: lis (exact, O(n log n)) or iterative (the paper's baseline, for comparison)")
	fs, in, eps := tf.fs, &tf.in, tf.eps
	format := fs.String("format", "text", "output format: text or json")
	maxLevel := fs.Int("max-level", 0, "stop the lattice at this level (columns a dependency mentions); 0 = no limit")
	removalSample := fs.Int("removal-sample", 0, "list up to K row numbers (0-based) of a minimal removal set per dependency")
	timeout := fs.Duration("timeout", 0, "stop discovery after this long and print the levels completed; 0 = no limit")
	workers := fs.Int("workers", 0, "validation workers; 0 = GOMAXPROCS")

	pos, vk, err := tf.parse(args, 1, "exactly one FILE argument")
	if err != nil || pos == nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("%w: --format must be text or json, got %q", errUsage, *format)
	}
	if *maxLevel < 0 || *removalSample < 0 || *workers < 0 || *timeout < 0 {
		return fmt.Errorf("%w: --max-level, --removal-sample, --workers and --timeout must not be negative", errUsage)
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
	opts := discovery.Options{
		Epsilon:       *eps,
		MaxLevel:      *maxLevel,
		Workers:       *workers,
		Validator:     vk,
		RemovalSample: *removalSample,
		Progress: func(p discovery.Progress) {
			bar.set(fmt.Sprintf("level %d %s %d/%d candidates, %d found",
				p.Level, bar.gauge(p.Validated, p.Candidates), p.Validated, p.Candidates, p.Found))
		},
	}
	d, err := discovery.Discover(runCtx, tab, opts)
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
	return d.WriteText(stdout)
}

// inputFlags are the flags that say how to read the input file.
type inputFlags struct {
	delimiter string
	input     string
	maxRows   int
}

func (in *inputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&in.delimiter, "delimiter", ",", `CSV field delimiter, one character ("tab" or \t for a tab)`)
	fs.StringVar(&in.input, "input", "auto", "input format: csv, jsonl, or auto (jsonl for .jsonl/.ndjson names, .gz stripped, and for - when it starts with '{'; csv otherwise)")
	fs.IntVar(&in.maxRows, "max-rows", 0, "read at most N data rows; 0 = all")
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
	return "", fmt.Errorf("%w: --input must be csv, jsonl or auto, got %q", errUsage, in.input)
}

func (in *inputFlags) comma() (rune, error) {
	switch in.delimiter {
	case "tab", `\t`:
		return '\t', nil
	}
	r, size := utf8.DecodeRuneInString(in.delimiter)
	if size == 0 || size != len(in.delimiter) || r == utf8.RuneError || r == '"' || r == '\r' || r == '\n' {
		return 0, fmt.Errorf("%w: --delimiter must be one character other than a quote or newline, got %q", errUsage, in.delimiter)
	}
	return r, nil
}

// load reads and encodes the table at path ("-" = standard input).
func (in *inputFlags) load(ctx context.Context, path string, stderr io.Writer, bar *progressBar) (*discovery.Table, error) {
	format, err := in.format(path)
	if err != nil {
		return nil, err
	}
	comma, err := in.comma()
	if err != nil {
		return nil, err
	}
	if in.maxRows < 0 {
		return nil, fmt.Errorf("%w: --max-rows must not be negative", errUsage)
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
			return nil, err
		}
		defer f.Close()
		r = f
	}
	r = ctxReader{ctx: ctx, r: r}
	progress := func(rows int) { bar.set(fmt.Sprintf("loading %s: %d rows", path, rows)) }
	var tab *discovery.Table
	if format == "jsonl" {
		var info discovery.JSONInfo
		tab, info, err = discovery.ReadJSONLines(r, discovery.JSONOptions{MaxRows: in.maxRows, Progress: progress})
		if err == nil && info.Skipped > 0 {
			fmt.Fprintf(stderr, "odwatch: %s: ignored %d array values (only scalar fields become columns)\n", path, info.Skipped)
		}
	} else {
		tab, err = discovery.ReadCSV(r, discovery.CSVOptions{Delimiter: comma, MaxRows: in.maxRows, Progress: progress})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tab, nil
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
	fs        *flag.FlagSet
	in        inputFlags
	eps       *float64
	validator *string
}

func newTableFlags(name, usageText string, stderr io.Writer, epsHelp, validatorHelp string) *tableFlags {
	t := &tableFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	t.fs.SetOutput(stderr)
	t.in.register(t.fs)
	t.eps = t.fs.Float64("epsilon", 0.05, epsHelp)
	t.validator = t.fs.String("validator", "lis", validatorHelp)
	t.fs.Usage = func() {
		fmt.Fprintln(stderr, usageText)
		t.fs.PrintDefaults()
	}
	return t
}

// parse parses args, wants exactly nargs positional arguments (described by
// want) and checks epsilon and the validator. A nil pos with a nil error
// means help was asked for and printed.
func (t *tableFlags) parse(args []string, nargs int, want string) (pos []string, vk discovery.ValidatorKind, err error) {
	pos, err = parseInterspersed(t.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(pos) != nargs {
		t.fs.Usage()
		return nil, 0, fmt.Errorf("%w: want %s, got %d", errUsage, want, len(pos))
	}
	if err := checkEpsilon(*t.eps); err != nil {
		return nil, 0, err
	}
	if vk, err = parseValidator(*t.validator); err != nil {
		return nil, 0, err
	}
	return pos, vk, nil
}

func checkEpsilon(eps float64) error {
	if !(eps >= 0 && eps < 1) {
		return fmt.Errorf("%w: --epsilon must be in [0, 1), got %v", errUsage, eps)
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
	return 0, fmt.Errorf("%w: --validator must be lis or iterative, got %q", errUsage, s)
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments (the flag package stops at the first non-flag); after
// "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
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

// gauge renders done/total as a 20-cell bar.
func (p *progressBar) gauge(done, total int64) string {
	const cells = 20
	filled := 0
	if total > 0 {
		filled = int(min(done, total) * cells / total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", cells-filled) + "]"
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
