package state

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The crash test re-executes the test binary as a child that writes to the
// store in a loop and is SIGKILLed mid-stream. Its workload is a pure
// function of the next sequence number, so the parent can compute exactly
// what the store must hold for any committed position.
const (
	helperEnv    = "ODWATCH_STATE_HELPER"
	helperDirEnv = "ODWATCH_STATE_DIR"
	crashPer     = 200  // records per commit
	crashWindow  = 1000 // records kept (by seq)
	crashParts   = 3
)

// crashRecord returns the record with sequence number seq: partition
// seq%3, offset seq/3, an ~80-byte value.
func crashRecord(seq uint64) Record {
	return Record{
		Partition: int32(seq % crashParts),
		Offset:    int64(seq / crashParts),
		Seq:       seq,
		Time:      time.UnixMilli(1_700_000_000_000 + int64(seq)),
		Value:     []byte(fmt.Sprintf("%-80s", fmt.Sprintf(`{"seq":%d,"salary":%d,"tax":%d}`, seq, seq*7, seq%13))),
	}
}

// crashPosition returns the next offsets and eviction bounds implied by
// having committed every seq below next.
func crashPosition(next uint64) (nextOff, evict map[int32]int64) {
	nextOff, evict = map[int32]int64{}, map[int32]int64{}
	for p := int64(0); p < crashParts; p++ {
		nextOff[int32(p)] = (int64(next) - p + crashParts - 1) / crashParts
		if low := int64(next) - crashWindow - p; low > 0 {
			evict[int32(p)] = (low + crashParts - 1) / crashParts
		}
	}
	return nextOff, evict
}

// TestHelperProcess is the child side of TestCrashSafety and
// TestLockedAcrossProcesses; it does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for TestCrashSafety / TestLockedAcrossProcesses")
	}
	s, err := Open(os.Getenv(helperDirEnv), Options{})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	switch mode {
	case "lock":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold the lock until the parent closes stdin
		_ = s.Close()
		os.Exit(0)
	case "crash":
		_, next, err := s.Position("s")
		if err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(2)
		}
		for k := 0; ; k++ {
			c := &Commit{Stream: "s", NextSeq: next + crashPer}
			// Redeliver the previous commit's tail, as Kafka does after a
			// crash between the batch sync and the offset commit.
			from := next
			if from >= 5 {
				from -= 5
			}
			for seq := from; seq < c.NextSeq; seq++ {
				c.Records = append(c.Records, crashRecord(seq))
			}
			c.NextOffset, c.EvictBelow = crashPosition(c.NextSeq)
			if err := s.Apply(c); err != nil {
				fmt.Printf("error %v\n", err)
				os.Exit(2)
			}
			next = c.NextSeq
			fmt.Printf("ack %d\n", next)
			if k%4 == 0 {
				ev := &Evaluation{Stream: "s", WindowEnd: next - 1, TrackerState: []byte(strconv.FormatUint(next-1, 10)),
					Events: []OutboxEvent{{ID: fmt.Sprintf("ev-%d", next-1), Payload: []byte("x")}}}
				if err := s.SaveEvaluation(ev); err != nil {
					fmt.Printf("error %v\n", err)
					os.Exit(2)
				}
			}
		}
	}
	t.Fatalf("unknown helper mode %q", mode)
}

// startHelper starts the child in mode on dir and returns it with a channel
// of its stdout lines (closed at EOF).
func startHelper(t *testing.T, mode, dir string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdin, lines
}

// nextLine returns the child's next line, failing the test at the deadline.
func nextLine(t *testing.T, lines <-chan string, deadline <-chan time.Time) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-lines:
		if strings.HasPrefix(l, "error ") {
			t.Fatalf("child: %s", l)
		}
		return l, ok
	case <-deadline:
		t.Fatal("timed out waiting for the child process")
		return "", false
	}
}

func parseAck(t *testing.T, l string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(l, "ack "), 10, 64)
	if err != nil || !strings.HasPrefix(l, "ack ") {
		t.Fatalf("unexpected child line %q", l)
	}
	return v
}

func TestCrashSafety(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	var lastAck uint64
	for round := 0; round < 3; round++ {
		cmd, _, lines := startHelper(t, "crash", dir)
		deadline := time.After(30 * time.Second)
		// Let the child get well into its loop, then kill it without Close;
		// it is almost always inside its next Apply or fsync by then.
		for seen := 0; seen < 15; seen++ {
			l, ok := nextLine(t, lines, deadline)
			if !ok {
				t.Fatal("child exited early")
			}
			lastAck = parseAck(t, l)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		// Acks printed before the kill are acknowledged commits too.
		for {
			l, ok := nextLine(t, lines, deadline)
			if !ok {
				break
			}
			lastAck = parseAck(t, l)
		}
		verifyCrashStore(t, dir, lastAck)
	}
}

// verifyCrashStore reopens dir and checks that it holds every acknowledged
// commit and exactly the state of one whole commit (nothing half-applied).
func verifyCrashStore(t *testing.T, dir string, lastAck uint64) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	nextOff, next, err := s.Position("s")
	if err != nil {
		t.Fatal(err)
	}
	if next < lastAck {
		t.Fatalf("store at seq %d lost acknowledged commit up to %d", next, lastAck)
	}
	if next%crashPer != 0 {
		t.Fatalf("next seq %d is not a commit boundary", next)
	}
	wantOff, _ := crashPosition(next)
	for p, o := range wantOff {
		if nextOff[p] != o {
			t.Fatalf("next offset of partition %d = %d, want %d (seq %d)", p, nextOff[p], o, next)
		}
	}
	low := uint64(0)
	if next > crashWindow {
		low = next - crashWindow
	}
	seen := make(map[uint64]bool)
	var prev *key
	err = s.ScanWindow(t.Context(), "s", func(r Record) error {
		want := crashRecord(r.Seq)
		if r.Partition != want.Partition || r.Offset != want.Offset || string(r.Value) != string(want.Value) || !r.Time.Equal(want.Time) {
			return fmt.Errorf("record %d/%d has seq %d and value %q", r.Partition, r.Offset, r.Seq, r.Value)
		}
		if r.Seq < low || r.Seq >= next || seen[r.Seq] {
			return fmt.Errorf("record seq %d outside [%d,%d) or duplicated", r.Seq, low, next)
		}
		k := key{r.Partition, r.Offset}
		if prev != nil && (k.p < prev.p || k.p == prev.p && k.o <= prev.o) {
			return errors.New("scan out of (partition, offset) order")
		}
		prev = &k
		seen[r.Seq] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(seen)) != next-low {
		t.Fatalf("window holds %d records, want %d", len(seen), next-low)
	}
	st, we, err := s.LoadTracker("s")
	if err != nil {
		t.Fatal(err)
	}
	if st != nil && (string(st) != strconv.FormatUint(we, 10) || we >= next) {
		t.Fatalf("tracker %q at window end %d, store at seq %d", st, we, next)
	}
	t.Logf("killed child; store resumes at seq %d (last ack %d), %d records in window", next, lastAck, len(seen))
}

func TestLockedAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	s, err := Open(dir, Options{}) // create, then hand over to the child
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cmd, stdin, lines := startHelper(t, "lock", dir)
	if l, _ := nextLine(t, lines, time.After(30*time.Second)); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open while another process holds the store = %v, want ErrLocked naming %s", err, dir)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the child released the lock: %v", err)
	}
	_ = s.Close()
}
