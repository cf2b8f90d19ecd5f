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
	d := newDropRun(t)
	c := d.c
	for c.seq <= dropHeldEnd-1 {
		if end, due := c.next(); due {
			c.s.dispatch(end)
			c.waitChecked(end)
		}
	}
	saved := c.s.evaluated.Load()
	for c.seq <= dropLastStale {
		if end, due := c.next(); due {
			c.s.dispatch(end)
			if end == dropHeldEnd {
				select {
				case <-d.held:
				case <-time.After(60 * time.Second):
					t.Fatal("the check of the held window did not run")
				}
			}
		}
	}
	if err := c.s.drop("test: topic assigned to another member"); err != nil {
		t.Fatal(err)
	}
	d.once.Do(func() { close(d.release) })

	// The topic comes back: the window is read back with a count behind
	// the one this member reached, so no row is newer than the last one
	// it handed to the checker.
	c.seq = dropRetakeAt
	for c.seq <= dropRetakeEnd {
		if end, due := c.next(); due && end != dropRetakeEnd {
			t.Fatalf("window %d due before the read-back window is full", end)
		}
	}
	c.s.dispatch(dropRetakeEnd)
	testkit.Eventually(t, 60*time.Second, "a check after the takeover saved", func() bool {
		return c.s.evaluated.Load() >= dropRetakeEnd+1
	})
	if got := c.s.evaluated.Load(); got != dropRetakeEnd+1 {
		t.Errorf("last saved check ends at %d, want the takeover's %d (saved before the drop: %d): a dropped window's check was saved",
			got-1, dropRetakeEnd, saved-1)
	}
	if diff := <-d.trackerDiff; diff != "" {
		t.Error(diff)
	}
	d.checkNoStaleEvents(t)
	d.checkDiscoveriesForgotten(t)
}

// The windows of TestDropDiscardsQueuedWork.
const (
	dropHeldEnd   = 1549 // the check held after its counts, before its save
	dropLastStale = 1899 // the last check queued behind it
	dropRetakeAt  = 1350 // the takeover's first arrival sequence number
	dropRetakeEnd = dropRetakeAt + cadWindow - 1
)

// dropRun is TestDropDiscardsQueuedWork's two-cadence stream and what its
// hooks report: the held check (held, released by release), the tracker
// the takeover's check starts from (trackerDiff: "" when it is the one the
// store saved last), and the discoveries of the dropped window started and
// stopped (under discMu).
type dropRun struct {
	c                        *cadenceRun
	held, release            chan struct{}
	once                     sync.Once
	trackerDiff              chan string
	discMu                   sync.Mutex
	discStarted, discStopped int
}

func newDropRun(t *testing.T) *dropRun {
	d := &dropRun{held: make(chan struct{}), release: make(chan struct{}), trackerDiff: make(chan string, 1)}
	d.c = newCadenceRunOf(t, StreamConfig{
		Topic: "cad", Window: cadWindow, Every: cadEvery, DiscoverEvery: cadDiscoverEvery, Epsilon: 0.05,
	}, func(f *hooks) {
		f.afterCheck = func(end uint64, _ *eval.Outcome) {
			if end == dropHeldEnd {
				close(d.held)
				<-d.release
			}
		}
		f.beforeCheck = func(_ context.Context, end uint64) {
			if end == dropRetakeEnd {
				d.trackerDiff <- d.trackerChange()
			}
		}
		// The discoveries of the dropped window run until the drop stops
		// them.
		f.beforeDiscovery = func(ctx context.Context, end uint64) {
			if end < dropHeldEnd {
				return
			}
			d.discMu.Lock()
			d.discStarted++
			d.discMu.Unlock()
			<-ctx.Done()
			d.discMu.Lock()
			d.discStopped++
			d.discMu.Unlock()
		}
	})
	// Registered after the run's own cleanup, so run before it: a held
	// check is released before the evaluator is waited for.
	t.Cleanup(func() { d.once.Do(func() { close(d.release) }) })
	return d
}

// trackerChange is "" when the tracker the takeover's check starts from
// is the one the store saved last (the discarded check's observations are
// undone), else what differs.
func (d *dropRun) trackerChange() string {
	now, err := d.c.s.eval.tracker.MarshalJSON()
	if err != nil {
		return err.Error()
	}
	saved, savedEnd, err := d.c.s.m.store.LoadTracker(d.c.s.name)
	switch {
	case err != nil:
		return err.Error()
	case savedEnd != dropHeldEnd-cadEvery:
		return fmt.Sprintf("the store's tracker is of window %d, want %d", savedEnd, dropHeldEnd-cadEvery)
	case string(now) != string(saved):
		return "the tracker is not the one the store saved last: the discarded check changed it"
	}
	return ""
}

// checkNoStaleEvents: no event of a dropped window was delivered, or saved
// and not delivered yet (the save comes first).
func (d *dropRun) checkNoStaleEvents(t *testing.T) {
	t.Helper()
	c := d.c
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
		if e.Window.EndSeq >= dropHeldEnd && e.Window.EndSeq != dropRetakeEnd {
			stale = append(stale, fmt.Sprintf("%s %s at %d", e.Type, e.DependencyText, e.Window.EndSeq))
		}
	}
	if len(stale) > 0 {
		t.Errorf("events of dropped windows saved after the drop: %v", stale)
	}
}

// checkDiscoveriesForgotten: nothing of the dropped window's discoveries
// is left in the mailbox, and the running one stops.
func (d *dropRun) checkDiscoveriesForgotten(t *testing.T) {
	t.Helper()
	c := d.c
	c.s.mb.mu.Lock()
	f := &c.s.mb.feed
	var left []string
	for _, r := range f.done {
		left = append(left, fmt.Sprintf("discovery result %d", r.EndSeq))
	}
	for _, j := range f.discs {
		if j.endSeq < dropRetakeAt {
			left = append(left, fmt.Sprintf("discovery job %d", j.endSeq))
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
		d.discMu.Lock()
		defer d.discMu.Unlock()
		return d.discStopped == d.discStarted
	})
}
