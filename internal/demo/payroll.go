package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"
	"time"

	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/segmentio/kafka-go"
)

// PayrollOptions configure ProducePayroll.
type PayrollOptions struct {
	Brokers []string
	Topic   string
	// Rate in records per second; 0 produces as fast as possible.
	Rate float64
	// Count of records; 0 produces until ctx is done.
	Count int
	// CleanRecords are produced without errors before errors may start.
	CleanRecords int
	// ErrorRate is the share of records, after CleanRecords, carrying a
	// data-entry error.
	ErrorRate float64
	// StopErrorsAfter, when > 0, is the record number after which errors
	// stop again (the stream is clean from there on).
	StopErrorsAfter int
	Seed            int64
	Dialer          *kafka.Dialer
}

// payrollPositions are the jobs of the generator with their base salary.
var payrollPositions = [...]struct {
	name string
	base int
}{
	{"clerk", 20000}, {"analyst", 35000}, {"engineer", 50000},
	{"manager", 70000}, {"director", 95000},
}

// PayrollBracket returns the tax group and percentage of a salary: the
// salary determines both, and the percentage grows with the salary, so
// sorting by salary sorts the tax (the running example of Karegar et al.).
func PayrollBracket(salary int) (group string, perc int) {
	switch {
	case salary < 30000:
		return "A", 10
	case salary < 50000:
		return "B", 20
	case salary < 80000:
		return "C", 25
	case salary < 120000:
		return "D", 30
	}
	return "E", 40
}

// PayrollSources are the systems a payroll record comes from (its source
// field); the data-entry errors all come from the last one,
// PayrollFaultySource.
var PayrollSources = [...]string{"hr-portal", "payroll-api", PayrollFaultySource}

// PayrollFaultySource is the system every faulty record comes from: a
// legacy import that also sends clean records.
const PayrollFaultySource = "import-2026"

// PayrollGen generates payroll records deterministically from a seed: the
// records of ProducePayroll, for tests that write or replay them
// themselves. It is not safe for concurrent use.
type PayrollGen struct {
	rng *rand.Rand
	// src draws the clean records' sources, apart from rng so that the
	// other fields are those of a generator without sources.
	src *rand.Rand
	buf []byte
}

// NewPayrollGen returns the generator of the records ProducePayroll
// produces with o.Seed == seed.
func NewPayrollGen(seed int64) *PayrollGen {
	return &PayrollGen{rng: rand.New(rand.NewSource(seed)), src: rand.New(rand.NewSource(seed + 2))}
}

// Next returns the next record as a JSON object, valid until the next call;
// faulty records carry a percentage with a zero appended (25 → 250), so
// their tax is ten times too high, and come from PayrollFaultySource
// (clean ones from any of PayrollSources).
func (g *PayrollGen) Next(faulty bool) []byte {
	p := payrollPositions[g.rng.Intn(len(payrollPositions))]
	exp := g.rng.Intn(31)
	// Salaries are multiples of 100, so the tax is an integer.
	salary := p.base + exp*1000 + g.rng.Intn(100)*100
	group, perc := PayrollBracket(salary)
	if faulty {
		perc *= 10
	}
	tax := perc * salary / 100
	b := g.buf[:0]
	b = append(b, `{"position":"`...)
	b = append(b, p.name...)
	b = append(b, `","experience":`...)
	b = strconv.AppendInt(b, int64(exp), 10)
	b = append(b, `,"salary":`...)
	b = strconv.AppendInt(b, int64(salary), 10)
	b = append(b, `,"tax_group":"`...)
	b = append(b, group...)
	b = append(b, `","perc":`...)
	b = strconv.AppendInt(b, int64(perc), 10)
	b = append(b, `,"tax":`...)
	b = strconv.AppendInt(b, int64(tax), 10)
	source := PayrollSources[g.src.Intn(len(PayrollSources))]
	if faulty {
		source = PayrollFaultySource
	}
	b = append(b, `,"source":"`...)
	b = append(b, source...)
	b = append(b, `"}`...)
	g.buf = b
	return b
}

// Faulty reports whether record i carries a data-entry error, drawing
// from rng (ProducePayroll's is seeded o.Seed+1) when errors may occur.
func (o *PayrollOptions) Faulty(i int, rng *rand.Rand) bool {
	if i < o.CleanRecords || o.ErrorRate <= 0 {
		return false
	}
	if o.StopErrorsAfter > 0 && i >= o.StopErrorsAfter {
		return false
	}
	return rng.Float64() < o.ErrorRate
}

