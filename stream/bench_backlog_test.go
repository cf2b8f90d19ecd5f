package stream

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/segmentio/kafka-go"
)

// Backlog benchmark's adult stream: backlogRecords records (adult's rows
// shuffled, with replacement past the file), a fifth of them given another
// record's education from backlogFault on, window 10k, a check every 1k.
const (
	backlogRecords = 50_000
	backlogFault   = 30_000
	backlogWindow  = 10_000
	backlogEvery   = 1_000
)

// BenchmarkBacklogParity is TestBacklogParity on adult (issue 22): the
// fault stream already in a topic (50k records, the fault from record
// 30k: the rules are tracked by then), a monitor started after it with
// discover-every auto. It reports the discovered and violated events (by
// dependency and type, up to the last window) of replay and of the
// monitor, how many differ (target 0), the time each took and how often
// consumption waited for discovery. Run with -benchtime=1x:
//
//	go test ./stream -run '^$' -bench BenchmarkBacklogParity -benchtime=1x
func BenchmarkBacklogParity(b *testing.B) {
	adult := loadCSV(b, testkit.SharedData(b, "bench/adult.csv"), 0)
	for range b.N {
		backlogAdult(b, adult)
	}
}

// backlogAdult is one run of BenchmarkBacklogParity.
func backlogAdult(b *testing.B, adult *csvTable) {
	b.StopTimer()
	addr := startTestBroker(b, map[string]int{"adult": 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := produceRows(ctx, addr, "adult", adult.header, adultFaulted(adult)); err != nil {
		b.Fatal(err)
	}
	cfg := StreamConfig{Topic: "adult", Window: backlogWindow, Every: backlogEvery, DiscoverEvery: AutoDiscoverEvery,
		Epsilon: qualityEps, Sample: 3, Margin: AutoMargin, MinScore: AutoMinScore, DiscoverAfter: DefaultDiscoverAfter,
		MaxLevel: DefaultMaxLevel, MinStrength: discovery.DefaultMinStrength}
	b.StartTimer()
	start := time.Now()
	r := startMonitor(b, Config{Brokers: []string{addr}, Group: "adult", StateDir: b.TempDir(), Streams: []StreamConfig{cfg}})
	testkit.Eventually(b, 30*time.Minute, "the monitor checked the last window", func() bool {
		return r.m.streams[0].evaluated.Load() == backlogRecords
	})
	monitorSecs := time.Since(start).Seconds()
	start = time.Now()
	_, replayed := replayTopic(b, ctx, addr, "adult", cfg)
	replaySecs := time.Since(start).Seconds()
	b.StopTimer()
	testkit.Eventually(b, time.Minute, "the monitor's events delivered", func() bool {
		p, err := r.m.store.PendingEvents("adult")
		return err == nil && len(p) == 0
	})
	last := uint64(backlogRecords - backlogWindow)
	want, got := dependencyEvents(replayed, last), dependencyEvents(r.sink.snapshot(), last)
	missing, extra := 0, 0
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing++
			b.Logf("missing from the monitor: %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra++
			b.Logf("not in replay: %s", g)
		}
	}
	b.Logf("replay's events: %q", want)
	b.ReportMetric(float64(len(want)), "replay-events")
	b.ReportMetric(float64(len(got)), "monitor-events")
	b.ReportMetric(float64(missing+extra), "events-differing")
	b.ReportMetric(monitorSecs, "monitor-s")
	b.ReportMetric(replaySecs, "replay-s")
	b.ReportMetric(discoveryWaits(b, r.reg, "adult"), "discovery-waits")
	if missing+extra > 0 || len(want) == 0 {
		b.Logf("TARGET MISSED: %d of replay's %d events missing, %d extra", missing, len(want), extra)
	}
}

// adultFaulted is the benchmark's adult stream: backlogRecords rows, a
// fifth of them from backlogFault on with another record's education.
func adultFaulted(adult *csvTable) [][]string {
	rows := adult.shuffled(backlogRecords, 5)
	edu := adult.col("education")
	rng := rand.New(rand.NewPCG(22, 4))
	for i := backlogFault; i < len(rows); i++ {
		if rng.Float64() < faultShare {
			row := slices.Clone(rows[i])
			row[edu] = rows[rng.IntN(len(rows))][edu]
			rows[i] = row
		}
	}
	return rows
}

// produceRows produces rows (named by header) to topic as JSON objects.
func produceRows(ctx context.Context, addr, topic string, header []string, rows [][]string) error {
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, BatchSize: 1000, BatchTimeout: time.Millisecond,
		RequiredAcks: kafka.RequireAll}
	defer w.Close()
	msgs := make([]kafka.Message, 0, 1000)
	rec := make(map[string]string, len(header))
	for i, row := range rows {
		for c, name := range header {
			rec[name] = row[c]
		}
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		msgs = append(msgs, kafka.Message{Value: v})
		if len(msgs) == cap(msgs) || i == len(rows)-1 {
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				return err
			}
			msgs = msgs[:0]
		}
	}
	return nil
}
