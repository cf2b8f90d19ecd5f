package stream

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/odwatch/odwatch/stream/window"
)

// newJSONReplayer returns a Replayer of cfg and a JSON decoder for it.
func newJSONReplayer(t testing.TB, cfg StreamConfig) (*Replayer, decode.Decoder) {
	t.Helper()
	r, err := NewReplayer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decode.NewDecoder(decode.DecoderConfig{Format: decode.FormatJSON})
	if err != nil {
		t.Fatal(err)
	}
	return r, dec
}

// replayPayroll replays n payroll records (PayrollOptions' error rules)
// and returns the events.
func replayPayroll(t *testing.T, cfg StreamConfig, o demo.PayrollOptions, n int) ([]alerts.Event, ReplayStats) {
	t.Helper()
	r, dec := newJSONReplayer(t, cfg)
	g := demo.NewPayrollGen(o.Seed)
	errRng := rand.New(rand.NewSource(o.Seed + 1))
	var rec decode.FlatRecord
	var all []alerts.Event
	for i := range n {
		if err := dec.Decode(context.Background(), g.Next(o.Faulty(i, errRng)), &rec); err != nil {
			t.Fatal(err)
		}
		evs, err := r.Add(context.Background(), window.RowMeta{Offset: int64(i)}, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateEvents(evs); err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	return all, r.Stats()
}

// TestReplayPayrollStory replays the payroll story with the CLI's
// defaults: the salary/tax break is told by one violated event (the only one
// of its window) within two windows, its recovery by one restored event, and
// a second replay gives the same event ids.
func TestReplayPayrollStory(t *testing.T) {
	t.Parallel()
	cfg := StreamConfig{Topic: "payroll", Window: 500, Every: 500, Epsilon: 0.01, Sample: 5,
		Margin: AutoMargin, DiscoverAfter: DefaultDiscoverAfter, MaxLevel: DefaultMaxLevel, MinStrength: discovery.DefaultMinStrength}
	o := demo.PayrollOptions{CleanRecords: 2000, ErrorRate: 0.04, StopErrorsAfter: 4000, Seed: 7}
	evs, st := replayPayroll(t, cfg, o, 6500)
	salTax := alerts.DependencyID(mustDep(t, "{}: salary ~ tax (asc)"))
	byWindow := map[uint64]map[alerts.EventType]int{}
	var viol, rest []alerts.Event
	for _, e := range evs {
		if byWindow[e.Window.EndSeq] == nil {
			byWindow[e.Window.EndSeq] = map[alerts.EventType]int{}
		}
		byWindow[e.Window.EndSeq][e.Type]++
		if e.Involves(salTax) {
			switch e.Type {
			case alerts.EventViolated:
				viol = append(viol, e)
			case alerts.EventRestored:
				rest = append(rest, e)
			}
		}
	}
	if len(viol) != 1 || viol[0].Window.EndSeq < 2000 || viol[0].Window.EndSeq >= 3000 {
		t.Fatalf("violated events involving salary ~ tax: %v; want one within two windows of record 2000", summaries(viol))
	}
	if n := byWindow[viol[0].Window.EndSeq][alerts.EventViolated]; n != 1 || len(viol[0].Related) == 0 {
		t.Errorf("%d violated events in its window, %d related; want one event carrying the related rules", n, len(viol[0].Related))
	}
	if len(rest) != 1 || rest[0].Window.EndSeq < 4000 {
		t.Errorf("restored events involving salary ~ tax: %v; want one after record 4000", summaries(rest))
	}
	if st.Evaluations != 13 || st.Records != 6500 {
		t.Errorf("stats %+v, want 13 evaluations of 6500 records", st)
	}
	again, _ := replayPayroll(t, cfg, o, 6500)
	if len(again) != len(evs) {
		t.Fatalf("second replay: %d events, want %d", len(again), len(evs))
	}
	for i := range evs {
		if again[i].ID != evs[i].ID {
			t.Fatalf("second replay: event %d id %s, want %s", i, again[i].ID, evs[i].ID)
		}
	}
}

func summaries(evs []alerts.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Text())
	}
	return out
}

