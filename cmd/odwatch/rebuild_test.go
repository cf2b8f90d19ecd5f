package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/internal/demo"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
)

// Sizes of the damaged-store tests: a count window of rebuildWindow
// records evaluated every rebuildEvery, over rebuildRecords records, then
// rebuildEvery more after the rebuild (so that it ends on an evaluation).
const (
	rebuildRecords = 3000
	rebuildWindow  = 1000
	rebuildEvery   = 500
)

// stateTopicEnd returns the highest window end published for stream on the
// state topic (partition 0), or -1.
func stateTopicEnd(t *testing.T, addr, topic, stream string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, 0)
	if err != nil {
		return -1
	}
	defer conn.Close()
	first, last, err := conn.ReadOffsets()
	if err != nil || last <= first {
		return -1
	}
	if _, err := conn.Seek(first, kafka.SeekAbsolute); err != nil {
		return -1
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	end := int64(-1)
	for off := first; off < last; off++ {
		msg, err := conn.ReadMessage(16 << 20)
		if err != nil {
			return end
		}
		var rec struct {
			Stream       string `json:"stream"`
			WindowEndSeq int64  `json:"window_end_seq"`
		}
		if json.Unmarshal(msg.Value, &rec) == nil && rec.Stream == stream {
			end = max(end, rec.WindowEndSeq)
		}
	}
	return end
}

// storeView is what a stopped run left in its store for one stream: the
// offsets of the last rebuildWindow records by arrival, the next offsets
// and the tracker's window end.
type storeView struct {
	window     []int64
	next       map[int32]int64
	trackerEnd uint64
	tracked    bool
}

func readStore(t *testing.T, dir, name string) storeView {
	t.Helper()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatalf("open store %s: %v", dir, err)
	}
	defer st.Close()
	var recs []state.Record
	err = st.ScanWindow(context.Background(), name, func(r state.Record) error {
		recs = append(recs, state.Record{Partition: r.Partition, Offset: r.Offset, Seq: r.Seq})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b state.Record) int { return int(a.Seq) - int(b.Seq) })
	recs = recs[max(0, len(recs)-rebuildWindow):]
	var v storeView
	for _, r := range recs {
		v.window = append(v.window, r.Offset)
	}
	if v.next, _, err = st.Position(name); err != nil {
		t.Fatal(err)
	}
	data, end, err := st.LoadTracker(name)
	if err != nil {
		t.Fatal(err)
	}
	v.trackerEnd, v.tracked = end, data != nil
	return v
}

// runFor starts `odwatch run` with args in the background; the returned
// stop cancels it and returns its error and stderr.
func runFor(t *testing.T, args []string) (stop func() (error, string), stderr *testkit.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testkit.SyncBuffer
	errOut := &testkit.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- runRun(ctx, args, &out, errOut) }()
	var stopped bool
	var err error
	stop = func() (error, string) {
		if !stopped {
			cancel()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("odwatch run did not stop within 60 s\nstderr:\n%s", errOut.String())
			}
			stopped = true
		}
		return err, errOut.String()
	}
	t.Cleanup(func() { stop() })
	return stop, errOut
}

