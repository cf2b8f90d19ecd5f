package stream

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/decode"
	"github.com/odwatch/odwatch/stream/window"
)

// The lifecycle benchmarks of issue 22 (and the keys of issue 21), run by
// BenchmarkReplayQuality: cold start, unit change, keys in a stream. Each
// replays rows with the CLI's defaults at its own window and cadence.

// BenchmarkReplayLifecycle runs the lifecycle benchmarks alone (figures in
// the log):
//
//	go test ./stream -run '^$' -bench BenchmarkReplayLifecycle -benchtime 1x -v
func BenchmarkReplayLifecycle(b *testing.B) {
	adult := loadCSV(b, testkit.SharedData(b, "bench/adult.csv"), 0)
	flights := loadCSV(b, testkit.SharedData(b, "flights-3m.csv.gz"), qualityRecords)
	wrong := fault{name: "wrong education", columns: []string{"education"}, apply: wrongEducation(adult)}
	for range b.N {
		lifecycleBenchmarks(b, adult, flights, wrong)
	}
}

// lifecycleBenchmarks: cold start on payroll and adult (wrong is adult's
// fault), a unit change on flights, keys in a stream.
func lifecycleBenchmarks(b *testing.B, adult, flights *csvTable, wrong fault) {
	header, rows := payrollRows(b, 8000, 3000, 0.25)
	coldStart(b, "payroll", header, rows, 2000, 1000, 3000, []string{"perc", "tax"})
	arows := adult.shuffled(15000, 1)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 7500; i < len(arows); i++ {
		if rng.Float64() < faultShare {
			arows[i] = wrong.apply(slices.Clone(arows[i]), rng)
		}
	}
	coldStart(b, "adult", adult.header, arows, 5000, 2500, 7500, wrong.columns)
	unitChange(b, flights)
	keysInStream(b)
}

// evaluation is one evaluation of a replay: its window end and events.
type evaluation struct {
	end    uint64
	events []alerts.Event
}

// lifecycleConfig is the CLI's defaults at window, every and
// discoverEvery (0: the default), eps 0.05.
func lifecycleConfig(name string, window, every, discoverEvery int) StreamConfig {
	cfg := benchConfig(name, window, every, qualityEps)
	cfg.DiscoverEvery = discoverEvery
	return cfg
}

