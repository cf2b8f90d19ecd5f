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

// The explanation benchmarks of issue 23, by replay: a fault confined to
// one segment of a stream from record explainFaultFrom+1 on. The first
// violated event's explanation must name the segment first, the record
// its break starts at must lie within explainFirstSlack records of the
// fault's first record (either side: an old exception may come just
// before), and what the rule expected must be the record's
// value before the fault for at least explainExpectedShare of the samples
// that are faulty records. TestExplainQuality judges it in the test
// suite; the benchmark reports the figures too (and logs them):
//
//	go test ./stream -run '^$' -bench BenchmarkExplainQuality -benchtime 1x -v
const (
	explainWindow        = 5000
	explainEvery         = 2500
	explainEps           = 0.02
	explainFaultFrom     = 20000
	explainFaultShare    = 0.6
	explainRecords       = 32500
	explainFirstSlack    = 100
	explainExpectedShare = 0.9
)

// segmentFault hits explainFaultShare of the records whose column seg
// holds value, from explainFaultFrom on, changing the columns cols.
type segmentFault struct {
	seg, value string
	cols       []string
	apply      func(row []string, rng *rand.Rand) // changes cols of row (a copy)
}

// explainRun is one replay: its first violated event and the records the
// fault changed (by offset: the changed columns' values before).
type explainRun struct {
	event  *alerts.Event
	before map[int64]map[string]string
	first  int64 // the fault's first record
}

// replayFault replays rows with f, at the benchmark's window, cadence
// and eps and the CLI's defaults otherwise, until the first violated
// event naming f's column; every event must validate against the schema.
func replayFault(b testing.TB, name string, header []string, rows [][]string, f segmentFault) explainRun {
	b.Helper()
	r, err := NewReplayer(benchConfig(name, explainWindow, explainEvery, explainEps), nil)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 23))
	is := slices.Index(header, f.seg)
	run := explainRun{before: map[int64]map[string]string{}, first: -1}
	var rec decode.FlatRecord
	for i, row := range rows {
		if i >= explainFaultFrom && row[is] == f.value && rng.Float64() < explainFaultShare {
			was := slices.Clone(row)
			row = slices.Clone(row)
			f.apply(row, rng)
			before := map[string]string{}
			for _, c := range f.cols {
				if j := slices.Index(header, c); row[j] != was[j] {
					before[c] = was[j]
				}
			}
			if len(before) > 0 {
				run.before[int64(i)] = before
				if run.first < 0 {
					run.first = int64(i)
				}
			}
		}
		fillRecord(&rec, header, row)
		for _, e := range addRecord(b, r, i, &rec) {
			if e.Type == alerts.EventViolated && slices.ContainsFunc(f.cols, func(c string) bool { return slices.Contains(e.Dependency.Columns(), c) }) {
				return explainRun{event: &e, before: run.before, first: run.first}
			}
			if e.Type == alerts.EventViolated || (i >= explainFaultFrom && e.Type != alerts.EventDiscovered) {
				b.Logf("%s: record %d: %s %s (%d related)", name, i, e.Type, e.DependencyText, len(e.Related))
			}
		}
	}
	b.Logf("%s: %d records changed by the fault; no violated event names %v", name, len(run.before), f.cols)
	return run
}

// addRecord replays rec as record i and returns its events, each validated
// against the event schema.
func addRecord(b testing.TB, r *Replayer, i int, rec *decode.FlatRecord) []alerts.Event {
	b.Helper()
	evs, err := r.Add(context.Background(), window.RowMeta{Offset: int64(i)}, rec)
	if err != nil {
		b.Fatal(err)
	}
	if err := validateEvents(evs); err != nil {
		b.Fatal(err)
	}
	return evs
}

// explainFigures are a run's figures: the share of its faulty samples
// whose expected value is right, and how many records its break starts
// after the fault's first.
type explainFigures struct {
	right    float64
	firstLag int64
}