// TestDamagedStore runs `odwatch run` on a kfake broker until it consumed
// and evaluated a topic, damages its store three ways, and checks that each
// damage ends a restart with exit status 1 and one line naming the
// directory, and that --rebuild-state then sets the store aside (kept,
// untouched) and rebuilds it from Kafka: the window holds the last records
// up to the group's committed offset, the position equals it, and the
// tracked dependencies come back from the state topic.
func TestDamagedStore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs odwatch against a broker several times; skipped in -short")
	}
	damages := []struct {
		name string
		// flush: reopen the store first, which moves the write-ahead log
		// into sstables (a run leaves its records in the log).
		flush  bool
		want   *regexp.Regexp // what the one line says is wrong
		damage func(t *testing.T, dir string)
	}{
		{"zeroed bytes in an sstable", true, regexp.MustCompile(`state store is corrupt: \d+\.sst: .*checksum mismatch`), func(t *testing.T, dir string) {
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("the store has no sstable")
			}
			for _, f := range ssts {
				testkit.ZeroBytes(t, f, 64, 2)
			}
		}},
		{"truncated write-ahead log", false, regexp.MustCompile(`state store is corrupt: write-ahead log \d+\.log is truncated`), func(t *testing.T, dir string) {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			slices.Sort(logs)
			if len(logs) == 0 {
				t.Fatal("the store has no write-ahead log")
			}
			f := logs[len(logs)-1]
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(f, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"missing MANIFEST", false, regexp.MustCompile(`state store is corrupt: MANIFEST-\d+ is missing`), func(t *testing.T, dir string) {
			ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			for _, m := range ms {
				if err := os.Remove(m); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	topics := map[string]int{"odwatch-state": 1}
	for i := range damages {
		topics[fmt.Sprintf("in%d", i)] = 1
	}
	addr, stopBroker, err := demo.StartBroker(context.Background(), topics)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopBroker)

	for i, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			topic, group := fmt.Sprintf("in%d", i), fmt.Sprintf("g%d", i)
			dir := filepath.Join(t.TempDir(), "state")
			args := []string{"--brokers", addr, "--topic", topic, "--group", group, "--state-dir", dir,
				"--state-topic", "odwatch-state", "--metrics-addr", "", "--window", strconv.Itoa(rebuildWindow),
				"--every", strconv.Itoa(rebuildEvery), "--epsilon", "0.05"}
			produce(t, addr, topic, rebuildRecords, int64(i))

			// A healthy run to the end of the topic and its last evaluation.
			stop, stderr := runFor(t, args)
			testkit.Eventually(t, 90*time.Second, "the first run to consume and evaluate the topic", func() bool {
				return testkit.Committed(t, addr, group, topic) == rebuildRecords &&
					stateTopicEnd(t, addr, "odwatch-state", topic) == rebuildRecords-1
			})
			if err, _ := stop(); err != nil {
				t.Fatalf("first run: %v\nstderr:\n%s", err, stderr.String())
			}
			beforeEnd := stateTopicEnd(t, addr, "odwatch-state", topic)
			if d.flush {
				st, err := state.Open(dir, state.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}

			d.damage(t, dir)
			damaged := snapshot(t, dir)
			var out, errOut bytes.Buffer
			if code := run(append([]string{"run"}, args...), &out, &errOut); code != 1 {
				t.Fatalf("exit status %d on a damaged store, want 1\nstderr:\n%s", code, errOut.String())
			}
			line := strings.TrimSuffix(errOut.String(), "\n")
			t.Logf("error line: %s", line)
			if strings.Contains(line, "\n") || strings.Contains(line, "panic") {
				t.Fatalf("stderr is not one line:\n%s", errOut.String())
			}
			if !strings.HasPrefix(line, "odwatch run: state "+dir+": ") || !d.want.MatchString(line) ||
				!strings.Contains(line, "--rebuild-state") {
				t.Fatalf("error line %q does not name %s, match %s and mention --rebuild-state", line, dir, d.want)
			}

			// --rebuild-state: the store goes aside, a fresh one is rebuilt
			// from Kafka as more records come.
			stop, stderr = runFor(t, append(args, "--rebuild-state"))
			produce(t, addr, topic, rebuildEvery, 100+int64(i))
			total := int64(rebuildRecords + rebuildEvery)
			testkit.Eventually(t, 90*time.Second, "the rebuilt run to consume and evaluate the new records", func() bool {
				return testkit.Committed(t, addr, group, topic) == total &&
					stateTopicEnd(t, addr, "odwatch-state", topic) > beforeEnd
			})
			if err, _ := stop(); err != nil {
				t.Fatalf("rebuilt run: %v\nstderr:\n%s", err, stderr.String())
			}
			m := regexp.MustCompile(`state store is damaged: moved aside.* moved_to=(\S+)`).FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("no log line saying where the damaged store went\nstderr:\n%s", stderr.String())
			}
			aside := m[1]
			if got := snapshot(t, aside); !maps.Equal(got, damaged) {
				t.Errorf("the store set aside in %s differs from the damaged one", aside)
			}
			after := readStore(t, dir, topic)
			var want []int64
			for o := total - rebuildWindow; o < total; o++ {
				want = append(want, o)
			}
			if !slices.Equal(after.window, want) {
				t.Errorf("rebuilt window holds offsets %v..%v (%d), want %d..%d", first(after.window), last(after.window),
					len(after.window), total-rebuildWindow, total-1)
			}
			if fmt.Sprint(after.next) != fmt.Sprint(map[int32]int64{0: total}) {
				t.Errorf("rebuilt position %v, want partition 0 at %d", after.next, total)
			}
			if !after.tracked || int64(after.trackerEnd) <= beforeEnd {
				t.Errorf("rebuilt tracker at window end %d (present %v), want past the damaged store's %d",
					after.trackerEnd, after.tracked, beforeEnd)
			}
			if !strings.Contains(stderr.String(), "tracker state taken over from the state topic") {
				t.Errorf("the tracked dependencies were not taken from the state topic")
			}
		})
	}
}

func first(s []int64) int64 {
	if len(s) == 0 {
		return -1
	}
	return s[0]
}

func last(s []int64) int64 {
	if len(s) == 0 {
		return -1
	}
	return s[len(s)-1]
}

// produce writes n payroll records to topic.
func produce(t *testing.T, addr, topic string, n int, seed int64) {
	t.Helper()
	err := demo.ProducePayroll(context.Background(), demo.PayrollOptions{
		Brokers: []string{addr}, Topic: topic, Count: n, CleanRecords: n, Seed: seed})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// snapshot maps the files of dir to their contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestEarlyErrorReleasesStore: an error after NewMonitor opened the store
// (here the metrics address is taken) releases it, so the same state
// directory opens again at once.
func TestEarlyErrorReleasesStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err = runRun(t.Context(), []string{"--brokers", "127.0.0.1:1", "--topic", "t", "--state-dir", dir,
		"--metrics-addr", ln.Addr().String()}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("run with a busy metrics address = %v", err)
	}
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatalf("state dir still locked after the early error: %v", err)
	}
	_ = st.Close()
}