// replayEvaluations replays rows (header names) with cfg and returns its
// evaluations, each event validated against the schema.
func replayEvaluations(b *testing.B, cfg StreamConfig, header []string, rows [][]string) []evaluation {
	b.Helper()
	r, err := NewReplayer(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	var rec decode.FlatRecord
	var out []evaluation
	n, w, e := 0, cfg.Window, cfg.Every
	for i, row := range rows {
		fillRecord(&rec, header, row)
		evs, err := r.Add(context.Background(), window.RowMeta{Offset: int64(i)}, &rec)
		if err != nil {
			b.Fatal(err)
		}
		if err := validateEvents(evs); err != nil {
			b.Fatal(err)
		}
		if n = i + 1; n >= w && (n-w)%e == 0 {
			out = append(out, evaluation{end: uint64(i), events: evs})
		}
	}
	return out
}

// firstEvent is the window end of the first event of typ for which keep
// holds (ok false when none).
func firstEvent(evs []evaluation, typ alerts.EventType, keep func(alerts.Event) bool) (uint64, bool) {
	for _, ev := range evs {
		for _, e := range ev.events {
			if e.Type == typ && keep(e) {
				return ev.end, true
			}
		}
	}
	return 0, false
}

// dishonest counts the discovered events whose own error is above eps.
func dishonest(evs []evaluation) int {
	n := 0
	for _, ev := range evs {
		for _, e := range ev.events {
			if e.Type == alerts.EventDiscovered && e.ErrorNow > e.Epsilon {
				n++
			}
		}
	}
	return n
}

// payrollRows are n payroll records (the demo's generator) as rows, the
// ones from faultFrom on faulty with probability rate.
func payrollRows(b *testing.B, n, faultFrom int, rate float64) ([]string, [][]string) {
	g, rng := demo.NewPayrollGen(5), rand.New(rand.NewPCG(5, 5))
	header := []string{"position", "experience", "salary", "tax_group", "perc", "tax"}
	rows := make([][]string, n)
	for i := range rows {
		var rec map[string]any
		if err := json.Unmarshal(g.Next(i >= faultFrom && rng.Float64() < rate), &rec); err != nil {
			b.Fatal(err)
		}
		row := make([]string, len(header))
		for j, h := range header {
			switch v := rec[h].(type) {
			case string:
				row[j] = v
			case float64:
				row[j] = strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		rows[i] = row
	}
	return header, rows
}

// coldStart replays rows faulted from faultFrom at window and every (and
// discover-every = window, the slowest cadence, and = every): the first
// discovered event one check after the first full window, a violated event
// naming a faulted column within 2 checks of the first window holding
// faults, and no dishonest discovered event.
func coldStart(b *testing.B, name string, header []string, rows [][]string, window, every, faultFrom int, faulted []string) {
	for _, de := range []int{window, every} {
		evs := replayEvaluations(b, lifecycleConfig(name, window, every, de), header, rows)
		full := uint64(window - 1)
		disc, okDisc := firstEvent(evs, alerts.EventDiscovered, func(alerts.Event) bool { return true })
		viol, okViol := firstEvent(evs, alerts.EventViolated, func(e alerts.Event) bool { return names(e.Dependency, faulted) })
		firstFaulty := uint64(faultFrom + every - 1) // the first check whose window holds faulted records
		for firstFaulty < full || (firstFaulty+1-uint64(window))%uint64(every) != 0 {
			firstFaulty++
		}
		checks := -1
		if okViol {
			checks = int((viol-firstFaulty)/uint64(every)) + 1
		}
		b.Logf("%s cold start (window %d, every %d, discover-every %d, faults from record %d): first discovered at %d (%d records after the first full window), violated naming %v at %d (%d checks after the fault entered), %d discovered events above eps",
			name, window, every, de, faultFrom, disc, int64(disc)-int64(full), faulted, viol, checks, dishonest(evs))
		if !okDisc || disc != full+uint64(every) {
			b.Errorf("%s cold start, discover-every %d: first discovered at %d, want one check after the first full window (%d)", name, de, disc, full+uint64(every))
		}
		if !okViol || checks > 2 || viol < firstFaulty {
			b.Errorf("%s cold start, discover-every %d: violated at %d (ok %v), want within 2 checks of %d", name, de, viol, okViol, firstFaulty)
		}
		if n := dishonest(evs); n > 0 {
			b.Errorf("%s cold start: %d discovered events with an error above eps", name, n)
		}
	}
}

// unitChange: flights with every distance x 1.609 from record from on (a
// unit change that stays): {origin,destination} -> distance violated, then
// changed once the window is in km, and no restored event of an FD
// determining distance while the data stays in km.
func unitChange(b *testing.B, t *csvTable) {
	const from = 32500
	rows := t.shuffled(from+3*qualityWindow, 11)
	di := t.col("distance")
	for i := from; i < len(rows); i++ {
		row := slices.Clone(rows[i])
		if d, err := strconv.ParseFloat(row[di], 64); err == nil {
			row[di] = strconv.FormatFloat(d*1.609, 'f', 0, 64)
		}
		rows[i] = row
	}
	evs := replayEvaluations(b, lifecycleConfig("flights", qualityWindow, qualityEvery, 0), t.header, rows)
	fd := func(e alerts.Event) bool {
		return e.Dependency.Kind == discovery.KindOFD && e.Dependency.RHS == "distance"
	}
	viol, okViol := firstEvent(evs, alerts.EventViolated, fd)
	ch, okCh := firstEvent(evs, alerts.EventChanged, fd)
	rest, okRest := firstEvent(evs, alerts.EventRestored, func(e alerts.Event) bool { return fd(e) })
	var text string
	for _, ev := range evs {
		for _, e := range ev.events {
			if e.Type == alerts.EventChanged && e.Change != nil {
				text = e.Change.Text(e.Dependency)
			}
		}
	}
	b.Logf("flights unit change (distance x 1.609 from record %d): violated at %d (%v), changed at %d (%v): %s; restored %v (at %d)", from, viol, okViol, ch, okCh, text, okRest, rest)
	logLifecycle(b, evs, uint64(from))
	if !okViol || !okCh || ch < viol || okRest {
		b.Errorf("flights unit change: want violated, then changed, and no restored of an FD on distance")
	}
}

// keysInStream (issue 21): a payroll-like stream with a unique id, where
// from record dupFrom on 10% of the records are sent twice: key(id) is
// tracked, and violated within 2 checks of the first duplicate, not before.
func keysInStream(b *testing.B) {
	const window, every, dupFrom, n = 2000, 1000, 6000, 12000
	header, base := payrollRows(b, n, n, 0)
	header = append([]string{"id"}, header...)
	rng := rand.New(rand.NewPCG(6, 6))
	var rows [][]string
	for i, r := range base {
		row := append([]string{strconv.Itoa(i)}, r...)
		rows = append(rows, row)
		if len(rows) > dupFrom && rng.Float64() < 0.1 {
			rows = append(rows, row)
		}
	}
	evs := replayEvaluations(b, lifecycleConfig("orders", window, every, 0), header, rows)
	key := func(e alerts.Event) bool { return e.Dependency.Kind == discovery.KindKey }
	disc, okDisc := firstEvent(evs, alerts.EventDiscovered, key)
	viol, okViol := firstEvent(evs, alerts.EventViolated, key)
	firstDup := uint64(dupFrom + every - 1)
	checks := int(viol/uint64(every)) - int(firstDup/uint64(every)) + 1
	b.Logf("keys in a stream (10%% of records sent twice from record %d): key discovered at %d (%v), violated at %d (%v: %d checks after the first window with duplicates)", dupFrom, disc, okDisc, viol, okViol, checks)
	logLifecycle(b, evs, 0)
	if !okDisc || !okViol || viol < firstDup || checks > 2 {
		b.Errorf("keys in a stream: want key(id) discovered, then violated within 2 checks of %d and not before", firstDup)
	}
}

// logLifecycle logs the events of the evaluations ending at from or later.
func logLifecycle(b *testing.B, evs []evaluation, from uint64) {
	for _, ev := range evs {
		if ev.end < from {
			continue
		}
		for _, e := range ev.events {
			b.Logf("  %d: %s %s error %.4f -> %.4f strength %.2f", ev.end, e.Type, e.DependencyText, e.ErrorBefore, e.ErrorNow, e.Strength)
		}
	}
}

// discoveredTwice lists the rules with more than one discovered event.
func discoveredTwice(evs [][]alerts.Event) []string {
	seen := map[string]int{}
	var out []string
	for _, es := range evs {
		for _, e := range es {
			if e.Type != alerts.EventDiscovered {
				continue
			}
			if seen[e.DependencyID]++; seen[e.DependencyID] == 2 {
				out = append(out, e.DependencyText)
			}
		}
	}
	return out
}
