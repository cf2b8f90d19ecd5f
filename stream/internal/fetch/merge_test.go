package fetch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestMerger runs the merger's transitions (see its doc) as scenarios:
// steps push a record ("p0@5/3": partition 0, time 5 ms, offset 3), mark a
// partition ("mark p1 up@300": caught up, back at 300 ms; "mark p1 behind")
// or pop at a time ("next@300"); want lists the records popped, in order.
// testMaxBuffered is a bound the scenarios never reach.
const testMaxBuffered = 1 << 16

func TestMerger(t *testing.T) {
	t.Parallel()
	base := time.Unix(1000, 0)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name  string
		parts []int
		steps []string
		want  string
	}{
		{"one partition: offset order", []int{0},
			[]string{"p0@5/0", "p0@1/1", "next@10", "next@10"}, "p0@5/0 p0@1/1"},
		{"backlog merged by time, not by fetch", []int{0, 1},
			[]string{"p1@1/0", "p1@2/1", "p1@9/2", "p0@3/0", "p0@4/1", "next@10", "next@10", "next@10", "next@10", "next@10"},
			"p1@1/0 p1@2/1 p0@3/0 p0@4/1"},
		{"same time: partition, then offset", []int{0, 1},
			[]string{"p1@5/7", "p0@5/9", "p1@5/8", "next@10", "next@10", "mark p0 up@300", "next@300", "next@300"}, "p0@5/9 p1@5/7 p1@5/8"},
		{"an empty partition still fetching holds back", []int{0, 1},
			[]string{"p0@5/0", "next@10"}, ""},
		{"an empty partition caught up too early holds back", []int{0, 1},
			[]string{"mark p1 up@100", "p0@5/0", "next@200"}, ""},
		{"an empty partition caught up after the grace lets go", []int{0, 1},
			[]string{"p0@5/0", "mark p1 up@300", "next@300"}, "p0@5/0"},
		{"behind again after a mark", []int{0, 1},
			[]string{"mark p1 up@300", "mark p1 behind@300", "p0@5/0", "next@400"}, ""},
		{"a record waits at most mergeMaxHold", []int{0, 1},
			[]string{"p0@5/0", "next@6000", "next@6300"}, "p0@5/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewMerger(tt.parts, testMaxBuffered)
			var got []string
			at := func(s string) time.Time {
				var n int
				if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
					t.Fatalf("bad time %q", s)
				}
				return ms(n)
			}
			for _, st := range tt.steps {
				switch {
				case strings.HasPrefix(st, "next@"):
					if msg, ok := g.Next(at(st[5:])); ok {
						got = append(got, fmt.Sprintf("p%d@%d/%d", msg.Partition, msg.Time.Sub(base).Milliseconds(), msg.Offset))
					}
				case strings.HasPrefix(st, "mark "):
					var p int
					var state, when string
					fmt.Sscanf(st, "mark p%d %s", &p, &state)
					state, when, _ = strings.Cut(state, "@")
					g.mark(p, state == "up", at(when))
				default:
					var p, tm int
					var off int64
					if _, err := fmt.Sscanf(st, "p%d@%d/%d", &p, &tm, &off); err != nil {
						t.Fatalf("bad step %q", st)
					}
					g.push(p, []kafka.Message{{Partition: p, Time: ms(tm), Offset: off}}, ms(tm))
				}
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("popped %q, want %q", s, tt.want)
			}
		})
	}
}

// TestMergerMaxBuffered forces the bound on held records: past
// NewMerger's maxBuffered the oldest goes although a partition may be behind.
func TestMergerMaxBuffered(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	g := NewMerger([]int{0, 1}, 3)
	g.push(0, []kafka.Message{{Partition: 0, Offset: 0, Time: now}, {Partition: 0, Offset: 1, Time: now}}, now)
	g.push(0, []kafka.Message{{Partition: 0, Offset: 2, Time: now}}, now)
	if _, ok := g.Next(now); ok {
		t.Fatal("released at the bound")
	}
	g.push(0, []kafka.Message{{Partition: 0, Offset: 3, Time: now}}, now)
	for want := range int64(4) {
		if msg, ok := g.Next(now); !ok || msg.Offset != want {
			t.Fatalf("past the bound: got %v %v, want offset %d", msg, ok, want)
		}
		if want == 0 {
			// Back at the bound: the rest waits for partition 1.
			if _, ok := g.Next(now); ok {
				t.Fatal("released at the bound after one went")
			}
			g.push(1, []kafka.Message{{Partition: 1, Offset: 0, Time: now.Add(time.Hour)}}, now)
		}
	}
}

// TestMergerTake runs what the consumer hands the merger (take: a fetcher's
// records or mark, taken at a time) as scenarios. The first replays a
// TestBrokerOutage failure: the consumer stalled 15 s in an offset commit
// after the outage while partition 0's mark (its fetch back at 5803 ms)
// waited in the channel, in front of both partitions' next records
// (stamped alike, 5850 ms); taken as of 20800 ms, that mark let partition
// 1's record overtake partition 0's.
func TestMergerTake(t *testing.T) {
	t.Parallel()
	base := time.Unix(1000, 0)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		f  *Fetched // taken at at; nil: Next(at)
		at int
	}
	rec := func(p, tm int, off int64, at int) step {
		return step{f: &Fetched{TP: TopicPartition{"t", p}, Msgs: []kafka.Message{{Partition: p, Time: ms(tm), Offset: off}}}, at: at}
	}
	mark := func(p, back, at int) step {
		return step{f: &Fetched{TP: TopicPartition{"t", p}, Mark: true, CaughtUp: true, Back: ms(back)}, at: at}
	}
	next := func(at int) step { return step{at: at} }
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"a mark taken late counts as of its fetch", []step{
			rec(1, 0, 500, 5800), mark(1, 5800, 5800),
			rec(0, 0, 500, 5803), next(5803), next(5803), // p1 waits for p0's mark
			mark(0, 5803, 20800), next(20800), // the stall: p0 caught up at 5803
			rec(1, 5850, 1000, 20800), mark(1, 5852, 20800), next(20800), // p0 may get 5850 yet
			rec(0, 5850, 1000, 20801), next(20801), next(20801),
			mark(0, 5855, 20802), next(20802), // back too soon after 5850
			mark(0, 6110, 20802), next(20802),
		}, "p0@0/500 p1@0/500 p0@5850/1000 p1@5850/1000"},
		{"a mark taken at once", []step{
			rec(1, 0, 0, 10), mark(1, 10, 10), mark(0, 260, 260), next(260),
		}, "p1@0/0"},
		{"a record taken late waits from when it was taken", []step{
			rec(0, 0, 0, 20000), next(20100), next(26200), next(26300),
		}, "p0@0/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewMerger([]int{0, 1}, testMaxBuffered)
			var got []string
			for _, st := range tt.steps {
				if st.f != nil {
					g.Take(*st.f, ms(st.at))
					continue
				}
				if msg, ok := g.Next(ms(st.at)); ok {
					got = append(got, fmt.Sprintf("p%d@%d/%d", msg.Partition, msg.Time.Sub(base).Milliseconds(), msg.Offset))
				}
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("popped %q, want %q", s, tt.want)
			}
		})
	}
}
