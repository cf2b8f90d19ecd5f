package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/odwatch/odwatch/internal/demo"
)

const devBrokerHelp = `Runs a Kafka broker in memory (the demo's in-process broker, franz-go's
kfake) on --listen, with the --topic topics created, until Ctrl-C: a
broker to try odwatch run on, with kcat or any Kafka client. Unlike the
demo's, it creates no topic on first use, as a Kafka with
auto.create.topics.enable=false: create them with --topic. Everything is
lost when it stops. Development only: no authentication, no persistence.

Example:
  odwatch dev-broker --listen 127.0.0.1:19092 --topic payroll --topic odwatch-events:3

Exit status: 0 stopped, 1 failure, 2 usage error.`

// runDevBroker is `odwatch dev-broker`.
func runDevBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev-broker", "[flags]", devBrokerHelp)
	listen := fs.String("listen", "127.0.0.1:9092", "HOST:PORT the broker listens on (port 0: a free one)")
	topics := demo.Topics{}
	fs.Var(topics, "topic", "topic to create, NAME or NAME:PARTITIONS (repeatable)")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := wantNoArgs(pos); err != nil {
		return err
	}
	addr, stop, err := demo.StartDevBroker(ctx, *listen, topics)
	if err != nil {
		return fmt.Errorf("dev-broker on %s: %w", *listen, err)
	}
	defer stop()
	var list []string
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		list = append(list, fmt.Sprintf("%s (%d partitions)", name, topics[name]))
	}
	if len(list) == 0 {
		list = []string{"none (create them with --topic)"}
	}
	fmt.Fprintf(stdout, "odwatch dev-broker: Kafka in memory at %s; topics: %s; no topic is created on first use. Ctrl-C stops.\n",
		addr, strings.Join(list, ", "))
	<-ctx.Done()
	fmt.Fprintln(stdout, "odwatch dev-broker: stopped")
	return nil
}
