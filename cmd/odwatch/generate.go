package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/odwatch/odwatch/stream"
)

// runGenerate is `odwatch generate`: produce the demo's payroll stream to a
// real Kafka topic (docker-compose uses it to show the whole loop).
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var brokers listFlag
	fs.Var(&brokers, "brokers", "Kafka bootstrap brokers, HOST:PORT[,HOST:PORT...]")
	o := stream.PayrollOptions{}
	fs.StringVar(&o.Topic, "topic", "payroll", "topic to produce to")
	fs.Float64Var(&o.Rate, "rate", 200, "records per second (0 = as fast as possible)")
	fs.IntVar(&o.Count, "count", 0, "records to produce (0 = until interrupted)")
	fs.IntVar(&o.CleanRecords, "clean", 5000, "clean records before data-entry errors start")
	fs.Float64Var(&o.ErrorRate, "error-rate", 0.03, "share of records with a data-entry error after --clean")
	fs.IntVar(&o.StopErrorsAfter, "stop-errors-after", 0, "records after which errors stop again (0 = never)")
	fs.Int64Var(&o.Seed, "seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(brokers) == 0 {
		return fmt.Errorf("%w: --brokers is required", errUsage)
	}
	if o.ErrorRate < 0 || o.ErrorRate > 1 {
		return fmt.Errorf("%w: --error-rate %v: want a share between 0 and 1", errUsage, o.ErrorRate)
	}
	o.Brokers = brokers
	err := stream.ProducePayroll(ctx, o)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}
