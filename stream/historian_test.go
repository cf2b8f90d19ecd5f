package stream

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/state"
)

// TestHistorian: the historian runs its jobs one at a time in the order
// they were added, whatever the related slots; add never blocks, even
// while a job is held; past maxRelated jobs holding a slot (queued or
// running) reserve refuses, and a slot comes back once its job is done;
// close runs the jobs left, with the context done, and is idempotent; a
// job added after close is dropped with its slot.
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
	h := startHistorian(ctx, maxRelated, func(ctx context.Context, job *historyJob) {
		switch job.h.WindowEnd {
		case 1:
			<-release
		case 6:
			<-release6
		}
		mu.Lock()
		ran = append(ran, job.h.WindowEnd)
		doneCtx = append(doneCtx, ctx.Err() != nil)
		mu.Unlock()
	})
	job := func(end uint64, related bool) *historyJob {
		j := &historyJob{h: &state.HistoryAppend{WindowEnd: end}}
		if related {
			j.reserved = h.reserve()
		}
		return j
	}
	h.add(job(1, true)) // held: its slot stays taken
	if j := job(2, true); !j.reserved {
		t.Fatal("second related slot refused")
	} else {
		h.add(j)
	}
	for end := uint64(3); end < 6; end++ {
		j := job(end, true)
		if j.reserved {
			t.Fatalf("job %d got a related slot past %d", end, maxRelated)
		}
		h.add(j) // queued all the same, without samples
	}
	close(release)
	testkit.Eventually(t, 30*time.Second, "the queued jobs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 5
	})
	if !h.reserve() || !h.reserve() || h.reserve() {
		t.Fatalf("slots not given back once their jobs were done")
	}
	// 6 and 7 hold the two slots just reserved.
	h.add(&historyJob{h: &state.HistoryAppend{WindowEnd: 6}, reserved: true})
	h.add(&historyJob{h: &state.HistoryAppend{WindowEnd: 7}, reserved: true})
	cancel()
	close(release6) // 7 runs after the cancel
	h.close()
	h.close()
	mu.Lock()
	if want := []uint64{1, 2, 3, 4, 5, 6, 7}; !slices.Equal(ran, want) {
		t.Errorf("jobs ran in order %v, want %v", ran, want)
	}
	if !doneCtx[len(doneCtx)-1] {
		t.Errorf("the job drained after the cancel ran with its context still live")
	}
	mu.Unlock()
	h.add(job(8, true))
	if h.related != 0 {
		t.Errorf("%d related slots held after close, want 0", h.related)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 7 {
		t.Errorf("a job added after close ran")
	}
}
