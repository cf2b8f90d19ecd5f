package stream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/decode"
)

func TestCountBoundary(t *testing.T) {
	tests := []struct {
		window, every int
		want          []uint64 // boundaries among seq 0..39
	}{
		{window: 10, every: 10, want: []uint64{9, 19, 29, 39}},
		{window: 10, every: 4, want: []uint64{9, 13, 17, 21, 25, 29, 33, 37}},
		{window: 10, every: 25, want: []uint64{9, 34}},
		{window: 1, every: 1, want: []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}},
	}
	for _, tt := range tests {
		s := &streamRun{streamBase: &streamBase{cfg: StreamConfig{Window: tt.window, Every: tt.every}}}
		var got []uint64
		for seq := range uint64(40) {
			if s.countBoundary(seq) {
				got = append(got, seq)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("window %d every %d: boundaries %v, want %v", tt.window, tt.every, got, tt.want)
		}
	}
}

// TestFullWindowsOnly checks that a sliding count window is first
// evaluated when it is full, then every Every records: no evaluation sees
// a partial window.
func TestFullWindowsOnly(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"full": 1})
	r := startMonitor(t, Config{
		Brokers: []string{addr}, Group: "full", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		// Discovery at every evaluation, so that the first full window
		// already raises events.
		Streams: []StreamConfig{{Topic: "full", Window: 400, Every: 150, DiscoverEvery: 150, Epsilon: 0.01}},
	})
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Boundaries: 399, 549, 699, 849, 999. Up to one boundary at a time,
	// each evaluated before the next records come: a boundary reached
	// while the evaluator is busy is coalesced into the next one, and when
	// that happens depends on the machine's load.
	total := 0
	for _, n := range []int{300, 100, 150, 150, 150, 150} {
		if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "full", Count: n, Seed: int64(21 + total)}); err != nil {
			t.Fatal(err)
		}
		total += n
		if total < 400 {
			continue // no full window yet: nothing to evaluate
		}
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("evaluation of the window ending at %d", total-1), func() bool {
			return r.m.streams[0].evaluated.Load() == uint64(total)
		})
	}
	ok := map[string]string{"stream": "full", "result": "ok"}
	counted := func() float64 {
		return metricValue(t, r.reg, "odwatch_evaluations_total", ok) + metricValue(t, r.reg, "odwatch_evaluations_total", map[string]string{"stream": "full", "result": "skipped"})
	}
	// The evaluator counts an evaluation after it is saved.
	testkit.Eventually(t, 30*time.Second, "the last evaluation counted", func() bool { return counted() >= 5 })
	if n := counted(); n != 5 {
		t.Errorf("%v evaluations (ok + skipped), want 5 (at records 400, 550, 700, 850, 1000)", n)
	}
	events := r.sink.snapshot()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	for _, e := range events {
		if e.Window.Records != 400 || (e.Window.EndSeq+1-400)%150 != 0 {
			t.Errorf("%s event on a window of %d records ending at %d, want full windows of 400 on the schedule", e.Type, e.Window.Records, e.Window.EndSeq)
		}
	}
	if first := events[0].Window.EndSeq; first != 399 {
		t.Errorf("first event at window end %d, want 399 (the first full window)", first)
	}
}

