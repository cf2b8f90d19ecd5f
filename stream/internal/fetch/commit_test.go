package fetch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
)

func offsetsOf(topic string, next ...int64) map[TopicPartition]int64 {
	out := map[TopicPartition]int64{}
	for p, o := range next {
		out[TopicPartition{topic, p}] = o
	}
	return out
}

// startHeldCommit starts a committer on fake and hands it offsets t/0:10,
// t/1:20, whose commit it returns in flight, held until hold is closed.
func startHeldCommit(t *testing.T, fake *testkit.FakeCommitter) (*Committer, chan struct{}) {
	t.Helper()
	hold := make(chan struct{})
	fake.SetHold(hold)
	oc := NewCommitter(fake, testkit.Logger(t), time.Millisecond)
	oc.Offer(offsetsOf("t", 10, 20))
	testkit.Eventually(t, 10*time.Second, "the first commit in flight", func() bool { _, n, _ := fake.State(); return n == 1 })
	return oc, hold
}

// TestCommitterLatestWins: while a commit hangs, offer returns at once and
// the offsets handed over meanwhile wait, the newest per partition winning;
// one commit is in flight at a time.
func TestCommitterLatestWins(t *testing.T) {
	t.Parallel()
	fake := &testkit.FakeCommitter{}
	oc, hold := startHeldCommit(t, fake)
	defer oc.Close()
	oc.Offer(offsetsOf("t", 11))
	oc.Offer(offsetsOf("t", 12))
	fake.SetHold(nil)
	close(hold)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := oc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _, maxInFlight := fake.State()
	want := []map[string]map[int]int64{{"t": {0: 10, 1: 20}}, {"t": {0: 12}}}
	if !testkit.CommitsEqual(calls, want) {
		t.Errorf("commits %v, want %v", calls, want)
	}
	if maxInFlight != 1 {
		t.Errorf("%d commits in flight at once, want 1", maxInFlight)
	}
	err := oc.Flush(ctx)
	if calls, _, _ := fake.State(); err != nil || len(calls) != 2 {
		t.Errorf("flush with nothing new: %v, %d commits, want nil and no new commit", err, len(calls))
	}
	oc.Close()
	oc.Close()
	if err := oc.Flush(ctx); !errors.Is(err, errCommitterClosed) {
		t.Errorf("flush after Close: %v, want errCommitterClosed", err)
	}
}

// TestCommitterRetriesWithNewest: a failed commit's offsets are committed
// again, with newer ones where they came, and flush returns the error of
// the commit it waited for.
func TestCommitterRetriesWithNewest(t *testing.T) {
	t.Parallel()
	fake := &testkit.FakeCommitter{FailNext: 1}
	oc, hold := startHeldCommit(t, fake)
	defer oc.Close()
	oc.Offer(offsetsOf("t", 11))
	fake.SetHold(nil)
	close(hold) // the first commit fails
	testkit.Eventually(t, 10*time.Second, "the retry", func() bool { c, n, _ := fake.State(); return len(c) == 2 && n == 0 })
	calls, _, _ := fake.State()
	want := []map[string]map[int]int64{{"t": {0: 10, 1: 20}}, {"t": {0: 11, 1: 20}}}
	if !testkit.CommitsEqual(calls, want) {
		t.Errorf("commits %v, want %v", calls, want)
	}

}

// TestCommitterFlush: offsets wait for the interval, unless flushed; flush
// returns the error of the commit it waited for, and the next flush
// commits the failed offsets again.
func TestCommitterFlush(t *testing.T) {
	t.Parallel()
	fake := &testkit.FakeCommitter{}
	oc := NewCommitter(fake, testkit.Logger(t), time.Hour)
	defer oc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	oc.Offer(offsetsOf("t", 10)) // the first commit is due at once
	testkit.Eventually(t, 10*time.Second, "the first commit", func() bool { c, n, _ := fake.State(); return len(c) == 1 && n == 0 })
	fake.Mu.Lock()
	fake.FailNext = 1
	fake.Mu.Unlock()
	oc.Offer(offsetsOf("t", 12)) // waits for the interval
	if err := oc.Flush(ctx); err == nil {
		t.Error("flush returned nil, want the failed commit's error")
	}
	if err := oc.Flush(ctx); err != nil {
		t.Errorf("second flush: %v, want the retry to succeed", err)
	}
	calls, _, _ := fake.State()
	want := []map[string]map[int]int64{{"t": {0: 10}}, {"t": {0: 12}}, {"t": {0: 12}}}
	if !testkit.CommitsEqual(calls, want) {
		t.Errorf("commits %v, want %v", calls, want)
	}
}