// judgeExplanation checks a run against the benchmark's targets and
// returns its figures.
func judgeExplanation(b testing.TB, name string, run explainRun, seg alerts.Segment) (f explainFigures) {
	b.Helper()
	e := run.event
	if e == nil {
		b.Errorf("%s: no violated event", name)
		return f
	}
	raw, _ := json.Marshal(e.Explanation)
	b.Logf("%s: violated at window end %d: %s; explanation %s", name, e.Window.EndSeq, e.DependencyText, raw)
	x := e.Explanation
	if x == nil || len(x.Segments) == 0 {
		b.Errorf("%s: no segment", name)
		return f
	}
	top := x.Segments[0]
	if top.Column != seg.Column || top.Value != seg.Value {
		b.Errorf("%s: top segment %s, want %s", name, top, seg)
	}
	if d := x.First.Offset - run.first; d < -explainFirstSlack || d > explainFirstSlack {
		b.Errorf("%s: first violating record %d, the fault's first %d (%d records apart, at most %d)", name, x.First.Offset, run.first, d, explainFirstSlack)
	}
	faulty, ok := 0, 0
	for _, s := range e.Samples {
		before, hit := run.before[s.Offset]
		if !hit {
			continue
		}
		faulty++
		// An equivalence's record names what each way expected (Or):
		// which member the fault changed is not in the data.
		for e := s.Expected; e != nil; e = e.Or {
			if _, faulted := before[e.Column]; faulted && expectedRight(*e, before[e.Column]) {
				ok++
				break
			}
		}
	}
	b.Logf("%s: top segment %s (%.0f%% of %d violating records, %.1f%% of the window); break starts at record %d (the fault's first: %d); expected right for %d of %d faulty samples (of %d samples)",
		name, top, 100*top.ViolatingShare, x.Violating, 100*top.WindowShare, x.First.Offset, run.first, ok, faulty, len(e.Samples))
	if faulty == 0 || float64(ok) < explainExpectedShare*float64(faulty) {
		b.Errorf("%s: expected value right for %d of %d faulty samples, want at least %.0f%%", name, ok, faulty, 100*explainExpectedShare)
	}
	return explainFigures{right: float64(ok) / float64(max(faulty, 1)), firstLag: x.First.Offset - run.first}
}

// expectedRight: what the rule expected is the value before the fault:
// an FD's value, or within an OC's range.
func expectedRight(e alerts.Expected, before string) bool {
	if !e.Range {
		return e.Value == before
	}
	v, err := strconv.ParseFloat(before, 64)
	if err != nil {
		return false
	}
	lo, errLo := strconv.ParseFloat(e.Low, 64)
	hi, errHi := strconv.ParseFloat(e.High, 64)
	return (!e.HasLow || (errLo == nil && v >= lo)) && (!e.HasHigh || (errHi == nil && v <= hi))
}

// TestExplainQuality judges the explanations of the three replays
// (explainQuality) against the targets above.
func TestExplainQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("replays of adult, ncvoter-100k and the demo's stream (10 s)")
	}
	t.Parallel()
	explainQuality(t)
}

// BenchmarkExplainQuality reports the replays' figures.
func BenchmarkExplainQuality(b *testing.B) {
	for range b.N {
		for name, f := range explainQuality(b) {
			b.ReportMetric(f.right, name+"-expected-right")
			b.ReportMetric(float64(f.firstLag), name+"-first-lag")
		}
	}
}

