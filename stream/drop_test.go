package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/eval"
)

// TestDropDiscardsQueuedWork: with two cadences, a stream that drops its
// window (its topic went to another member) while a check runs and more
// checks and discoveries wait saves and delivers none of them: the running
// check (past its counts and tracker, before its save) is discarded, the
// queued ones are forgotten, and so are the discoveries of the dropped
// window. When the topic comes back (a takeover whose count is behind what
// this member consumed), the first check starts the checker over and is
// saved.
func TestDropDiscardsQueuedWork(t *testing.T) {
	t.Parallel()
	const (
		heldEnd   = 1549 // the check held after its counts, before its save
		lastStale = 1899 // the last check queued behind it
		retakeAt  = 1350 // the takeover's first arrival sequence number
		retakeEnd = retakeAt + cadWindow - 1
	)
	held, release := make(chan struct{}), make(chan struct{})
	trackerDiff := make(chan string, 1)
	var c *cadenceRun
	var once sync.Once
	defer once.Do(func() { close(release) })
	// The discoveries of the dropped window run until the drop stops them.
	var discMu sync.Mutex
	discStarted, discStopped := 0, 0
	c = newCadenceRunOf(t, StreamConfig{
		Topic: "cad", Window: cadWindow, Every: cadEvery, DiscoverEvery: cadDiscoverEvery, Epsilon: 0.05,
	}, func(f *hooks) {
		f.afterCheck = func(end uint64, _ *eval.Outcome) {
			if end == heldEnd {
				close(held)
				<-release
			}
		}
		// The takeover's check starts from the tracker the store saved
		// last: the discarded check's observations are undone.
		f.beforeCheck = func(_ context.Context, end uint64) {
			if end != retakeEnd {
				return
			}
			now, err := c.s.eval.tracker.MarshalJSON()
			if err != nil {
				trackerDiff <- err.Error()
				return
			}
			saved, savedEnd, err := c.s.m.store.LoadTracker(c.s.name)
			switch {
			case err != nil:
				trackerDiff <- err.Error()
			case savedEnd != heldEnd-cadEvery:
				trackerDiff <- fmt.Sprintf("the store's tracker is of window %d, want %d", savedEnd, heldEnd-cadEvery)
			case string(now) != string(saved):
				trackerDiff <- "the tracker is not the one the store saved last: the discarded check changed it"
			default:
				trackerDiff <- ""
			}
		}
		f.beforeDiscovery = func(ctx context.Context, end uint64) {
			if end < heldEnd {
				return
			}
			discMu.Lock()
			discStarted++
			discMu.Unlock()
			<-ctx.Done()
			discMu.Lock()
			discStopped++
			discMu.Unlock()
		}
	})
	for c.seq <= heldEnd-1 {
		if end, due := c.next(); due {
			c.s.dispatch(end)
			c.waitChecked(end)
		}
	}
	saved := c.s.evaluated.Load()
	for c.seq <= lastStale {
		if end, due := c.next(); due {
			c.s.dispatch(end)
			if end == heldEnd {
				select {
				case <-held:
				case <-time.After(60 * time.Second):
					t.Fatal("the check of the held window did not run")
				}
			}
		}
	}
	if err := c.s.drop("test: topic assigned to another member"); err != nil {
		t.Fatal(err)
	}
	once.Do(func() { close(release) })

	// The topic comes back: the window is read back with a count behind
	// the one this member reached, so no row is newer than the last one
	// it handed to the checker.
	c.seq = retakeAt
	for c.seq <= retakeEnd {
		if end, due := c.next(); due && end != retakeEnd {
			t.Fatalf("window %d due before the read-back window is full", end)
		}
	}
	c.s.dispatch(retakeEnd)
	deadline := time.Now().Add(60 * time.Second)
	for c.s.evaluated.Load() < retakeEnd+1 {
		if time.Now().After(deadline) {
			t.Fatalf("no check after the takeover saved in 60 s: the last saved ends at %d (before the drop: %d); events %v",
				int64(c.s.evaluated.Load())-1, int64(saved)-1, eventSummary(c.sink.snapshot()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := c.s.evaluated.Load(); got != retakeEnd+1 {
		t.Errorf("last saved check ends at %d, want the takeover's %d (saved before the drop: %d): a dropped window's check was saved",
			got-1, retakeEnd, saved-1)
	}
	if diff := <-trackerDiff; diff != "" {
		t.Error(diff)
	}
	// Delivered, or saved and not delivered yet (the save comes first).
	events := c.sink.snapshot()
	pending, err := c.s.m.store.PendingEvents(c.s.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		var e alerts.Event
		if err := json.Unmarshal(p.Payload, &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	var stale []string
	for _, e := range events {
		if e.Window.EndSeq >= heldEnd && e.Window.EndSeq != retakeEnd {
			stale = append(stale, fmt.Sprintf("%s %s at %d", e.Type, e.DependencyText, e.Window.EndSeq))
		}
	}
	if len(stale) > 0 {
		t.Errorf("events of dropped windows saved after the drop: %v", stale)
	}
	c.s.mb.mu.Lock()
	f := &c.s.mb.feed
	var left []string
	for _, d := range f.done {
		left = append(left, fmt.Sprintf("discovery result %d", d.endSeq))
	}
	for _, d := range f.discs {
		if d.endSeq < retakeAt {
			left = append(left, fmt.Sprintf("discovery job %d", d.endSeq))
		}
	}
	for end := range f.rerun {
		left = append(left, fmt.Sprintf("merge wait %d", end))
	}
	c.s.mb.mu.Unlock()
	if len(left) > 0 {
		t.Errorf("the dropped window's discoveries survive the drop: %v", left)
	}
	testkit.Eventually(t, 60*time.Second, "the dropped window's running discovery to stop", func() bool {
		discMu.Lock()
		defer discMu.Unlock()
		return discStopped == discStarted
	})
}
