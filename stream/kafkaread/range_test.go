package kafkaread_test

import (
	"context"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/stream/kafkaread"
)

// TestReadRange: bounds by offset and by time cut a topic range, and two
// partitions merge in time order.
func TestReadRange(t *testing.T) {
	addr, stop, err := demo.StartBroker(context.Background(), map[string]int{"payroll": 1, "two": 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	po := demo.PayrollOptions{Brokers: []string{addr}, Topic: "payroll", Count: 5000, Seed: 7}
	if err := demo.ProducePayroll(ctx, po); err != nil {
		t.Fatal(err)
	}
	count := func(topic string, from, to kafkaread.Bound) (n int, first, last kafkaread.Record) {
		err := kafkaread.ReadRange(ctx, []string{addr}, nil, topic, from, to, func(r kafkaread.Record) error {
			r.Value = nil // only valid during the call
			if n == 0 {
				first = r
			} else if kafkaread.Before(&r, &last) {
				t.Fatalf("%s: record %+v after %+v", topic, r, last)
			}
			last = r
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, first, last
	}
	if n, first, last := count("payroll", kafkaread.Bound{Offset: 100, IsOffset: true}, kafkaread.Bound{Offset: 250, IsOffset: true}); n != 150 || first.Offset != 100 || last.Offset != 249 {
		t.Errorf("offsets [100, 250): %d records %d..%d", n, first.Offset, last.Offset)
	}
	_, _, mid := count("payroll", kafkaread.Bound{Offset: 2500, IsOffset: true}, kafkaread.Bound{Offset: 2501, IsOffset: true})
	if n, first, _ := count("payroll", kafkaread.Bound{Time: mid.Time}, kafkaread.Bound{}); n == 0 || n >= 5000 || first.Time.Before(mid.Time) {
		t.Errorf("from time %s: %d records, first at %s", mid.Time, n, first.Time)
	}

	po.Topic, po.Count = "two", 300
	if err := demo.ProducePayroll(ctx, po); err != nil {
		t.Fatal(err)
	}
	parts := map[int32]int{}
	n2, _, _ := count("two", kafkaread.Bound{}, kafkaread.Bound{})
	_ = kafkaread.ReadRange(ctx, []string{addr}, nil, "two", kafkaread.Bound{}, kafkaread.Bound{}, func(r kafkaread.Record) error {
		parts[r.Partition]++
		return nil
	})
	if n2 != 300 || len(parts) != 2 {
		t.Errorf("two partitions: %d records over %v, want 300 over both", n2, parts)
	}
}
