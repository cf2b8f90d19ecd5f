// Command odwatch discovers approximate order and functional dependencies in
// CSV files and Kafka streams, and watches streams for dependencies that
// start to break. This package only parses flags and configuration and wires
// the packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// errUsage marks errors caused by a bad command line; they exit with code 2.
var errUsage = errors.New("usage")

type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func subcommands() []subcommand {
	return []subcommand{
		{"discover", "discover minimal approximate ODs and FDs in a CSV or JSON Lines file", runDiscover},
		{"validate", "measure one dependency on a CSV or JSON Lines file", runValidate},
		{"run", "watch Kafka topics and emit dependency-change events", runRun},
		{"demo", "run the monitor on an in-process broker with a sample payroll stream", runDemo},
		{"generate", "produce the sample payroll stream to a Kafka topic", runGenerate},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: odwatch <command> [flags]\n\ncommands:")
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'odwatch <command> -h' for the flags of a command.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range subcommands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "odwatch %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "odwatch %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "odwatch: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}
