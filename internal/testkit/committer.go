package testkit

import (
	"errors"
	"maps"
	"slices"
	"sync"
)

// FakeCommitter records the offset commits it is asked for (it is a
// consumer group generation's offset committer). While Hold is set a commit
// waits for it to close; the next FailNext commits fail (after Hold); Next,
// when set, takes the commits that do not fail; Check is called at the
// start of each commit. Set the fields under Mu once commits may run.
type FakeCommitter struct {
	Mu   sync.Mutex
	Next interface {
		CommitOffsets(map[string]map[int]int64) error
	}
	Hold     chan struct{}
	FailNext int
	Check    func(map[string]map[int]int64)

	calls       []map[string]map[int]int64
	inFlight    int
	maxInFlight int
}

func (f *FakeCommitter) CommitOffsets(offsets map[string]map[int]int64) error {
	f.Mu.Lock()
	f.calls = append(f.calls, offsets)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	hold, check := f.Hold, f.Check
	f.Mu.Unlock()
	if check != nil {
		check(offsets)
	}
	if hold != nil {
		<-hold
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.inFlight--
	if f.FailNext > 0 {
		f.FailNext--
		return errors.New("commit offsets: use of closed network connection")
	}
	if f.Next != nil {
		return f.Next.CommitOffsets(offsets)
	}
	return nil
}

// State returns the commits asked for so far, how many are in flight and
// the most that were in flight at once.
func (f *FakeCommitter) State() (calls []map[string]map[int]int64, inFlight, maxInFlight int) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.calls, f.inFlight, f.maxInFlight
}

// SetHold sets Hold under Mu.
func (f *FakeCommitter) SetHold(hold chan struct{}) {
	f.Mu.Lock()
	f.Hold = hold
	f.Mu.Unlock()
}

// CommitsEqual reports whether two lists of offset commits are equal.
func CommitsEqual(a, b []map[string]map[int]int64) bool {
	return slices.EqualFunc(a, b, func(x, y map[string]map[int]int64) bool { return maps.EqualFunc(x, y, maps.Equal) })
}