// explainQuality replays adult, ncvoter-100k and the demo's stream with
// their faults, judges each run's first violated event and returns the
// figures by name.
func explainQuality(b testing.TB) map[string]explainFigures {
	adult := loadCSV(b, testkit.SharedData(b, "bench/adult.csv"), 0)
	vh, vrows := readHead(b, testkit.SharedData(b, "bench/ncvoter-100k.csv"), explainRecords)
	voter := &csvTable{header: vh, rows: vrows}
	out := map[string]explainFigures{}
	// adult in file order, 60% of the Self-emp-not-inc records (7.8%)
	// taking another record's education.
	ie := adult.col("education")
	edu := segmentFault{seg: "workclass", value: "Self-emp-not-inc", cols: []string{"education"},
		apply: func(row []string, rng *rand.Rand) { row[ie] = adult.rows[rng.IntN(len(adult.rows))][ie] }}
	run := replayFault(b, "adult", adult.header, adult.rows[:min(explainRecords, len(adult.rows))], edu)
	out["adult"] = judgeExplanation(b, "adult", run, alerts.Segment{Column: "workclass", Value: "Self-emp-not-inc"})

	// ncvoter-100k (integer-coded; 4 <-> 5 and {6}: [] -> 4 hold) in file
	// order, 60% of the records with 1 = 13 (15%) taking another
	// record's different (4, 5) pair: {6}: [] -> 4 breaks, 4 <-> 5 holds.
	// (flights, the other candidate, has one rule at this window,
	// {origin,destination}: [] -> distance, and a fault on 60% of an
	// origin's flights makes the faulty distance its routes' majority.)
	i4, i5 := voter.col("4"), voter.col("5")
	pair := segmentFault{seg: "1", value: "13", cols: []string{"4", "5"},
		apply: func(row []string, rng *rand.Rand) {
			for {
				o := voter.rows[rng.IntN(len(voter.rows))]
				if o[i4] != row[i4] {
					row[i4], row[i5] = o[i4], o[i5]
					return
				}
			}
		}}
	run = replayFault(b, "ncvoter", voter.header, voter.rows, pair)
	out["ncvoter"] = judgeExplanation(b, "ncvoter", run, alerts.Segment{Column: "1", Value: "13"})

	out["demo"] = demoExplanation(b)
	return out
}

// demoExplanation replays the demo's stream with its settings (the
// payroll generator, 6000 clean records, then 3% data-entry errors, all
// from one source): the violated event's top segment is that source and
// the expected perc is right on every faulty sample.
func demoExplanation(b testing.TB) explainFigures {
	cfg := StreamConfig{Name: "payroll", Topic: "payroll", Window: 2000, Every: 1000, Epsilon: 0.01, Margin: 0.004, K: 1,
		Sample: 3, MinScore: 0.01, MinStrength: discovery.DefaultMinStrength, DiscoverAfter: DefaultDiscoverAfter, MaxLevel: DefaultMaxLevel}
	r, err := NewReplayer(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	o := demo.PayrollOptions{CleanRecords: 6000, ErrorRate: 0.03}
	g, errRng := demo.NewPayrollGen(1), rand.New(rand.NewPCG(2, 2))
	run := explainRun{before: map[int64]map[string]string{}, first: -1}
	var rec decode.FlatRecord
	for i := range 20000 {
		faulty := i >= o.CleanRecords && errRng.Float64() < o.ErrorRate
		var fields map[string]any
		if err := json.Unmarshal(g.Next(faulty), &fields); err != nil {
			b.Fatal(err)
		}
		if faulty {
			perc, salary := int(fields["perc"].(float64))/10, int(fields["salary"].(float64))
			run.before[int64(i)] = map[string]string{"perc": strconv.Itoa(perc), "tax": strconv.Itoa(perc * salary / 100)}
			if run.first < 0 {
				run.first = int64(i)
			}
		}
		rec.Reset()
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range fields {
				if !yield(k) {
					return
				}
			}
		}) {
			v := fields[k]
			s, ok := v.(string)
			if !ok {
				s = strconv.FormatFloat(v.(float64), 'f', -1, 64)
			}
			rec.Add([]byte(k), []byte(s), false)
		}
		for _, e := range addRecord(b, r, i, &rec) {
			if e.Type == alerts.EventViolated && run.event == nil {
				run.event = &e
			}
		}
		if run.event != nil {
			break
		}
	}
	e := run.event
	if e != nil && e.Explanation != nil {
		b.Logf("demo: %s", e.Text())
	}
	f := judgeExplanation(b, "demo", run, alerts.Segment{Column: "source", Value: demo.PayrollFaultySource})
	if e != nil {
		for _, s := range e.Samples {
			if before, hit := run.before[s.Offset]; hit && (s.Expected == nil || s.Expected.Column != "perc" || !expectedRight(*s.Expected, before["perc"])) {
				b.Errorf("demo: sample %d expected %v, the perc before the error %s", s.Offset, s.Expected, before)
			}
		}
	}
	return f
}
