package main

// The command-line conventions every subcommand follows (docs/DESIGN.md,
// "Command line"):
//
//   - Help: `odwatch CMD -h` prints "usage: odwatch CMD ARGS", a
//     description and the flags with their defaults on standard output, and
//     exits 0. Build the flag set with newFlagSet and parse it with
//     parseArgs, which prints the help and returns flag.ErrHelp.
//   - Errors: a usage or input error is returned as usageErr/inputErr (or
//     wraps errUsage) and printed by printError in at most three lines on
//     standard error: the problem, the fix, and "run 'odwatch CMD -h' for
//     more". Never the whole usage.
//   - Exit codes: 0 success; 1 a failure while running; 2 a usage or input
//     error. `validate` exits 1 when the dependency does not hold (its
//     output says so) and 2 on any error, so a script can tell the three
//     apart.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errUsage marks errors caused by a bad command line or bad input; they exit
// with exitUsage. Wrap it (fmt.Errorf("%w: ...", errUsage)) or, better,
// return usageErr with a fix.
var errUsage = errors.New("usage")

// cliError is a usage or input error: what is wrong and how to fix it.
type cliError struct {
	problem string
	fix     string // one line; may be empty
	cause   error  // for errors.Is/As; may be nil
}

func (e *cliError) Error() string {
	if e.fix == "" {
		return e.problem
	}
	return e.problem + " (" + e.fix + ")"
}

func (e *cliError) Is(target error) bool { return target == errUsage }
func (e *cliError) Unwrap() error        { return e.cause }

// usageErr is a bad command line: the problem and its fix, one line each.
func usageErr(problem, fix string) error { return &cliError{problem: problem, fix: fix} }

// inputErr is bad input (a missing or malformed file): the cause's text is
// the problem.
func inputErr(cause error, fix string) error {
	return &cliError{problem: cause.Error(), fix: fix, cause: cause}
}

// configErr is a bad setting of run or demo, found when the flags and the
// config file are checked (the error names the field); it exits exitUsage.
func configErr(err error) error {
	if err == nil || errors.Is(err, errUsage) {
		return err
	}
	return inputErr(err, "set it with the flag of that name, or the key of that name in the --config file")
}

// exitCode is an error that only sets the exit status: the command has
// already said everything on standard output (validate's "does not hold").
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// failWith makes a failure exit with code instead of exitFailure
// (validate's errors exit 2, since its 1 means "does not hold"). Usage and
// input errors keep exitUsage.
func failWith(code int, err error) error {
	if err == nil || errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &statusError{err: err, code: code}
}

type statusError struct {
	err  error
	code int
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// printError prints err for subcommand cmd (at most three lines) and returns
// the exit status; a failure that is neither a usage nor an input error
// exits exitFailure unless failWith says otherwise.
func printError(w io.Writer, cmd string, err error) int {
	failCode := exitFailure
	var code exitCode
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &code):
		return int(code)
	}
	prefix := "odwatch: "
	more := "run 'odwatch -h' for more"
	if cmd != "" {
		prefix = "odwatch " + cmd + ": "
		more = "run 'odwatch " + cmd + " -h' for more"
	}
	var ce *cliError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(w, prefix+oneLine(ce.problem))
		if ce.fix != "" {
			fmt.Fprintln(w, "  "+oneLine(ce.fix))
		}
		fmt.Fprintln(w, "  "+more)
		return exitUsage
	case errors.Is(err, errUsage):
		fmt.Fprintln(w, prefix+oneLine(strings.TrimPrefix(err.Error(), errUsage.Error()+": ")))
		fmt.Fprintln(w, "  "+more)
		return exitUsage
	}
	fmt.Fprintln(w, prefix+oneLine(err.Error()))
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return failCode
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// newFlagSet is a subcommand's flag set in odwatch's help style: synopsis is
// what follows "odwatch NAME" on the usage line ("FILE [flags]"),
// description says what the command does.
func newFlagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { writeHelp(fs.Output(), fs, synopsis, description) }
	return fs
}

