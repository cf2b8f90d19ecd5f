package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/discovery/tableio"
)

const validateHelp = `Measures one dependency on a CSV or JSON Lines file: its error (the share
of rows a minimal removal set holds), whether it holds at --epsilon, and a
sample of violating rows. DEP is one of
  'A ~ B'  'A ~ B desc'  '{X,Y}: A ~ B'  '{X}: [] -> A'  '[A,B] -> [C]'
  'key(A,B)' (A and B identify a record)  'A <-> B' or '{X}: A <-> B' (an
  equivalence: A and B determine each other, within each X)
(quote DEP for the shell; quote column names holding {},:~[] with double
quotes). FILE may be - for standard input.

Example:
  odwatch validate data.csv '{zip}: [] -> city' --epsilon 0.01

Exit status: 0 the dependency holds at --epsilon, 1 it does not, 2 usage or
input error (or any other failure).`

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return failWith(exitUsage, validate(ctx, args, stdout, stderr))
}

// validate is runValidate before the exit-status mapping: it returns
// exitCode(1) when the dependency does not hold.
func validate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tf := newTableFlags("validate", "FILE DEP [flags]", validateHelp, stdout,
		"approximation threshold in [0, 1): the dependency holds when at most floor(eps*rows) rows must be removed",
		"AOC validator: lis or iterative (the paper's baseline, over-estimates)")
	in, eps := &tf.in, tf.eps
	sample := tf.fs.Int("sample", 10, "show up to K violating rows (rows of a minimal removal set); -1 shows all")
	format := tf.fs.String("format", "text", "output format: text or json")
	pos, vk, err := tf.parse(args, 2, "FILE and DEP arguments")
	if err != nil {
		if len(pos) > 2 {
			return splitDependency(pos)
		}
		return err
	}
	if pos == nil {
		return nil // help
	}
	if *format != "text" && *format != "json" {
		return usageErr(fmt.Sprintf("--format %q: want text or json", *format), "for example --format json")
	}
	if *sample < -1 {
		return usageErr(fmt.Sprintf("--sample %d: want -1 (all) or more", *sample), "for example --sample 10 (the default)")
	}
	dep, err := discovery.ParseDependency(pos[1])
	if err != nil {
		return usageErr(err.Error(), "write it as 'A ~ B', 'A ~ B desc', '{X}: A ~ B', '{X}: [] -> A', '[A,B] -> [C]', 'key(A)' or 'A <-> B'")
	}

	bar := newProgressBar(stderr)
	tab, err := in.load(ctx, pos[0], stderr, bar)
	bar.done()
	if err != nil {
		return err
	}
	if err := checkColumns(tab, dep); err != nil {
		return err
	}
	if err := checkOrdered(tab, dep); err != nil {
		return err
	}
	res, err := discovery.Validate(ctx, tab, dep, discovery.Options{Epsilon: *eps, Validator: vk, RemovalSample: *sample, MinStrength: *tf.minStrength})
	if err != nil {
		return err // names the dependency
	}
	write := writeValidation
	if *format == "json" {
		write = writeValidationJSON
	}
	if err := write(stdout, tab, res, *eps, &in.lines); err != nil {
		return err
	}
	if res.Removals > discovery.RemovalBudget(*eps, tab.Rows) {
		return exitCode(exitFailure)
	}
	return nil
}

// splitDependency explains a DEP the shell split into words (validate
// cars.csv Cylinders ~ Displacement).
func splitDependency(pos []string) error {
	words := slices.Clone(pos[1:])
	for i, w := range words {
		// An unquoted ~ is the shell's: it became the home directory.
		if home := os.Getenv("HOME"); home != "" && w == home {
			words[i] = "~"
		}
	}
	joined := strings.Join(words, " ")
	if _, err := discovery.ParseDependency(joined); err == nil {
		return usageErr(fmt.Sprintf("want FILE and one DEP argument, got %d arguments: the shell split the dependency into words", len(pos)),
			fmt.Sprintf("quote it: odwatch validate %s '%s'", pos[0], joined))
	}
	return usageErr(fmt.Sprintf("want FILE and DEP arguments, got %d", len(pos)), "quote DEP, for example: odwatch validate data.csv 'A ~ B'")
}

