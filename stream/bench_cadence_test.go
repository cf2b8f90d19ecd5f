package stream

import (
	"context"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/pace"
)

// Cadence benchmark's payroll stream: produced live at cadPayrollRate
// records/s, window 1000, a check every 500 records (every 0.1 s).
const (
	cadPayrollRecords = 20_000
	cadPayrollRate    = 5_000
	cadBenchRate      = 20_000 // records/s of the 20-field stream
)

// BenchmarkCadence measures discover-every auto on live streams (issue
// 22): on payroll discovery is cheap and runs at every check
// (discoveries-per-check 1); on the 20-field stream of BenchmarkEndToEnd
// (window 100k, every 1000) at 20k records/s it backs off to its budget
// (discovery-cores at most the pacer's 0.5) and holds back no check after
// the cold start (discovery-waits 0; cold-start-waits counts the wait of
// the check after the first full window for that window's discovery,
// there by design: a cold start tracks its rules one check after the
// first full window). A missed target is logged. Run with -benchtime=1x:
//
//	go test ./stream -run '^$' -bench BenchmarkCadence -benchtime=1x
func BenchmarkCadence(b *testing.B) {
	b.Run("payroll", func(b *testing.B) {
		for range b.N {
			cadencePayroll(b)
		}
	})
	b.Run("benchstream", func(b *testing.B) {
		for range b.N {
			res := runEndToEnd(b, cadBenchRate, "auto")
			if cores := res.DiscoveryCost / res.Seconds; cores > pace.Default.Budget || res.DiscoveryWaits > 0 {
				b.Logf("TARGET MISSED: discovery used %.2f cores (budget %.2f), consumption waited for it %v times",
					cores, pace.Default.Budget, res.DiscoveryWaits)
			}
		}
	})
}

// cadencePayroll is one run of BenchmarkCadence/payroll.
func cadencePayroll(b *testing.B) {
	b.StopTimer()
	addr := startTestBroker(b, map[string]int{"cad": 1})
	cfg := StreamConfig{Topic: "cad", Window: 1000, Every: 500, DiscoverEvery: AutoDiscoverEvery, Epsilon: 0.05,
		Margin: AutoMargin, MinScore: AutoMinScore, DiscoverAfter: DefaultDiscoverAfter, MaxLevel: DefaultMaxLevel,
		MinStrength: discovery.DefaultMinStrength}
	r := startMonitor(b, Config{Brokers: []string{addr}, Group: "cad", StateDir: b.TempDir(), Streams: []StreamConfig{cfg}})
	testkit.Eventually(b, time.Minute, "the monitor joined", r.m.Ready)
	s := r.m.streams[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.StartTimer()
	start := time.Now()
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "cad", Count: cadPayrollRecords,
		Rate: cadPayrollRate, CleanRecords: cadPayrollRecords, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	testkit.Eventually(b, 5*time.Minute, "the last check", func() bool { return s.evaluated.Load() == cadPayrollRecords })
	secs := time.Since(start).Seconds()
	b.StopTimer()
	checks := float64((cadPayrollRecords-cfg.Window)/cfg.Every + 1)
	discs, _ := histogramStats(b, r.reg, "odwatch_discovery_duration_seconds")
	live := histogramOf(b, r.reg, "odwatch_evaluation_duration_seconds")
	b.ReportMetric(checks, "checks")
	b.ReportMetric(float64(discs), "discoveries")
	b.ReportMetric(float64(discs)/checks, "discoveries-per-check")
	b.ReportMetric(discoveryWaits(b, r.reg, "cad"), "discovery-waits")
	b.ReportMetric(discoverySpent(s).Seconds()/secs, "discovery-cores")
	b.ReportMetric(live.quantile(0.99)*1000, "check-p99-le-ms")
	if float64(discs) < 0.9*checks {
		b.Logf("TARGET MISSED: %d discoveries for %v checks", discs, checks)
	}
}
