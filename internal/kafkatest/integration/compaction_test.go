package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestStateTopicCompaction: the state topic is compacted by the real
// broker's log cleaner (segments rolled every half second, cleaned as soon
// as they are dirty) while an instance publishes its tracker after every
// evaluation; the instance is then killed and a new one, with an empty
// state directory, takes the stream over from the compacted topic. It
// tracks the same rules in the same states, and emits no discovered or
// violated event for them again on data that goes on as before.
func TestStateTopicCompaction(t *testing.T) {
	requireKcat(t)
	c := kafkatest.Start(t, kafkatest.Options{Props: map[string]string{
		"log.cleaner.backoff.ms": "200", "log.cleaner.min.compaction.lag.ms": "0",
	}})
	c.CreateTopic(t, "cp", 1, nil)
	c.CreateTopic(t, "cp-state", 1, map[string]string{
		"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms": "100",
	})
	args := []string{"--brokers", c.Bootstrap(), "--topic", "cp", "--group", "cp", "--state-topic", "cp-state",
		"--window", "500", "--every", "250", "--discover-every", "250", "--epsilon", "0.01"}
	a := startOdwatch(t, "a", append(args, "--state-dir", t.TempDir())...)
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "a ready", func() bool { ok, _ := a.Ready(); return ok })
	// Clean, then dirty: salary ~ tax is discovered, then violated.
	generate(t, c.Bootstrap(), "cp", "--count", "4000", "--clean", "2000", "--error-rate", "0.2", "--rate", "1000", "--seed", "1")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "a evaluated every record", evaluatedTo(a, "cp", 3999))
	// Compacted: offsets missing below the last one.
	var kept int
	var published int64
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "the log cleaner compacted the state topic", func() bool {
		recs := kcatConsume(t, c.Bootstrap(), "cp-state")
		if len(recs) == 0 {
			return false
		}
		kept, published = len(recs), recs[len(recs)-1].Offset+1
		return int64(kept) < published/2
	})
	sa, _ := a.Status("cp")
	want := sa.Tracked()
	t.Logf("state topic compacted to %d of %d records; a tracks %d rules", kept, published, len(want))
	if !slices.Contains(want, "{}: salary ~ tax (asc) violated") {
		t.Fatalf("a tracks %v, want salary ~ tax violated", want)
	}
	a.Kill()

	b := startOdwatch(t, "b", append(args, "--state-dir", t.TempDir())...)
	generate(t, c.Bootstrap(), "cp", "--count", "1000", "--clean", "0", "--error-rate", "0.2", "--rate", "0", "--seed", "2")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "b evaluated every record", evaluatedTo(b, "cp", 4999))
	sb, _ := b.Status("cp")
	if got := sb.Tracked(); !slices.Equal(got, want) {
		t.Errorf("after the takeover b tracks\n%v\nwant a's\n%v", got, want)
	}
	for _, typ := range []string{"discovered", "violated"} {
		if n := b.Metric(t, "odwatch_events_total", "type="+typ); n != 0 {
			t.Errorf("b emitted %v %s events again", n, typ)
		}
	}
}