// checkColumns fails with the nearest names for a column the dependency
// mentions and the table lacks.
func checkColumns(tab *table.Table, dep discovery.Dependency) error {
	names := make([]string, len(tab.Columns))
	have := make(map[string]bool, len(tab.Columns))
	for i, c := range tab.Columns {
		names[i] = c.Name
		have[c.Name] = true
	}
	var missing []string
	fix := "columns: " + strings.Join(names, ", ")
	for _, n := range mentioned(dep) {
		if have[n] {
			continue
		}
		if near := nearest(n, names, 3); len(near) > 0 && len(missing) == 0 {
			fix = "did you mean " + strings.Join(near, ", ") + "?"
		}
		missing = append(missing, strconv.Quote(n))
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usageErr("unknown column "+missing[0], oneLine(truncate(fix, 160)))
	}
	return usageErr(oneLine(truncate("unknown columns "+strings.Join(missing, ", "), 160)), oneLine(truncate(fix, 160)))
}

// checkOrdered fails for an order dependency on a column of nominal text,
// which has no order to measure against (discover forms no such OC).
func checkOrdered(tab *table.Table, dep discovery.Dependency) error {
	var sides []string
	switch dep.Kind {
	case discovery.KindOC:
		sides = []string{dep.Left, dep.Right}
	case discovery.KindListOD:
		sides = append(append(sides, dep.LHSList...), dep.RHSList...)
	}
	for _, n := range sides {
		for _, c := range tab.Columns {
			if c.Name == n && !c.Type.Ordered() {
				return usageErr(fmt.Sprintf("column %q is text without an order, and an order dependency needs ordered columns", n),
					fmt.Sprintf("declare its order with --ordinal '%s=v1,v2,...' (or --ordinal '%s' for byte order), or pass --order-text", n, n))
			}
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// reliableText is the text report's reliable line: reliable rates the
// strength alone, so a rule that does not hold but is much better than
// chance says that it does not hold, rather than a bare "yes" under
// "verdict invalid".
func reliableText(reliable, holds bool) string {
	switch {
	case !reliable:
		return "no"
	case holds:
		return "yes"
	default:
		return "yes by its strength, but it does not hold at this epsilon (see verdict)"
	}
}

// writeValidation prints the measurement and the sampled violating rows with
// the values of the columns the dependency mentions; rows are shown as the
// lines of the file they start on.
func writeValidation(w io.Writer, tab *table.Table, res discovery.Result, eps float64, lines *tableio.Lines) error {
	budget := discovery.RemovalBudget(eps, tab.Rows)
	holds := res.Removals <= budget
	verdict := "valid"
	if !holds {
		verdict = "invalid"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dependency\t%s\n", res.Dependency)
	fmt.Fprintf(tw, "meaning\t%s\n", discovery.DescribeResult(res))
	fmt.Fprintf(tw, "rows\t%d\n", tab.Rows)
	fmt.Fprintf(tw, "removals\t%d\n", res.Removals)
	fmt.Fprintf(tw, "error\t%s\n", strconv.FormatFloat(res.Error, 'g', 6, 64))
	fmt.Fprintf(tw, "epsilon\t%s (at most %d removals)\n", strconv.FormatFloat(eps, 'g', -1, 64), budget)
	fmt.Fprintf(tw, "verdict\t%s\n", verdict)
	if res.Dependency.Kind != discovery.KindListOD {
		fmt.Fprintf(tw, "score\t%s\n", strconv.FormatFloat(res.Score, 'g', 4, 64))
		strength := "none (no rows)"
		if res.Strength >= 0 {
			strength = strconv.FormatFloat(res.Strength, 'f', 4, 64) + " (how much better than chance it holds, 0 to 1)"
		}
		fmt.Fprintf(tw, "strength\t%s\n", strength)
		fmt.Fprintf(tw, "reliable\t%s\n", reliableText(res.Reliable, holds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.RemovalSample) == 0 {
		return nil
	}

	names := mentioned(res.Dependency)
	fmt.Fprintf(w, "\nviolating rows (%d of %d in a minimal removal set; line = line of the file):\n", len(res.RemovalSample), res.Removals)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "line")
	for _, n := range names {
		fmt.Fprintf(tw, "\t%s", n)
	}
	fmt.Fprintln(tw)
	for _, row := range violatingRows(tab, res, lines) {
		fmt.Fprintf(tw, "%d", row.Line)
		for _, n := range names {
			v, ok := row.Values[n]
			if !ok {
				v = "NULL"
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// validationJSON is validate's --format json document.
type validationJSON struct {
	Dependency    discovery.Dependency `json:"dependency"`
	Text          string               `json:"text"`
	Meaning       string               `json:"meaning"`
	Rows          int                  `json:"rows"`
	Removals      int                  `json:"removals"`
	Error         float64              `json:"error"`
	Epsilon       float64              `json:"epsilon"`
	MaxRemovals   int                  `json:"max_removals"`
	Holds         bool                 `json:"holds"`
	Score         float64              `json:"score"`
	Strength      *float64             `json:"strength"` // null when not computable (no rows)
	Reliable      bool                 `json:"reliable"`
	ViolatingRows []violatingRow       `json:"violating_rows"`
}

// violatingRow is one row of a minimal removal set: its 0-based data row,
// the line of the file it starts on, and the values of the columns the
// dependency mentions (a NULL is left out).
type violatingRow struct {
	Row    int               `json:"row"`
	Line   int               `json:"line"`
	Values map[string]string `json:"values"`
}

func writeValidationJSON(w io.Writer, tab *table.Table, res discovery.Result, eps float64, lines *tableio.Lines) error {
	budget := discovery.RemovalBudget(eps, tab.Rows)
	doc := validationJSON{
		Dependency: res.Dependency, Text: res.Dependency.String(), Meaning: discovery.DescribeResult(res),
		Rows: tab.Rows, Removals: res.Removals, Error: res.Error, Epsilon: eps, MaxRemovals: budget,
		Holds: res.Removals <= budget, Score: res.Score, Reliable: res.Reliable,
		ViolatingRows: violatingRows(tab, res, lines),
	}
	if res.Strength >= 0 {
		doc.Strength = &res.Strength
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// violatingRows resolves the removal sample's rows to lines and values.
func violatingRows(tab *table.Table, res discovery.Result, lines *tableio.Lines) []violatingRow {
	byName := make(map[string]*table.Column, len(tab.Columns))
	for i := range tab.Columns {
		if _, dup := byName[tab.Columns[i].Name]; !dup {
			byName[tab.Columns[i].Name] = &tab.Columns[i]
		}
	}
	out := make([]violatingRow, 0, len(res.RemovalSample))
	for _, row := range res.RemovalSample {
		vr := violatingRow{Row: row, Line: lines.Line(row), Values: map[string]string{}}
		for _, n := range mentioned(res.Dependency) {
			c := byName[n]
			if c == nil || row < 0 || row >= len(c.Ranks) {
				continue
			}
			if v := c.Values[c.Ranks[row]]; v != "" || c.Ranks[row] != 0 {
				vr.Values[n] = v
			}
		}
		out = append(out, vr)
	}
	return out
}

// mentioned lists the columns a dependency names, each once, context first.
func mentioned(d discovery.Dependency) []string {
	all := d.Columns()
	seen := map[string]bool{}
	var out []string
	for _, n := range all {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
