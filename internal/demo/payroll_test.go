package demo

import (
	"context"
	"encoding/json"
	"math/rand"
	"testing"
	"time"

	"github.com/odwatch/odwatch/stream/kafkaread"
)

func TestPayrollBracketMonotonic(t *testing.T) {
	// The salary determines group and percentage, and a higher salary never
	// has a lower percentage or tax: salary orders tax.
	prevPerc, prevTax := 0, 0
	for salary := 0; salary <= 200000; salary += 100 {
		g, perc := PayrollBracket(salary)
		if g == "" || perc < prevPerc {
			t.Fatalf("salary %d: group %q perc %d after perc %d", salary, g, perc, prevPerc)
		}
		tax := perc * salary / 100
		if tax < prevTax {
			t.Fatalf("salary %d: tax %d below the previous %d", salary, tax, prevTax)
		}
		prevPerc, prevTax = perc, tax
	}
}

func TestPayrollRecords(t *testing.T) {
	tests := []struct {
		name   string
		faulty bool
	}{{"clean", false}, {"data-entry error", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewPayrollGen(1)
			sources := map[string]int{}
			for range 1000 {
				var r struct {
					Position           string
					Experience, Salary int
					TaxGroup           string `json:"tax_group"`
					Perc, Tax          int
					Source             string
				}
				b := g.Next(tt.faulty)
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatalf("%s: %v", b, err)
				}
				group, perc := PayrollBracket(r.Salary)
				if tt.faulty {
					perc *= 10 // a zero appended
				}
				if r.Position == "" || r.TaxGroup != group || r.Perc != perc || r.Tax != perc*r.Salary/100 || r.Salary%100 != 0 {
					t.Fatalf("inconsistent record %s", b)
				}
				sources[r.Source]++
			}
			// Errors come from one system; clean records from all of them.
			if tt.faulty && (len(sources) != 1 || sources[PayrollFaultySource] != 1000) {
				t.Errorf("faulty records' sources %v, want %s only", sources, PayrollFaultySource)
			}
			if !tt.faulty && len(sources) != len(PayrollSources) {
				t.Errorf("clean records' sources %v, want all of %v", sources, PayrollSources)
			}
		})
	}
}

func TestPayrollFaultSchedule(t *testing.T) {
	o := PayrollOptions{CleanRecords: 100, ErrorRate: 0.5, StopErrorsAfter: 300}
	rng := rand.New(rand.NewSource(1))
	faults := 0
	for i := range 400 {
		f := o.Faulty(i, rng)
		if f && (i < 100 || i >= 300) {
			t.Fatalf("record %d faulty outside [100, 300)", i)
		}
		if f {
			faults++
		}
	}
	if faults < 70 || faults > 130 {
		t.Errorf("%d faulty records of 200 at rate 0.5", faults)
	}
}

func TestProducePayroll(t *testing.T) {
	t.Parallel()
	addr, stop, err := StartBroker(context.Background(), map[string]int{"pay": 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := ProducePayroll(ctx, PayrollOptions{Brokers: []string{addr}, Topic: "pay", Count: 500, Rate: 2500, Seed: 1}); err != nil {
		t.Fatalf("ProducePayroll: %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("500 records at 2500/s took %v, want about 200 ms", d)
	}
	got := 0
	if err := kafkaread.ReadRange(ctx, []string{addr}, nil, "pay", kafkaread.Bound{}, kafkaread.Bound{}, func(kafkaread.Record) error { got++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got != 500 {
		t.Errorf("%d records on the topic, want 500", got)
	}
	if err := ProducePayroll(ctx, PayrollOptions{Topic: "pay"}); err == nil {
		t.Error("no error without brokers")
	}
}
