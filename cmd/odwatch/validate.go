package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/odwatch/odwatch/discovery"
)

const validateUsage = `usage: odwatch validate FILE DEP [flags]

Measures one dependency on a CSV or JSON Lines file: its error (the share
of rows a minimal removal set holds), whether it holds at --epsilon, and a
sample of violating rows. DEP is one of
  'A ~ B'  'A ~ B desc'  '{X,Y}: A ~ B'  '{X}: [] -> A'  '[A,B] -> [C]'
(quote column names holding {},:~[] with double quotes). FILE may be -.

flags:`

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	tf := newTableFlags("validate", validateUsage, stderr,
		"approximation threshold in [0, 1): the dependency holds when at most floor(eps*rows) rows must be removed",
		"AOC validator: lis or iterative (the paper's baseline, over-estimates)")
	in, eps := &tf.in, tf.eps
	sample := tf.fs.Int("sample", 10, "show up to K violating rows (rows of a minimal removal set); -1 = all")
	pos, vk, err := tf.parse(args, 2, "FILE and DEP arguments")
	if err != nil || pos == nil {
		return err
	}
	if *sample < -1 {
		return fmt.Errorf("%w: --sample must be -1 (all) or more, got %d", errUsage, *sample)
	}
	dep, err := discovery.ParseDependency(pos[1])
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}

	bar := newProgressBar(stderr)
	tab, err := in.load(ctx, pos[0], stderr, bar)
	bar.done()
	if err != nil {
		return err
	}
	res, err := discovery.Validate(ctx, tab, dep, discovery.Options{Epsilon: *eps, Validator: vk, RemovalSample: *sample})
	if err != nil {
		return fmt.Errorf("validate %s: %w", dep, err)
	}
	return writeValidation(stdout, tab, res, *eps)
}

// writeValidation prints the measurement and the sampled violating rows with
// the values of the columns the dependency mentions.
func writeValidation(w io.Writer, tab *discovery.Table, res discovery.Result, eps float64) error {
	budget := discovery.RemovalBudget(eps, tab.Rows)
	verdict := "valid"
	if res.Removals > budget {
		verdict = "invalid"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dependency\t%s\n", res.Dependency)
	fmt.Fprintf(tw, "rows\t%d\n", tab.Rows)
	fmt.Fprintf(tw, "removals\t%d\n", res.Removals)
	fmt.Fprintf(tw, "error\t%s\n", strconv.FormatFloat(res.Error, 'g', 6, 64))
	fmt.Fprintf(tw, "epsilon\t%s (at most %d removals)\n", strconv.FormatFloat(eps, 'g', -1, 64), budget)
	fmt.Fprintf(tw, "verdict\t%s\n", verdict)
	if res.Dependency.Kind != discovery.KindListOD {
		fmt.Fprintf(tw, "score\t%s\n", strconv.FormatFloat(res.Score, 'g', 4, 64))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.RemovalSample) == 0 {
		return nil
	}

	names := mentioned(res.Dependency)
	byName := make(map[string]*discovery.Column, len(tab.Columns))
	for i := range tab.Columns {
		if _, dup := byName[tab.Columns[i].Name]; !dup {
			byName[tab.Columns[i].Name] = &tab.Columns[i]
		}
	}
	fmt.Fprintf(w, "\nviolating rows (%d of %d in a minimal removal set; 0-based data rows):\n", len(res.RemovalSample), res.Removals)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "row")
	for _, n := range names {
		fmt.Fprintf(tw, "\t%s", n)
	}
	fmt.Fprintln(tw)
	for _, row := range res.RemovalSample {
		fmt.Fprintf(tw, "%d", row)
		for _, n := range names {
			v := "?"
			if c := byName[n]; c != nil && row >= 0 && row < len(c.Ranks) {
				v = c.Values[c.Ranks[row]]
				if c.Ranks[row] == 0 && v == "" {
					v = "NULL"
				}
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// mentioned lists the columns a dependency names, each once, context first.
func mentioned(d discovery.Dependency) []string {
	var all []string
	switch d.Kind {
	case discovery.KindOFD:
		all = append(append(all, d.Context...), d.RHS)
	case discovery.KindOC:
		all = append(append(all, d.Context...), d.Left, d.Right)
	case discovery.KindListOD:
		all = append(append(all, d.LHSList...), d.RHSList...)
	}
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
