package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// testBroker is where a test's topics live: the real broker, or kfake run
// as a process (scripts/kfake) for the same test's figures on the fake.
type testBroker struct {
	bootstrap string
	cluster   *kafkatest.Cluster // nil on kfake
}

// topicSpec is a topic a test needs, with its topic configs (the real
// broker only: kfake keeps every record).
type topicSpec struct {
	name       string
	partitions int
	configs    map[string]string
}

// startBroker starts kind ("real" or "kfake") with topics.
func startBroker(t *testing.T, kind string, topics ...topicSpec) testBroker {
	t.Helper()
	if kind == "real" {
		c := kafkatest.Start(t, kafkatest.Options{})
		for _, tp := range topics {
			c.CreateTopic(t, tp.name, tp.partitions, tp.configs)
		}
		return testBroker{bootstrap: c.Bootstrap(), cluster: c}
	}
	kafkatest.Require(t) // the comparison runs with the real suite only
	exe := filepath.Join(t.TempDir(), "kfake")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/odwatch/odwatch/scripts/kfake").CombinedOutput(); err != nil {
		t.Fatalf("go build ./scripts/kfake: %v\n%s", err, out)
	}
	var args []string
	for _, tp := range topics {
		args = append(args, "-topic", fmt.Sprintf("%s:%d", tp.name, tp.partitions))
	}
	cmd := exec.Command(exe, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("kfake printed no address: %v", err)
	}
	return testBroker{bootstrap: strings.TrimSpace(addr)}
}

// TestFailoverKill: two odwatch instances share three topics, two and
// one; the owner of two is killed with SIGKILL while dirty records keep
// coming. The survivor takes its topics over (window rebuilt from Kafka,
// tracker from the state topic) and reports each violation; the time from
// the kill to the first consumed record and to the first violated event of
// each topic is logged, on the real broker and on kfake.
func TestFailoverKill(t *testing.T) {
	for _, kind := range []string{"real", "kfake"} {
		t.Run(kind, func(t *testing.T) { testFailoverKill(t, kind) })
	}
}

func testFailoverKill(t *testing.T, kind string) {
	topics := []string{"fo-a", "fo-b", "fo-c"}
	specs := []topicSpec{{name: "fo-state", partitions: 1, configs: map[string]string{"cleanup.policy": "compact"}}}
	for _, tp := range topics {
		specs = append(specs, topicSpec{name: tp, partitions: 1})
	}
	b := startBroker(t, kind, specs...)
	cfg := filepath.Join(t.TempDir(), "odwatch.yaml")
	yaml := fmt.Sprintf("brokers: [%s]\ngroup: fo\nstate-topic: fo-state\nstreams:\n", b.bootstrap)
	for _, tp := range topics {
		yaml += fmt.Sprintf("  - topic: %s\n    window: 1000\n    every: 500\n    discover-every: 500\n    epsilon: 0.01\n", tp)
	}
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(name string) *proc {
		p := startOdwatch(t, name, "--config", cfg, "--state-dir", t.TempDir())
		testkit.EventuallyEvery(t, time.Minute, pollEvery, name+" ready", func() bool { ok, _ := p.Ready(); return ok })
		return p
	}
	total := 0
	produce := func(args ...string) {
		var wg sync.WaitGroup
		for i, tp := range topics {
			wg.Go(func() { generate(t, b.bootstrap, tp, append(args, "--seed", fmt.Sprint(100*total+i))...) })
		}
		wg.Wait()
	}
	a := start("a")
	produce("--count", "2000", "--clean", "2000", "--rate", "0")
	total += 2000
	for _, tp := range topics {
		testkit.EventuallyEvery(t, time.Minute, pollEvery, "a evaluated the clean records of "+tp, evaluatedTo(a, tp, int64(total-1)))
	}
	bb := start("b")
	procs := []*proc{a, bb}
	var owned map[*proc][]string
	testkit.EventuallyEvery(t, 2*time.Minute, pollEvery, "the topics split 2 + 1", func() bool {
		owned = owners(t, procs, topics, func() { produce("--count", "500", "--clean", "500", "--rate", "0") })
		total += 500
		return len(owned[a]) > 0 && len(owned[bb]) > 0 && len(owned[a])+len(owned[bb]) == 3
	})
	victim, survivor := a, bb
	if len(owned[bb]) == 2 {
		victim, survivor = bb, a
	}
	t.Logf("%s: a owns %v, b %v; killing the owner of %v", kind, owned[a], owned[bb], owned[victim])
	before := map[string]float64{}
	for _, tp := range owned[victim] {
		before[tp] = survivor.Metric(t, "odwatch_records_consumed_total", "stream="+tp)
	}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produce("--count", "1500", "--clean", "0", "--error-rate", "0.25", "--rate", "1000")
	}()
	time.Sleep(200 * time.Millisecond) // into the dirty records' backlog
	killed := time.Now()
	victim.Kill()
	for _, tp := range owned[victim] {
		timeTakeover(t, kind, survivor, tp, before[tp], killed)
	}
	<-produced
	total += 1500
	for _, tp := range topics {
		testkit.EventuallyEvery(t, time.Minute, pollEvery, "the survivor evaluated every record of "+tp, evaluatedTo(survivor, tp, int64(total-1)))
		if s, _ := survivor.Status(tp); s.Stream.WindowRecords != 1000 {
			t.Errorf("%s: the survivor's window holds %d records, want 1000", tp, s.Stream.WindowRecords)
		}
	}
	if n := survivor.Metric(t, "odwatch_events_total", "type=restored"); n != 0 {
		t.Errorf("%v restored events on data that stayed dirty", n)
	}
}