// TestMinScore runs two streams on one payroll topic, one with MinScore:
// dependencies whose context is near a key ({salary}, {tax}, ...) are not
// discovered there, the others (salary ~ tax, score 1) are.
func TestMinScore(t *testing.T) {
	t.Parallel()
	addr := startTestBroker(t, map[string]int{"scored": 1})
	r := startMonitor(t, Config{
		Brokers: []string{addr}, Group: "scored", StateDir: t.TempDir(), SessionTimeout: 6 * time.Second,
		Streams: []StreamConfig{
			{Name: "all", Topic: "scored", Window: 500, Epsilon: 0.01},
			// {position} (5 values) scores about 0.2, {experience} (31
			// values) about 0.03, {salary} less.
			{Name: "min", Topic: "scored", Window: 500, Epsilon: 0.01, MinScore: 0.1},
		},
	})
	testkit.Eventually(t, 30*time.Second, "ready", r.m.Ready)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := demo.ProducePayroll(ctx, demo.PayrollOptions{Brokers: []string{addr}, Topic: "scored", Count: 1000, CleanRecords: 1000, Seed: 31}); err != nil {
		t.Fatal(err)
	}
	// An evaluation counts as evaluated once saved, and its events reach
	// the sink after: wait for both streams' salary ~ tax too.
	var discovered map[string]map[string]bool
	testkit.Eventually(t, 30*time.Second, "both streams evaluated and their events delivered", func() bool {
		discovered = map[string]map[string]bool{"all": {}, "min": {}}
		for _, e := range r.sink.snapshot() {
			if e.Type == alerts.EventDiscovered {
				discovered[e.Stream][e.DependencyText] = true
			}
		}
		return r.m.streams[0].evaluated.Load() == 1000 && r.m.streams[1].evaluated.Load() == 1000 &&
			discovered["all"]["{}: salary ~ tax (asc)"] && discovered["min"]["{}: salary ~ tax (asc)"]
	})
	if !discovered["min"]["{}: salary ~ tax (asc)"] {
		t.Errorf("salary ~ tax not discovered with a min score: %v", discovered["min"])
	}
	for d := range discovered["min"] {
		if !discovered["all"][d] {
			t.Errorf("%s discovered only with a min score", d)
		}
		dep, err := discovery.ParseDependency(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range dep.Context {
			if c == "salary" || c == "tax" || c == "experience" {
				t.Errorf("%s discovered although its context is near a key", d)
			}
		}
	}
	if len(discovered["min"]) >= len(discovered["all"]) {
		t.Errorf("min score discovered %d dependencies, without %d: nothing filtered", len(discovered["min"]), len(discovered["all"]))
	}
	t.Logf("discovered %d dependencies, %d with min score 0.1", len(discovered["all"]), len(discovered["min"]))
}

// TestReplayMissedEvaluation covers a crash after the batch completing a
// count window was committed but before its evaluation was saved, with
// more batches committed since: the store kept the window's records
// (holds), restore rebuilds that window and the evaluator gets it, so the
// events of the uninterrupted run (same window end, same ids) are emitted.
func TestReplayMissedEvaluation(t *testing.T) {
	t.Parallel()
	const window, every = 10, 5
	tests := []struct {
		name       string
		from, next int64 // stored records: offsets (= seqs) from..next-1
		saved      int64 // window end of the saved evaluation, -1 for none
		wantEnd    int64 // replayed window end, -1 for none
	}{
		{"missed window still stored", 0, 17, 9, 14},
		{"missed window, no evaluation saved yet", 0, 12, -1, 9},
		{"missed window ends the store", 5, 15, 9, 14},
		{"last window saved", 5, 17, 14, -1},
		{"missed window evicted", 7, 17, 9, -1},
		{"no full window yet", 0, 8, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One cadence (restoreCadence replays two).
			m := offlineMonitor(t, StreamConfig{Topic: "rp", Window: window, Every: every, DiscoverEvery: every, Epsilon: 0.01})
			storeRecords(t, m, "rp", tt.from, tt.next)
			if tt.saved >= 0 {
				tracker, err := alerts.NewTracker(alerts.Config{Stream: "rp", Epsilon: 0.01}).MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if err := m.store.SaveEvaluation(&state.Evaluation{Stream: "rp", WindowEnd: uint64(tt.saved), TrackerState: tracker}); err != nil {
					t.Fatal(err)
				}
			}
			s := m.streams[0]
			if err := s.restore(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.replayMissedEvaluation()
			job := s.mb.replay
			if tt.wantEnd < 0 {
				if job != nil {
					t.Fatalf("replayed window end %d, want none", job.endSeq)
				}
				return
			}
			if job == nil {
				t.Fatalf("no replay, want window end %d", tt.wantEnd)
			}
			first, last := job.snap.Meta(0), job.snap.Meta(job.snap.Len()-1)
			if job.endSeq != uint64(tt.wantEnd) || job.snap.Len() != window || last.Offset != tt.wantEnd || first.Offset != tt.wantEnd-window+1 {
				t.Fatalf("replay of window end %d with %d rows, offsets %d..%d; want end %d, %d rows, offsets %d..%d",
					job.endSeq, job.snap.Len(), first.Offset, last.Offset, tt.wantEnd, window, tt.wantEnd-window+1, tt.wantEnd)
			}
			// Until the replay is saved, commits keep its records.
			s.posDirty = true
			if err := s.commit(); err != nil {
				t.Fatal(err)
			}
			if n, err := m.store.WindowCount("rp"); err != nil || int64(n) != tt.next-(tt.wantEnd-window+1) {
				t.Errorf("store holds %d records (%v) while the replay runs, want %d", n, err, tt.next-(tt.wantEnd-window+1))
			}
			s.evaluated.Store(uint64(tt.wantEnd) + 1)
			s.posDirty = true
			if err := s.commit(); err != nil {
				t.Fatal(err)
			}
			if n, err := m.store.WindowCount("rp"); err != nil || n != window {
				t.Errorf("store holds %d records (%v) once the replay is saved, want the window's %d", n, err, window)
			}
		})
	}
}

// storeRecords applies to m's store, as one commit of stream, the records
// at offsets [from, next) of partition 0 (sequence = offset), each with one
// column a = offset mod 3.
func storeRecords(t *testing.T, m *Monitor, stream string, from, next int64) {
	t.Helper()
	c := &state.Commit{Stream: stream, NextOffset: map[int32]int64{0: next}, NextSeq: uint64(next)}
	var rec decode.FlatRecord
	for o := from; o < next; o++ {
		rec.Reset()
		rec.AddString("a", strconv.FormatInt(o%3, 10))
		c.Records = append(c.Records, state.Record{Offset: o, Seq: uint64(o), Value: rec.AppendBinary(nil)})
	}
	if err := m.store.Apply(c); err != nil {
		t.Fatal(err)
	}
}