// TestReplayTopicRange: a topic range replays like the same records handed
// over in memory (same event ids). The range's bounds and merge order are
// kafkaread's TestReadRange.
func TestReplayTopicRange(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"payroll": 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := demo.PayrollOptions{CleanRecords: 2000, ErrorRate: 0.04, StopErrorsAfter: 4000, Seed: 7}
	const n = 5000
	po := o
	po.Brokers, po.Topic, po.Count = []string{addr}, "payroll", n
	if err := demo.ProducePayroll(ctx, po); err != nil {
		t.Fatal(err)
	}
	cfg := StreamConfig{Topic: "payroll", Window: 500, Every: 500, Epsilon: 0.01, Sample: 5,
		Margin: AutoMargin, DiscoverAfter: DefaultDiscoverAfter, MaxLevel: DefaultMaxLevel, MinStrength: discovery.DefaultMinStrength}
	want, _ := replayPayroll(t, cfg, o, n)

	r, got := replayTopic(t, ctx, addr, "payroll", cfg)
	if st := r.Stats(); st.Records != n {
		t.Fatalf("read %d records, want %d", st.Records, n)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events from the topic, %d in memory", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID {
			t.Fatalf("event %d: id %s from the topic, %s in memory", i, got[i].ID, want[i].ID)
		}
	}
}

// TestTwoCadenceReplayMatchesMonitor: with two cadences (discover-every's
// default), a replay of a topic gives the events of the monitor on it,
// whole (ids, errors, samples), the monitor checking every window and
// merging every discovery on time.
func TestTwoCadenceReplayMatchesMonitor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the monitor on a topic")
	}
	addr := startTestBroker(t, map[string]int{"rm": 1})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const n = 6000
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "rm", Count: n,
		CleanRecords: 2000, ErrorRate: 0.05, StopErrorsAfter: 4000, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	cfg := StreamConfig{Topic: "rm", Window: 1000, Every: 250, Epsilon: 0.01, Sample: 3,
		Margin: AutoMargin, DiscoverAfter: DefaultDiscoverAfter, MaxLevel: DefaultMaxLevel, MinStrength: discovery.DefaultMinStrength}

	r := startMonitorWith(t, Config{Brokers: []string{addr}, Group: "rm", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{cfg}}, func(m *Monitor) { m.testHooks().inOrder = true })
	testkit.Eventually(t, 90*time.Second, "the monitor checked every window and delivered the events", func() bool {
		if r.m.streams[0].evaluated.Load() != n {
			return false
		}
		p, err := r.m.store.PendingEvents("rm")
		return err == nil && len(p) == 0
	})
	if !r.m.streams[0].cfg.twoCadence() {
		t.Fatal("the stream does not run two cadences")
	}

	rp, got := replayTopic(t, ctx, addr, "rm", cfg)
	want := r.sink.snapshot()
	if len(want) == 0 {
		t.Fatal("the monitor raised no events")
	}
	contents := func(evs []alerts.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, eventContent(e))
		}
		slices.Sort(out)
		return out
	}
	if g, w := contents(got), contents(want); !slices.Equal(g, w) {
		t.Errorf("replay events differ from the monitor's:\n got %v\nwant %v", eventSummary(got), eventSummary(want))
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Errorf("first difference:\n got %s\nwant %s", g[i], w[i])
				break
			}
		}
	}
	t.Logf("%d events, equal; %d checks replayed", len(want), rp.Stats().Evaluations)
}

// replayTopic replays every record of topic through a new Replayer of
// cfg, decoded as JSON, and returns the replayer and its events.
func replayTopic(t testing.TB, ctx context.Context, addr, topic string, cfg StreamConfig) (*Replayer, []alerts.Event) {
	t.Helper()
	r, dec := newJSONReplayer(t, cfg)
	var rec decode.FlatRecord
	var got []alerts.Event
	err := kafkaread.ReadRange(ctx, []string{addr}, nil, topic, kafkaread.Bound{}, kafkaread.Bound{}, func(tr kafkaread.Record) error {
		if err := dec.Decode(ctx, tr.Value, &rec); err != nil {
			return err
		}
		evs, err := r.Add(ctx, window.RowMeta{Partition: tr.Partition, Offset: tr.Offset, Time: tr.Time}, &rec)
		got = append(got, evs...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, got
}
