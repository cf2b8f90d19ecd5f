package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/odwatch/odwatch/internal/kafkatest"
	"github.com/odwatch/odwatch/internal/testkit"
)

// readyLog samples a process's /readyz until stopped.
type readyLog struct {
	mu      sync.Mutex
	samples []readySample
	stop    chan struct{}
	done    chan struct{}
}

type readySample struct {
	at    time.Time
	ready bool
}

func watchReady(p *proc) *readyLog {
	l := &readyLog{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ok, err := p.Ready()
			if err != nil {
				continue
			}
			l.mu.Lock()
			l.samples = append(l.samples, readySample{time.Now(), ok})
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *readyLog) close() []readySample {
	close(l.stop)
	<-l.done
	return l.samples
}

// TestBrokerRestart stops the single node cleanly while odwatch consumes a
// backlog, keeps it away for a few seconds and starts it again on its data:
// odwatch stays up, /readyz is 503 only while the broker is away (and
// until its client notices it is back), and every record is evaluated
// exactly once (the last window ends at the last record, the window is
// whole). The time to ready again is logged, next to what stream's kfake
// outage test measures by cutting connections.
func TestBrokerRestart(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	c.CreateTopic(t, "rs", 2, nil)
	p := watchTopic(t, c.Bootstrap(), "rs")
	generate(t, c.Bootstrap(), "rs", "--count", "1000", "--clean", "1000", "--rate", "0", "--seed", "1")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "the first records evaluated", evaluatedTo(p, "rs", 999))

	rl := watchReady(p)
	generate(t, c.Bootstrap(), "rs", "--count", "2000", "--clean", "2000", "--rate", "0", "--seed", "2")
	stopped := time.Now()
	c.Nodes[0].Stop()
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "not ready while the broker is away", func() bool { ok, _ := p.Ready(); return !ok })
	notReady := time.Since(stopped)
	time.Sleep(3 * time.Second)
	restarted := time.Now()
	c.Nodes[0].Start(t)
	up := time.Now()
	testkit.EventuallyEvery(t, 2*time.Minute, pollEvery, "ready after the restart", func() bool { ok, _ := p.Ready(); return ok })
	readyAgain := time.Now()
	t.Logf("broker away %v (restart took %v); /readyz 503 %v after the stop, 200 again %v after the broker answered",
		up.Sub(stopped).Round(10*time.Millisecond), up.Sub(restarted).Round(10*time.Millisecond),
		notReady.Round(10*time.Millisecond), readyAgain.Sub(up).Round(10*time.Millisecond))
	generate(t, c.Bootstrap(), "rs", "--count", "1000", "--clean", "1000", "--rate", "0", "--seed", "3")
	testkit.EventuallyEvery(t, time.Minute, pollEvery, "every record evaluated", evaluatedTo(p, "rs", 3999))
	t.Logf("every record evaluated %v after the broker answered", time.Since(up).Round(10*time.Millisecond))
	time.Sleep(time.Second)
	s, _ := p.Status("rs")
	if end := s.LastWindowEnd(); end != 3999 || s.Stream.WindowRecords != 500 {
		t.Errorf("last window ends at record %d with %d records, want 3999 and 500 (none lost or counted twice)", end, s.Stream.WindowRecords)
	}
	if n := p.Metric(t, "odwatch_kafka_unreachable_seconds_total"); n <= 0 {
		t.Error("the outage was not counted")
	}
	for _, smp := range rl.close() {
		away := !smp.at.Before(stopped) && smp.at.Before(readyAgain)
		if !smp.ready && !away {
			t.Errorf("/readyz 503 at %v, outside the outage (%v to %v)", smp.at.Format(time.TimeOnly), stopped.Format(time.TimeOnly), readyAgain.Format(time.TimeOnly))
		}
		if smp.ready && smp.at.After(stopped.Add(notReady)) && smp.at.Before(restarted) {
			t.Errorf("/readyz 200 at %v while the broker was away", smp.at.Format(time.TimeOnly))
		}
	}
}
