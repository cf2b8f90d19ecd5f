package stream

import (
	"testing"
	"time"
)

// TestAutoDiscoverEvery: AutoDiscoverEvery validates to the window bound
// with pacing on, and to one cadence where the checks cannot run alone.
func TestAutoDiscoverEvery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cfg        StreamConfig
		wantEvery  int
		wantAuto   bool
		wantTwoCad bool
	}{
		{"count window", StreamConfig{Window: 1000, Every: 300}, 1200, true, true},
		{"tumbling", StreamConfig{Window: 1000}, 1000, false, false},
		{"time window", StreamConfig{Window: 1000, Every: 100, Interval: time.Second}, 100, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Topic, c.Epsilon, c.DiscoverEvery = "t", 0.05, AutoDiscoverEvery
			for range 2 { // Validate twice, as the CLI and NewMonitor do
				if err := c.Validate(); err != nil {
					t.Fatal(err)
				}
				if c.DiscoverEvery != tc.wantEvery || c.autoDiscover != tc.wantAuto || c.twoCadence() != tc.wantTwoCad {
					t.Fatalf("DiscoverEvery %d auto %v two cadences %v, want %d %v %v",
						c.DiscoverEvery, c.autoDiscover, c.twoCadence(), tc.wantEvery, tc.wantAuto, tc.wantTwoCad)
				}
			}
		})
	}
	bad := StreamConfig{Topic: "t", Window: 1000, Every: 100, Epsilon: 0.05, DiscoverEvery: -2}
	if err := bad.Validate(); err == nil {
		t.Fatal("discover-every -2 validated")
	}
}
