package backoff

import (
	"slices"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name      string
		base, cap time.Duration
		// resetAt: Reset before the wait of this index (-1: never).
		resetAt int
		want    []time.Duration
	}{
		{"doubles up to the cap", 200 * ms, 5 * time.Second, -1,
			[]time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5 * time.Second, 5 * time.Second}},
		{"a cap between two steps", 100 * ms, 300 * ms, -1, []time.Duration{100 * ms, 200 * ms, 300 * ms, 300 * ms}},
		{"a cap equal to the base", time.Minute, time.Minute, -1, []time.Duration{time.Minute, time.Minute}},
		{"a base above the cap stays the first wait", 2 * time.Second, time.Second, -1, []time.Duration{2 * time.Second, time.Second, time.Second}},
		{"reset starts over", 5 * time.Second, time.Minute, 3,
			[]time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 5 * time.Second, 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := New(tc.base, tc.cap)
			var got []time.Duration
			for i := range tc.want {
				if i == tc.resetAt {
					b.Reset()
				}
				got = append(got, b.Next())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("waits %v, want %v", got, tc.want)
			}
		})
	}
}
