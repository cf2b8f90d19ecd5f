// Command odwatch discovers approximate order and functional dependencies in
// CSV files and Kafka streams, and watches streams for dependencies that
// start to break. This package only parses flags and configuration and wires
// the packages together.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

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
		{"replay", "run the monitor offline over a file or a topic range and print its events", runReplay},
		{"demo", "run the monitor on an in-process broker with a sample payroll stream", runDemo},
		{"generate", "produce the sample payroll stream to a Kafka topic or a file", runGenerate},
		{"dev-broker", "run a Kafka broker in memory, to try run on", runDevBroker},
		{"web-config", "write a basic-auth web config from a password in the environment", runWebConfig},
		{"probe", "healthcheck: GET a URL, or ask Kafka brokers for metadata", runProbe},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: odwatch <command> [flags]\n\ncommands:")
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'odwatch <command> -h' or 'odwatch help <command>' for the flags of a command, 'odwatch --version' for the version.")
	fmt.Fprintln(w, "Exit status: 0 success, 1 failure (validate: the dependency does not hold), 2 usage or input error.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return printError(stderr, "", usageErr("missing command", "commands: "+strings.Join(commandNames(), ", ")))
	}
	switch args[0] {
	case "help":
		if len(args) > 1 {
			// odwatch help CMD is odwatch CMD -h.
			return run([]string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "-version", "--version", "version":
		writeVersion(stdout)
		return exitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range subcommands() {
		if c.name == args[0] {
			return printError(stderr, c.name, c.run(ctx, args[1:], stdout, stderr))
		}
	}
	fix := "commands: " + strings.Join(commandNames(), ", ")
	if near := nearest(args[0], commandNames(), 1); len(near) > 0 {
		fix = "did you mean " + near[0] + "?"
	}
	return printError(stderr, "", usageErr(fmt.Sprintf("unknown command %q", args[0]), fix))
}

func commandNames() []string {
	var names []string
	for _, c := range subcommands() {
		names = append(names, c.name)
	}
	return names
}
