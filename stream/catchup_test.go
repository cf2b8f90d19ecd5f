package stream

import (
	"context"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
	"github.com/odwatch/odwatch/stream/internal/pace"
	dto "github.com/prometheus/client_model/go"
)

// TestBacklogCheckedWindowByWindow: checks queued behind a slow one (the
// first, held until they are queued) are checked one by one while their
// batch has taken less than pace.Options.CatchUp, and past it coalesced
// into the batch's last (CatchUp 0: at once, merge points excepted).
func TestBacklogCheckedWindowByWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		catchUp time.Duration
		skipped bool
	}{
		{"window by window", time.Hour, false},
		{"coalesced", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := pace.Default
			opts.CatchUp = tc.catchUp
			release := make(chan struct{})
			sc := StreamConfig{Topic: "cad", Window: cadWindow, Every: cadEvery, DiscoverEvery: cadDiscoverEvery, Epsilon: 0.05}
			c := newCadenceRunOf(t, sc, func(h *hooks) {
				h.pace = &opts
				h.beforeCheck = func(ctx context.Context, end uint64) {
					if end == cadWindow-1 {
						select {
						case <-release:
						case <-ctx.Done():
						}
					}
				}
			})
			var last uint64
			for queued := 0; queued < 6; {
				end, due := c.next()
				if due {
					c.s.dispatch(end)
					last, queued = end, queued+1
				}
			}
			close(release)
			c.waitChecked(last)
			var n, k float64
			testkit.Eventually(t, 60*time.Second, "the checks counted", func() bool { // after they are saved
				var ok, skipped dto.Metric
				_ = c.s.m.metrics.Evaluations.WithLabelValues("cad", "ok").Write(&ok)
				_ = c.s.m.metrics.Evaluations.WithLabelValues("cad", "skipped").Write(&skipped)
				n, k = ok.GetCounter().GetValue(), skipped.GetCounter().GetValue()
				return n+k >= 6
			})
			if n+k != 6 || (k > 0) != tc.skipped {
				t.Errorf("%v checked, %v skipped of 6 queued; want skipped: %v", n, k, tc.skipped)
			}
		})
	}
}

// TestDiscoveryGoesOnWhileTheCheckerIsBuilt: the first window's check,
// which builds the checker from the whole window, does not hold its
// discovery at the gate (pace.Gate, building): held before its counts
// until that discovery has ended, it goes on.
func TestDiscoveryGoesOnWhileTheCheckerIsBuilt(t *testing.T) {
	t.Parallel()
	sc := StreamConfig{Topic: "cad", Window: cadWindow, Every: cadEvery, DiscoverEvery: cadDiscoverEvery, Epsilon: 0.05}
	var c *cadenceRun
	ended := make(chan bool, 1)
	c = newCadenceRunOf(t, sc, func(h *hooks) {
		h.beforeCheck = func(ctx context.Context, end uint64) {
			if end != cadWindow-1 {
				return
			}
			deadline := time.Now().Add(30 * time.Second)
			for !c.discoveryDone(end) && time.Now().Before(deadline) && ctx.Err() == nil {
				time.Sleep(time.Millisecond) // polling, with a deadline
			}
			ended <- c.discoveryDone(end)
		}
	})
	for {
		end, due := c.next()
		if due {
			c.s.dispatch(end)
			break
		}
	}
	if !<-ended {
		t.Fatal("the first window's discovery did not end while its check built the checker")
	}
}
