// Command kfake runs the in-process Kafka broker of odwatch's demo and tests
// (franz-go's kfake, through demo.StartBroker) as a standalone process, for
// scripts that compare odwatch with other Kafka clients on the same broker
// (scripts/ingest-vs-kcat.sh). It prints the broker's address on the first
// line of stdout and runs until SIGINT or SIGTERM. Development tool only: it
// keeps everything in memory.
//
//	go run ./scripts/kfake -topic bench:3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/odwatch/odwatch/internal/demo"
)

func main() {
	topics := demo.Topics{}
	flag.Var(topics, "topic", "topic to create, NAME[:PARTITIONS] (repeatable)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	addr, stopBroker, err := demo.StartBroker(ctx, topics)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer stopBroker()
	fmt.Println(addr)
	<-ctx.Done()
}
