// Package integration runs odwatch, as its users do (the binary, its flags
// and HTTP endpoints, kcat on the topics), against Apache Kafka started by
// package kafkatest. Every test skips unless ODWATCH_KAFKA=real.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

var (
	buildOnce sync.Once
	binDir    string
	bin       string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// odwatchBin builds cmd/odwatch once per test binary.
func odwatchBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "odwatch-integration")
		if buildErr != nil {
			return
		}
		bin = filepath.Join(binDir, "odwatch")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/odwatch/odwatch/cmd/odwatch").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/odwatch: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// requireKcat skips t as kafkatest.Require does, and when kcat is not
// installed (it fails under CI, which installs it).
func requireKcat(t testing.TB) {
	t.Helper()
	kafkatest.Require(t)
	if _, err := exec.LookPath("kcat"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed (.ci/run installs it)")
		}
		t.Skip("kcat is not installed (apt-get install kcat)")
	}
}

// proc is an odwatch process started by a test: its output goes to a file
// in the test's temp dir (logged when the test fails), its HTTP endpoints
// on Addr.
type proc struct {
	cmd  *exec.Cmd
	Addr string // --metrics-addr
	log  string
	done chan struct{}
}

// startOdwatch runs `odwatch run` with args, --metrics-addr on a free
// loopback port, and stops it (SIGINT) at the test's cleanup.
func startOdwatch(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	p := &proc{Addr: kafkatest.FreeAddr(t), log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(odwatchBin(t), append([]string{"run", "--metrics-addr", p.Addr, "--log-level", "debug"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		// ODWATCH_TEST_LOGS=DIR keeps every odwatch log (the temp dir goes).
		if dir := os.Getenv("ODWATCH_TEST_LOGS"); dir != "" {
			b, _ := os.ReadFile(p.log)
			_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".log"), b, 0o644)
		}
		if t.Failed() {
			t.Logf("%s, last lines of its log:\n%s", name, kafkatest.Tail(p.log, 60))
		}
	})
	return p
}

// watchTopic runs odwatch on one topic with tumbling windows of 500
// records, discovery at every evaluation, and waits until it is ready.
func watchTopic(t testing.TB, bootstrap, topic string) *proc {
	t.Helper()
	p := startOdwatch(t, "odwatch", "--brokers", bootstrap, "--topic", topic, "--group", topic,
		"--state-dir", t.TempDir(), "--window", "500", "--every", "500", "--discover-every", "500", "--epsilon", "0.01")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "odwatch ready", func() bool { ok, _ := p.Ready(); return ok })
	return p
}

// Stop interrupts the process (a clean shutdown) and waits for it.
func (p *proc) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.Kill()
	}
}

