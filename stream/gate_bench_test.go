package stream

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/benchstream"
	"github.com/odwatch/odwatch/stream/internal/pace"
)

// BenchmarkGateYield measures how promptly a running discovery yields the
// CPU to checks: discovery as the discovery goroutine runs it (encode the
// snapshot, then the lattice, one worker as on 2 cores, at the e2e
// stream's eps 0.01 and max level 3) on a 100k-record window of the e2e
// stream, its Pause the check gate, while a loop like the evaluator's at
// 40k records/s holds the gate for a check of gateBenchCheck every
// gateBenchEvery. It reports, over the holds, the time from holding the
// gate to the worker waiting at it (the discovery work still under way
// when a check is dispatched), apart while the snapshot is encoded
// (encode-) and in the lattice, and the discovery's wall time. Run with
// -benchtime=1x:
//
//	go test ./stream -run '^$' -bench BenchmarkGateYield -benchtime=1x
func BenchmarkGateYield(b *testing.B) {
	const (
		window         = 100_000
		gateBenchCheck = 16 * time.Millisecond
		gateBenchEvery = 25 * time.Millisecond
	)
	cols := benchWindowColumns(b, window)
	for b.Loop() {
		g := pace.NewGate()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan time.Duration, 1)
		var encoded atomic.Bool
		go func() {
			start := time.Now()
			t, err := table.EncodeTypedPause(ctx, cols, table.Typing{}, g.Wait)
			encoded.Store(true)
			if err == nil {
				_, err = discovery.Discover(ctx, t, discovery.Options{Epsilon: 0.01, MaxLevel: DefaultMaxLevel, Workers: 1, Pause: g.Wait})
			}
			if err != nil {
				b.Error(err)
			}
			done <- time.Since(start)
		}()
		// yields[0] while the snapshot is encoded, [1] in the lattice.
		var yields [2][]time.Duration
		var took time.Duration
	loop:
		for {
			held := time.Now()
			phase := 0
			if encoded.Load() {
				phase = 1
			}
			g.SetChecks(true)
			for g.Waiting() == 0 {
				select {
				case took = <-done:
					g.SetChecks(false)
					break loop
				default:
				}
				time.Sleep(20 * time.Microsecond)
			}
			yields[phase] = append(yields[phase], time.Since(held))
			time.Sleep(time.Until(held.Add(gateBenchCheck)))
			g.SetChecks(false)
			time.Sleep(time.Until(held.Add(gateBenchEvery)))
		}
		cancel()
		reportYields(b, "encode-", yields[0])
		reportYields(b, "", yields[1])
		b.ReportMetric(took.Seconds(), "discovery-s")
	}
}

// reportYields reports the median, p99, max and mean of yields (ms), and
// their number, with prefix.
func reportYields(b *testing.B, prefix string, yields []time.Duration) {
	n := len(yields)
	if n == 0 {
		return
	}
	slices.Sort(yields)
	var sum time.Duration
	for _, y := range yields {
		sum += y
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(yields[n/2]), prefix+"yield-p50-ms")
	b.ReportMetric(ms(yields[n*99/100]), prefix+"yield-p99-ms")
	b.ReportMetric(ms(yields[n-1]), prefix+"yield-max-ms")
	b.ReportMetric(ms(sum)/float64(n), prefix+"yield-mean-ms")
	b.ReportMetric(float64(n), prefix+"holds")
}

// benchWindowColumns is a window of n records of the e2e stream
// (internal/benchstream) as a snapshot hands it over: dictionary-coded
// columns (discovery.TableBuilder's).
func benchWindowColumns(b testing.TB, n int) []table.DictColumn {
	tb, err := table.NewTableBuilder(benchstream.Fields)
	if err != nil {
		b.Fatal(err)
	}
	s := benchstream.New(1)
	row, vals := make([]string, len(benchstream.Fields)), make([][]byte, len(benchstream.Fields))
	for range n {
		s.Row(row, false)
		for i, v := range row {
			vals[i] = []byte(v)
		}
		if err := tb.AppendRow(vals, nil); err != nil {
			b.Fatal(err)
		}
	}
	return tb.DictColumns()
}