// ProducePayroll produces the payroll stream of the paper's running
// example to o.Topic: position, experience, salary, tax_group, perc and
// tax = perc × salary / 100, where the salary determines tax group and
// percentage, and the source system. After CleanRecords, a share ErrorRate
// of the records carries a data-entry error (a percentage with a zero
// appended), all of them from PayrollFaultySource. It returns when
// Count records are written (nil) or ctx is done (ctx.Err()).
func ProducePayroll(ctx context.Context, o PayrollOptions) error {
	if len(o.Brokers) == 0 || o.Topic == "" {
		return errors.New("payroll: brokers and topic are required")
	}
	w := &kafka.Writer{
		Addr:                   kafka.TCP(o.Brokers...),
		Topic:                  o.Topic,
		Balancer:               &kafka.RoundRobin{},
		BatchSize:              1000,
		BatchTimeout:           10 * time.Millisecond,
		RequiredAcks:           kafka.RequireAll,
		AllowAutoTopicCreation: true,
	}
	tr := kafkaread.Transport(o.Dialer)
	defer tr.CloseIdleConnections()
	w.Transport = tr
	defer w.Close()

	g := NewPayrollGen(o.Seed)
	errRng := rand.New(rand.NewSource(o.Seed + 1))
	chunk := 1000
	var tick time.Duration
	if o.Rate > 0 {
		// Write in chunks of about 20 ms worth of records.
		chunk = max(1, int(o.Rate/50))
		tick = time.Duration(float64(chunk) / o.Rate * float64(time.Second))
	}
	msgs := make([]kafka.Message, 0, chunk)
	start := time.Now()
	for i := 0; o.Count == 0 || i < o.Count; {
		msgs = msgs[:0]
		for len(msgs) < chunk && (o.Count == 0 || i < o.Count) {
			v := g.Next(o.Faulty(i, errRng))
			msgs = append(msgs, kafka.Message{
				Key:   strconv.AppendInt(nil, int64(i), 10),
				Value: append([]byte(nil), v...),
			})
			i++
		}
		if err := writeRetrying(ctx, w, msgs); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("payroll: write to %s: %w", o.Topic, err)
		}
		if tick > 0 {
			// Pace against the start time so the rate does not drift.
			due := start.Add(time.Duration(i/chunk) * tick)
			if d := time.Until(due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
		}
	}
	return nil
}

// writeRetrying writes msgs, writing again for up to 15 s those the broker
// refused: a real broker answers Unknown Topic Or Partition to the first
// writes to a topic it has just auto-created (kfake creates it at once),
// and refuses writes while a partition's leadership moves. Only the
// refused records are written again, so none is written twice.
func writeRetrying(ctx context.Context, w *kafka.Writer, msgs []kafka.Message) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		var we kafka.WriteErrors
		if errors.As(err, &we) && len(we) == len(msgs) {
			var refused []kafka.Message
			for i, e := range we {
				if e != nil {
					refused = append(refused, msgs[i])
				}
			}
			msgs = refused
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// WritePayroll writes o.Count records of the payroll stream (as
// ProducePayroll produces them, errors included) to w as JSON Lines, for a
// file to produce with another client (kcat -l FILE).
func WritePayroll(w io.Writer, o PayrollOptions) error {
	if o.Count <= 0 {
		return errors.New("payroll: a file needs a record count")
	}
	bw := bufio.NewWriter(w)
	g := NewPayrollGen(o.Seed)
	errRng := rand.New(rand.NewSource(o.Seed + 1))
	for i := range o.Count {
		bw.Write(g.Next(o.Faulty(i, errRng)))
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Topics is the repeatable -topic flag of dev-broker and scripts/kfake:
// topics to create, name → partitions, each NAME or NAME:PARTITIONS.
type Topics map[string]int

func (t Topics) String() string { return "" }

func (t Topics) Set(v string) error {
	name, n, err := parseTopic(v)
	if err != nil {
		return err
	}
	t[name] = n
	return nil
}

// parseTopic reads one topic of Topics.
func parseTopic(v string) (name string, partitions int, err error) {
	name, parts, ok := strings.Cut(v, ":")
	partitions = 1
	if ok {
		if partitions, err = strconv.Atoi(parts); err != nil || partitions < 1 {
			return "", 0, fmt.Errorf("topic %q: want NAME or NAME:PARTITIONS with PARTITIONS >= 1", v)
		}
	}
	if name == "" {
		return "", 0, fmt.Errorf("topic %q: empty name", v)
	}
	return name, partitions, nil
}
