package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestTimeWindowTakeover hands a time-window stream (the last second of
// record time; records 10 ms apart over six seconds, three partitions) from
// one instance to another with a clean stop, on the real broker, whose
// ListOffsets by timestamp finds where the window starts. The rebuilt
// window is the one an uninterrupted instance holds on the same records:
// the same record count and the same first and last record times.
func TestTimeWindowTakeover(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	c.CreateTopic(t, "tw", 3, nil)
	w := &kafka.Writer{Addr: kafka.TCP(c.Bootstrap()), Topic: "tw", Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	msgs := make([]kafka.Message, 600)
	for i := range msgs {
		msgs[i] = kafka.Message{Time: base.Add(time.Duration(i) * 10 * time.Millisecond),
			Value: fmt.Appendf(nil, `{"n":%d,"g":%d,"h":%d}`, i, i%7, (i%7)*2)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	run := func(name, group string) *proc {
		p := startOdwatch(t, name, "--brokers", c.Bootstrap(), "--topic", "tw", "--group", group,
			"--state-dir", t.TempDir(), "--window", "100000", "--interval", "1s", "--epsilon", "0.01")
		testkit.EventuallyEvery(t, time.Minute, pollEvery, name+" ready", func() bool { ok, _ := p.Ready(); return ok })
		return p
	}
	holds := func(p *proc) func() bool {
		return func() bool { s, ok := p.Status("tw"); return ok && s.Stream.WindowRecords > 0 }
	}
	ref := run("ref", "tw-ref")
	a := run("a", "tw")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "both hold a window", func() bool { return holds(ref)() && holds(a)() })
	b := run("b", "tw")
	a.Stop()
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "b took the stream over", holds(b))
	got, _ := b.Status("tw")
	want, _ := ref.Status("tw")
	t.Logf("after the takeover %d records %v to %v; uninterrupted %d, %v to %v", got.Stream.WindowRecords,
		got.Stream.WindowStart, got.Stream.WindowEnd, want.Stream.WindowRecords, want.Stream.WindowStart, want.Stream.WindowEnd)
	if want.Stream.WindowRecords != 101 {
		t.Errorf("the uninterrupted window holds %d records, want the 101 of the last second", want.Stream.WindowRecords)
	}
	if got.Stream.WindowRecords != want.Stream.WindowRecords || !sameTime(got.Stream.WindowStart, want.Stream.WindowStart) ||
		!sameTime(got.Stream.WindowEnd, want.Stream.WindowEnd) {
		t.Error("the window rebuilt by the takeover differs from the uninterrupted one")
	}
}

func sameTime(a, b *time.Time) bool { return a != nil && b != nil && a.Equal(*b) }