// timeTakeover waits for the survivor's first violated event on topic tp
// after the kill and logs how long after it the survivor consumed its first
// record of tp (it had consumed before) and emitted that event.
func timeTakeover(t *testing.T, kind string, survivor *proc, tp string, before float64, killed time.Time) {
	t.Helper()
	var took, violated time.Duration
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "the survivor's first violated event on "+tp, func() bool {
		if took == 0 && survivor.Metric(t, "odwatch_records_consumed_total", "stream="+tp) > before {
			took = time.Since(killed)
		}
		if survivor.Metric(t, "odwatch_events_total", "stream="+tp, "type=violated") == 0 {
			return false
		}
		violated = time.Since(killed)
		return true
	})
	t.Logf("%s: %s taken over (first record consumed) %v after the kill, first violated event %v after it",
		kind, tp, took.Round(10*time.Millisecond), violated.Round(10*time.Millisecond))
	// The bound of stream's kfake failover test: session timeout (6 s)
	// plus a rebalance and a window rebuilt from Kafka.
	if violated > 10*time.Second {
		t.Errorf("%s: first violated event %v after the kill, want within 10 s", tp, violated)
	}
}

// evaluatedTo is a condition: p's last evaluation of stream ended at the
// record numbered end (from 0).
func evaluatedTo(p *proc, stream string, end int64) func() bool {
	return func() bool { s, ok := p.Status(stream); return ok && s.LastWindowEnd() == end }
}

// owners runs produce (records to every topic) and returns which process
// consumed each topic's new records; a topic consumed by two is left out
// (a rebalance under way). Each topic gets every records, so that the
// evaluations stay on multiples of it.
func owners(t *testing.T, procs []*proc, topics []string, produce func()) map[*proc][]string {
	t.Helper()
	consumed := func(p *proc, tp string) float64 { return p.Metric(t, "odwatch_records_consumed_total", "stream="+tp) }
	before := map[*proc]map[string]float64{}
	for _, p := range procs {
		before[p] = map[string]float64{}
		for _, tp := range topics {
			before[p][tp] = consumed(p, tp)
		}
	}
	produce()
	// Wait (a while, not for ever: a rebalance may hold consumption, and
	// the caller asks again) until the records just produced are consumed.
	grown := func() bool {
		for _, tp := range topics {
			var n float64
			for _, p := range procs {
				n += consumed(p, tp) - before[p][tp]
			}
			if n < 500 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(10 * time.Second); !grown() && time.Now().Before(deadline); {
		time.Sleep(pollEvery)
	}
	out := map[*proc][]string{}
	for _, tp := range topics {
		var by []*proc
		for _, p := range procs {
			if consumed(p, tp) > before[p][tp] {
				by = append(by, p)
			}
		}
		if len(by) == 1 {
			out[by[0]] = append(out[by[0]], tp)
		}
	}
	return out
}
