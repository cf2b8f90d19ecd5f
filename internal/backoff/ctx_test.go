package backoff

import (
	"context"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/testkit"
)

func TestEnding(t *testing.T) {
	t.Parallel()
	live, cancel := context.WithCancel(context.Background())
	defer cancel()
	later, cancelLater := context.WithTimeout(context.Background(), time.Hour)
	defer cancelLater()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"live, no deadline", live, false},
		{"deadline ahead", later, false},
		{"cancelled", done, true},
		{"deadline passed, Err not yet set", testkit.LateCtx{Context: context.Background()}, true},
	} {
		if got := Ending(tt.ctx); got != tt.want {
			t.Errorf("%s: Ending = %v, want %v", tt.name, got, tt.want)
		}
	}
}
