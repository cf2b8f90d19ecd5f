package history

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/testkit"
)

// TestHistorian: the historian runs its jobs one at a time in the order
// they were added, whatever the related slots; Add never blocks, even
// while a job is held; past maxRelated jobs holding a slot (queued or
// running) Reserve refuses, and a slot comes back once its job is done;
// Close runs the jobs left, with the context done, and is idempotent; a
// job added after Close is dropped with its slot.
func TestHistorian(t *testing.T) {
	const maxRelated = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release, release6 := make(chan struct{}), make(chan struct{})
	var (
		mu      sync.Mutex
		ran     []uint64
		doneCtx []bool // whether ctx was done when each job ran
	)
	h := Start(ctx, maxRelated, func(ctx context.Context, end uint64) {
		switch end {
		case 1:
			<-release
		case 6:
			<-release6
		}
		mu.Lock()
		ran = append(ran, end)
		doneCtx = append(doneCtx, ctx.Err() != nil)
		mu.Unlock()
	})
	h.Add(1, h.Reserve()) // held: its slot stays taken
	if !h.Reserve() {
		t.Fatal("second related slot refused")
	}
	h.Add(2, true)
	for end := uint64(3); end < 6; end++ {
		reserved := h.Reserve()
		if reserved {
			t.Fatalf("job %d got a related slot past %d", end, maxRelated)
		}
		h.Add(end, reserved) // queued all the same, without samples
	}
	close(release)
	testkit.Eventually(t, 30*time.Second, "the queued jobs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 5
	})
	if !h.Reserve() || !h.Reserve() || h.Reserve() {
		t.Fatalf("slots not given back once their jobs were done")
	}
	// 6 and 7 hold the two slots just reserved.
	h.Add(6, true)
	h.Add(7, true)
	cancel()
	close(release6) // 7 runs after the cancel
	h.Close()
	h.Close()
	mu.Lock()
	if want := []uint64{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(ran, want) {
		t.Errorf("jobs ran in order %v, want %v", ran, want)
	}
	if !doneCtx[len(doneCtx)-1] {
		t.Errorf("the job drained after the cancel ran with its context still live")
	}
	mu.Unlock()
	h.Add(8, h.Reserve())
	if h.related != 0 {
		t.Errorf("%d related slots held after close, want 0", h.related)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 7 {
		t.Errorf("a job added after close ran")
	}
}

// TestEventKeepsSampleFields: the stored form keeps all of a sample's
// fields, which the event's JSON leaves out, and its expected value.
func TestEventKeepsSampleFields(t *testing.T) {
	t.Parallel()
	e := alerts.Event{ID: "x", Type: alerts.EventViolated, Samples: []alerts.Sample{
		{Topic: "t", Offset: 1, Values: map[string]string{"a": "1"}, Fields: map[string]string{"a": "1", "source": "s"},
			Expected: &alerts.Expected{Column: "a", Value: "2"}},
		{Topic: "t", Offset: 2, Values: map[string]string{"a": "3"}},
	}}
	p, err := EncodeEvent(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := DecodeEvent(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Samples[0]; got.Fields["source"] != "s" || got.Expected == nil || got.Expected.Value != "2" {
		t.Errorf("sample 0 back: %+v", got)
	}
	if back.Samples[1].Fields != nil {
		t.Errorf("sample 1 back with fields %v", back.Samples[1].Fields)
	}
}