// Kill ends the process with SIGKILL: no group leave, no store close.
func (p *proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Ready reports /readyz: 200 true, 503 false; an error when the process
// does not answer.
func (p *proc) Ready() (bool, error) {
	res, err := http.Get("http://" + p.Addr + "/readyz")
	if err != nil {
		return false, err
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK, nil
}

// Metric sums the samples of the metric name whose labels include every
// "k=v" of match (0 when absent).
func (p *proc) Metric(t testing.TB, name string, match ...string) float64 {
	t.Helper()
	res, err := http.Get("http://" + p.Addr + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	var sum float64
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		ok := true
		for _, m := range match {
			k, v, _ := strings.Cut(m, "=")
			ok = ok && strings.Contains(line, k+`="`+v+`"`)
		}
		if i := strings.LastIndexByte(line, ' '); ok && i > 0 {
			f, _ := strconv.ParseFloat(line[i+1:], 64)
			sum += f
		}
	}
	return sum
}

// streamStatus is the part of /api/streams/NAME the tests read.
type streamStatus struct {
	Stream struct {
		WindowRecords int        `json:"window_records"`
		WindowStart   *time.Time `json:"window_start"`
		WindowEnd     *time.Time `json:"window_end"`
	} `json:"stream"`
	Rules []struct {
		Text    string `json:"text"`
		Tracked bool   `json:"tracked"`
		State   string `json:"state"`
		History []struct {
			WindowEnd uint64 `json:"window_end"`
		} `json:"history"`
	} `json:"rules"`
}

// Status reads /api/streams/NAME; ok is false when it did not answer.
func (p *proc) Status(name string) (s streamStatus, ok bool) {
	res, err := http.Get("http://" + p.Addr + "/api/streams/" + name)
	if err != nil {
		return s, false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&s) != nil {
		return s, false
	}
	return s, true
}

// Tracked lists the tracked rules as "TEXT STATE", sorted.
func (s streamStatus) Tracked() []string {
	var out []string
	for _, r := range s.Rules {
		if r.Tracked {
			out = append(out, r.Text+" "+r.State)
		}
	}
	// The page lists violated rules by their current error, which moves
	// with every window: the set is what a comparison means.
	slices.Sort(out)
	return out
}

// LastWindowEnd is the largest window end (stream-wide record sequence
// number, from 0) of any rule's history: the records evaluated so far, less
// one. -1 before the first evaluation.
func (s streamStatus) LastWindowEnd() int64 {
	end := int64(-1)
	for _, r := range s.Rules {
		if n := len(r.History); n > 0 {
			end = max(end, int64(r.History[n-1].WindowEnd))
		}
	}
	return end
}

// kcatProduce writes lines, one record each, to topic with kcat, in batches
// compressed with codec (none, gzip, snappy, lz4, zstd).
func kcatProduce(t testing.TB, bootstrap, topic, codec string, lines []string, extra ...string) {
	t.Helper()
	args := append([]string{"-P", "-b", bootstrap, "-t", topic, "-z", codec, "-X", "linger.ms=20"}, extra...)
	cmd := exec.Command("kcat", args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// kcatProduceSlowly is kcatProduce at about rate records per second, with
// acks from every in-sync replica and an idempotent producer (a batch
// retried across a leader change is written once).
func kcatProduceSlowly(t testing.TB, bootstrap, topic string, lines []string, rate int) {
	t.Helper()
	cmd := exec.Command("kcat", "-P", "-b", bootstrap, "-t", topic, "-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=5")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Error(err)
		return
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return
	}
	chunk := max(rate/20, 1)
	for i := 0; i < len(lines); i += chunk {
		if _, err := io.WriteString(in, strings.Join(lines[i:min(i+chunk, len(lines))], "\n")+"\n"); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("kcat -P: %v\n%s", err, out.String())
	}
}

// kcatRecord is one record consumed by kcatConsume.
type kcatRecord struct {
	Headers map[string]string
	Key     string
	Value   []byte
	Offset  int64
}

// kcatConsume reads topic from the beginning to its end with kcat, with
// the headers of every record.
func kcatConsume(t testing.TB, bootstrap, topic string, extra ...string) []kcatRecord {
	t.Helper()
	// kcat's JSON envelope (-J) carries the headers as a flat
	// [name, value, ...] array.
	args := append([]string{"-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-J"}, extra...)
	out, err := exec.Command("kcat", args...).Output()
	if err != nil {
		t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
	}
	var recs []kcatRecord
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var r struct {
			Headers []string `json:"headers"`
			Key     *string  `json:"key"`
			Payload string   `json:"payload"`
			Offset  int64    `json:"offset"`
		}
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("kcat -J output: %v", err)
		}
		rec := kcatRecord{Headers: map[string]string{}, Value: []byte(r.Payload), Offset: r.Offset}
		if r.Key != nil {
			rec.Key = *r.Key
		}
		for i := 0; i+1 < len(r.Headers); i += 2 {
			rec.Headers[r.Headers[i]] = r.Headers[i+1]
		}
		recs = append(recs, rec)
	}
	return recs
}

// events decodes the records of the events topic.
func events(t testing.TB, recs []kcatRecord) []alerts.Event {
	t.Helper()
	out := make([]alerts.Event, 0, len(recs))
	for _, r := range recs {
		var e alerts.Event
		if err := json.Unmarshal(r.Value, &e); err != nil {
			t.Fatalf("event %s: %v", r.Value, err)
		}
		out = append(out, e)
	}
	return out
}

// generate produces count payroll records with `odwatch generate`.
func generate(t testing.TB, bootstrap, topic string, args ...string) {
	t.Helper()
	all := append([]string{"generate", "--brokers", bootstrap, "--topic", topic}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, odwatchBin(t), all...).CombinedOutput(); err != nil {
		t.Fatalf("odwatch %s: %v\n%s", strings.Join(all, " "), err, out)
	}
}

// pollEvery paces the tests' waits: their conditions read metrics over
// HTTP or consume a topic with kcat, too costly to ask every few
// milliseconds on a machine that also runs the brokers.
const pollEvery = 100 * time.Millisecond

// waitEvaluated waits until p has evaluated every window of the total
// records it was given at once, as a user would give them (tumbling
// windows of window records): odwatch catches a backlog up, evaluating
// each window in turn (the consumer waits for the evaluation before).
func waitEvaluated(t *testing.T, p *proc, stream string, total, window int) {
	t.Helper()
	testkit.EventuallyEvery(t, 2*time.Minute, pollEvery, "odwatch evaluated every window", func() bool {
		return p.Metric(t, "odwatch_evaluations_total", "stream="+stream, "result=ok") == float64(total/window)
	})
}
