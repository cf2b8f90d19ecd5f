package discovery

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
	"github.com/odwatch/odwatch/internal/testkit"
)

// pauseTable is a table with some dependencies at eps 0.1: c1 follows c0
// up to noise, c3 orders like c2, the rest random.
func pauseTable() *table.Table {
	rng := rand.New(rand.NewPCG(11, 11))
	const rows = 3000
	cols := make([][]int, 6)
	for c := range cols {
		cols[c] = make([]int, rows)
	}
	for r := range rows {
		cols[0][r] = rng.IntN(20)
		cols[1][r] = cols[0][r] / 2
		if rng.IntN(20) == 0 {
			cols[1][r] = rng.IntN(10)
		}
		cols[2][r] = rng.IntN(300)
		cols[3][r] = cols[2][r] * 3
		cols[4][r] = rng.IntN(7)
		cols[5][r] = rng.IntN(40)
	}
	return tableFromInts(cols)
}

// pauseBase returns pauseTable, the options the pause tests run it with
// and its discovery without a pause.
func pauseBase(t *testing.T) (*table.Table, Options, *Discovery) {
	t.Helper()
	tab := pauseTable()
	opts := Options{Epsilon: 0.1, Workers: 2}
	base, err := Discover(context.Background(), tab, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tab, opts, base
}

// TestDiscoverPause: Options.Pause is passed before every unit of work;
// a Pause that blocks holds the run and changes no result once it lets go;
// a Pause that fails, or a cancel while paused, stops the run with the
// levels completed and an error wrapping the cause.
func TestDiscoverPause(t *testing.T) {
	t.Parallel()
	tab, opts, base := pauseBase(t)
	if len(base.Dependencies) == 0 || base.Stats.Levels < 3 {
		t.Fatalf("the table should give dependencies over several levels: %+v", base.Stats)
	}

	t.Run("called per unit, same result", func(t *testing.T) {
		var calls atomic.Int64
		o := opts
		o.Pause = func(context.Context) error { calls.Add(1); return nil }
		d, err := Discover(context.Background(), tab, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(discoveryLines(d), discoveryLines(base)) {
			t.Fatalf("with Pause:\n%q\nwithout:\n%q", discoveryLines(d), discoveryLines(base))
		}
		// A validation task measures up to two polarities (two
		// Validations): at least one call per task.
		if n := calls.Load(); 2*n < d.Stats.Validations {
			t.Fatalf("Pause called %d times for %d validations: want one call per unit of work", n, d.Stats.Validations)
		}
	})

	// blockAt returns a Pause that blocks its k-th call and every later one
	// until release is closed (or ctx is done), counting the calls blocked.
	blockAt := func(k int64, release <-chan struct{}, blocked *atomic.Int64) func(context.Context) error {
		var calls atomic.Int64
		return func(ctx context.Context) error {
			if calls.Add(1) < k {
				return nil
			}
			return blockUntil(ctx, release, blocked)
		}
	}

	t.Run("blocks, then same result", func(t *testing.T) {
		release := make(chan struct{})
		var blocked atomic.Int64
		o := opts
		o.Pause = blockAt(20, release, &blocked)
		resumesUnchanged(t, "a worker to block in Pause", &blocked, release, base, func() (*Discovery, error) {
			return Discover(context.Background(), tab, o)
		})
	})

	// completedPrefix: a stopped run's result is partial and holds only
	// dependencies of the full one.
	completedPrefix := func(t *testing.T, d *Discovery) {
		t.Helper()
		if d == nil || d.Complete {
			t.Fatalf("want a partial, incomplete result, got %+v", d)
		}
		want := discoveryLines(base)
		for _, line := range discoveryLines(d) {
			if !slices.Contains(want, line) {
				t.Errorf("partial result has %q, not in the full one", line)
			}
		}
	}

	t.Run("error stops the run", func(t *testing.T) {
		errStop := errors.New("stop")
		var calls atomic.Int64
		o := opts
		o.Pause = func(context.Context) error {
			if calls.Add(1) >= 40 {
				return errStop
			}
			return nil
		}
		d, err := Discover(context.Background(), tab, o)
		if !errors.Is(err, errStop) {
			t.Fatalf("err %v, want one wrapping Pause's", err)
		}
		completedPrefix(t, d)
	})

	t.Run("cancel while paused", func(t *testing.T) {
		var blocked atomic.Int64
		o := opts
		o.Pause = blockAt(30, make(chan struct{}), &blocked)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type res struct {
			d   *Discovery
			err error
		}
		done := make(chan res, 1)
		go func() {
			d, err := Discover(ctx, tab, o)
			done <- res{d, err}
		}()
		testkit.Eventually(t, 30*time.Second, "a worker to block in Pause", func() bool { return blocked.Load() > 0 })
		cancel()
		r := <-done
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", r.err)
		}
		completedPrefix(t, r.d)
	})
}

// withinUnit reports whether the Pause being called was passed from
// within a unit of work: by a Validator's tick.
func withinUnit() bool { return calledFrom("(*Validator).tick") }

// calledFrom reports whether fn (a function name's suffix) is on the
// caller's stack.
func calledFrom(fn string) bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestDiscoverPauseWithinUnits: the validators pass Options.Pause within a
// long unit of work too, every pauseEvery rows (forced to 1 here, so that
// every class or bucket pauses); pausing there changes no result, blocks
// the unit until it lets go, and an error there stops the run as one
// between units does.
func TestDiscoverPauseWithinUnits(t *testing.T) {
	t.Parallel()
	tab, opts, base := pauseBase(t)
	if validate.PauseRows <= 1 || validate.NewValidator().PauseEvery != validate.PauseRows {
		t.Fatalf("a Validator pauses every %d rows, want PauseRows (%d) > 1", validate.NewValidator().PauseEvery, validate.PauseRows)
	}

	t.Run("called within units, same result", func(t *testing.T) {
		var products atomic.Int64
		count := func(every int) (units, within int64) {
			var u, w atomic.Int64
			o := opts
			o.Pause = func(context.Context) error {
				if withinUnit() {
					w.Add(1)
					if calledFrom("(*partitionScratch).product") {
						products.Add(1)
					}
				} else {
					u.Add(1)
				}
				return nil
			}
			d, err := discover(context.Background(), tab, o, every)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(discoveryLines(d), discoveryLines(base)) {
				t.Fatalf("pausing every %d rows:\n%q\nwithout:\n%q", every, discoveryLines(d), discoveryLines(base))
			}
			return u.Load(), w.Load()
		}
		units, within := count(1)
		if within < units || products.Load() == 0 {
			t.Fatalf("pausing every row: %d calls within units (%d in partition products) for %d between them, want more within, some in products",
				within, products.Load(), units)
		}
		if u, w := count(math.MaxInt); w != 0 || u != units {
			t.Fatalf("never pausing within units: %d calls within, %d between (want 0 and %d)", w, u, units)
		}
	})

	t.Run("blocks within a unit, then same result", func(t *testing.T) {
		release := make(chan struct{})
		var blocked atomic.Int64
		o := opts
		o.Pause = func(ctx context.Context) error {
			if !withinUnit() {
				return nil
			}
			return blockUntil(ctx, release, &blocked)
		}
		resumesUnchanged(t, "a worker to block within a unit", &blocked, release, base, func() (*Discovery, error) {
			return discover(context.Background(), tab, o, 1)
		})
	})

	t.Run("error within a unit stops the run", func(t *testing.T) {
		errStop := errors.New("stop")
		var calls atomic.Int64
		o := opts
		o.Pause = func(context.Context) error {
			if withinUnit() && calls.Add(1) >= 200 {
				return errStop
			}
			return nil
		}
		d, err := discover(context.Background(), tab, o, 1)
		if !errors.Is(err, errStop) {
			t.Fatalf("err %v, want one wrapping Pause's", err)
		}
		if d.Complete || d.Stats.Levels >= base.Stats.Levels {
			t.Fatalf("stopped run: complete %v, %d levels of %d", d.Complete, d.Stats.Levels, base.Stats.Levels)
		}
		want := discoveryLines(base)
		for _, line := range discoveryLines(d) {
			if !slices.Contains(want, line) {
				t.Errorf("partial result has %q, not in the full one", line)
			}
		}
	})
}

// resumesUnchanged starts run, waits (what) until blocked counts a worker
// blocked in Pause, checks that run has not returned, closes release and
// checks that run completes with base's dependencies.
func resumesUnchanged(t *testing.T, what string, blocked *atomic.Int64, release chan struct{}, base *Discovery, run func() (*Discovery, error)) {
	t.Helper()
	type res struct {
		d   *Discovery
		err error
	}
	done := make(chan res, 1)
	go func() {
		d, err := run()
		done <- res{d, err}
	}()
	testkit.Eventually(t, 30*time.Second, what, func() bool { return blocked.Load() > 0 })
	select {
	case <-done:
		t.Fatal("Discover returned while a worker was paused")
	default:
	}
	close(release)
	r := <-done
	if r.err != nil || !r.d.Complete {
		t.Fatalf("err %v complete %v", r.err, r.d.Complete)
	}
	if !slices.Equal(discoveryLines(r.d), discoveryLines(base)) {
		t.Fatalf("after a pause:\n%q\nwithout:\n%q", discoveryLines(r.d), discoveryLines(base))
	}
}

// blockUntil is a Pause that blocks until release is closed (at once if it
// is) or ctx is done, counted in blocked while it blocks.
func blockUntil(ctx context.Context, release <-chan struct{}, blocked *atomic.Int64) error {
	select {
	case <-release:
		return nil
	default:
	}
	blocked.Add(1)
	defer blocked.Add(-1)
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
