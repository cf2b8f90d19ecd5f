package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
)

const generateHelp = `Produces the demo's payroll stream (position, experience, salary, tax_group,
perc, tax) to a Kafka topic: clean records first, then data-entry errors (a
percentage with a zero appended) in a share of the records. Runs until
--count records are produced or it is interrupted. With --output, writes
--count records to a file as JSON Lines instead, for another producer
(kcat -P -l FILE).

Example:
  odwatch generate --brokers localhost:9092 --topic payroll --rate 200
  odwatch generate --output /tmp/payroll.jsonl --count 8000 --seed 1

Exit status: 0 done or interrupted, 1 failure, 2 usage error.`

// runGenerate is `odwatch generate`: produce the demo's payroll stream to a
// real Kafka topic (docker-compose uses it to show the whole loop).
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("generate", "--brokers HOST:PORT [flags] | --output FILE --count N [flags]", generateHelp)
	var brokers listFlag
	fs.Var(&brokers, "brokers", "Kafka bootstrap brokers, HOST:PORT[,HOST:PORT...] (required, unless --output)")
	output := fs.String("output", "", "write --count records to this file as JSON Lines instead of producing them (- for standard output)")
	o := demo.PayrollOptions{}
	fs.StringVar(&o.Topic, "topic", "payroll", "topic to produce to")
	payrollFlags(fs, &o, demo.PayrollOptions{Rate: 200, CleanRecords: 5000, ErrorRate: 0.03}, "records to produce; 0 produces until interrupted")
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := wantNoArgs(pos); err != nil {
		return err
	}
	if o.ErrorRate < 0 || o.ErrorRate > 1 {
		return usageErr(fmt.Sprintf("--error-rate %v: want a share between 0 and 1", o.ErrorRate), "for example --error-rate 0.03 (the default)")
	}
	if *output != "" {
		return generateFile(*output, o, stdout)
	}
	if len(brokers) == 0 {
		return usageErr("--brokers is required", "for example --brokers localhost:9092, or --output FILE for a file")
	}
	o.Brokers = brokers
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	err = demo.ProducePayroll(ctx, o)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// generateFile writes the payroll records of o to path (- is stdout).
func generateFile(path string, o demo.PayrollOptions, stdout io.Writer) error {
	if o.Count <= 0 {
		return usageErr("--output needs --count", "for example --output payroll.jsonl --count 8000")
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	if path == "-" {
		return demo.WritePayroll(stdout, o)
	}
	f, err := os.Create(path)
	if err != nil {
		return inputErr(err, "--output names a file to write")
	}
	if err := demo.WritePayroll(f, o); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// payrollFlags binds the payroll generator's flags shared by generate and
// demo to o, with def's values as defaults; countHelp says what --count
// stops.
func payrollFlags(fs *flag.FlagSet, o *demo.PayrollOptions, def demo.PayrollOptions, countHelp string) {
	fs.Float64Var(&o.Rate, "rate", def.Rate, "payroll records per second; 0 produces as fast as possible")
	fs.IntVar(&o.Count, "count", def.Count, countHelp)
	fs.IntVar(&o.CleanRecords, "clean", def.CleanRecords, "clean records before data-entry errors start")
	fs.Float64Var(&o.ErrorRate, "error-rate", def.ErrorRate, "share of records with a data-entry error after --clean")
	fs.IntVar(&o.StopErrorsAfter, "stop-errors-after", def.StopErrorsAfter, "records after which the errors stop again; 0 never stops them")
	fs.Int64Var(&o.Seed, "seed", def.Seed, "random seed of the generator; 0 takes one from the clock")
}