// writeHelp prints the usage line, the description and every flag with its
// type and default.
func writeHelp(w io.Writer, fs *flag.FlagSet, synopsis, description string) {
	fmt.Fprintf(w, "usage: odwatch %s %s\n\n%s\n", fs.Name(), synopsis, strings.TrimSpace(description))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(*listFlag); ok {
			typ = "list"
		}
		line := "  --" + f.Name
		if typ != "" {
			line += " " + strings.ToUpper(typ)
		}
		fmt.Fprintln(w, line)
		if d := defaultText(f); d != "" && !strings.Contains(usage, "(default") {
			usage += " (default: " + d + ")"
		}
		fmt.Fprintln(w, "      "+usage)
	})
}

// defaultText is a flag's default as help shows it: nothing for an off
// boolean or an empty string (the usage says what empty means).
func defaultText(f *flag.Flag) string {
	if isBoolFlag(f) && f.DefValue == "false" {
		return ""
	}
	if f.DefValue == "" || f.DefValue == "[]" {
		return ""
	}
	return f.DefValue
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseArgs parses args against fs with flags allowed before, between and
// after the positional arguments (after "--" everything is positional), and
// returns the positional ones. -h/--help prints the help on stdout and
// returns flag.ErrHelp. Errors are usageErr with a fix: an unknown flag
// suggests the nearest names, a bad value says what the flag wants.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		value, hasValue := "", false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, value, hasValue = name[:k], name[k+1:], true
		}
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" {
				fs.SetOutput(stdout)
				fs.Usage()
				fs.SetOutput(io.Discard)
				return nil, flag.ErrHelp
			}
			if name == "version" { // odwatch CMD --version, as odwatch --version
				writeVersion(stdout)
				return nil, flag.ErrHelp
			}
			return nil, unknownFlag(fs, name)
		}
		if !hasValue {
			if isBoolFlag(f) {
				value = "true"
			} else {
				if i+1 >= len(args) {
					return nil, usageErr("--"+name+" needs a value", exampleFix(f))
				}
				i++
				value = args[i]
			}
		}
		if err := fs.Set(name, value); err != nil {
			return nil, badValue(f, value, err)
		}
	}
	return pos, nil
}

func unknownFlag(fs *flag.FlagSet, name string) error {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	fix := "see the flags with -h"
	if near := nearest(name, names, 3); len(near) > 0 {
		fix = "did you mean --" + strings.Join(near, ", --") + "?"
	}
	return usageErr("unknown flag --"+name, fix)
}

// badValue explains a value a flag refused, by the flag's type.
func badValue(f *flag.Flag, value string, err error) error {
	typ, _ := flag.UnquoteUsage(f)
	want := map[string]string{
		"float":    "a number",
		"int":      "a whole number",
		"uint":     "a whole number",
		"duration": "a duration such as 30s, 5m or 1h",
		"":         "true or false",
	}[typ]
	if want == "" {
		cause := errors.Unwrap(err)
		if cause == nil { // flag.FlagSet.Set formats the Value's error without wrapping it
			cause = err
		}
		return usageErr(fmt.Sprintf("--%s %q: %v", f.Name, value, cause), exampleFix(f))
	}
	return usageErr(fmt.Sprintf("--%s %q: want %s", f.Name, value, want), exampleFix(f))
}

// exampleFix shows a flag with its default value, when it has one.
func exampleFix(f *flag.Flag) string {
	if d := defaultText(f); d != "" && !isBoolFlag(f) {
		return fmt.Sprintf("for example --%s %s (the default)", f.Name, d)
	}
	_, usage := flag.UnquoteUsage(f)
	return "--" + f.Name + ": " + usage
}

// wantNoArgs is the check of a subcommand that takes flags only.
func wantNoArgs(pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	return usageErr(fmt.Sprintf("unexpected argument %q", pos[0]), "this command takes flags only, such as --name value")
}

// nearest returns up to n names close to name: equal ignoring case first,
// then by edit distance (at most a third of the name's length, at least 1),
// closest first.
func nearest(name string, names []string, n int) []string {
	type cand struct {
		name string
		dist int
	}
	low := strings.ToLower(name)
	limit := max(1, len([]rune(low))/3)
	var cs []cand
	for _, c := range names {
		lc := strings.ToLower(c)
		d := editDistance(low, lc)
		switch {
		case lc == low:
			d = 0
		case strings.HasPrefix(lc, low) && len(low) >= 3:
			d = min(d, 1)
		case d > limit:
			continue
		}
		cs = append(cs, cand{c, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.dist - b.dist })
	out := make([]string, 0, min(n, len(cs)))
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, by rune.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
