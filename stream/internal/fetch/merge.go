package fetch

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// Merging of a topic's partitions (see Merger).
var (
	// mergeGrace is how long after a record's time another partition's
	// fetch must have come back empty before the record goes ahead of
	// whatever that partition may still get: the producer's batching and
	// the network's delay, for records stamped at the same time.
	mergeGrace = 250 * time.Millisecond
	// mergeMaxHold bounds how long a record waits for the other
	// partitions (clocks apart, or a broker that stopped answering): a
	// fetch's wait and time-out and a retry, so that a fetch sent just
	// before a broker hung and left unanswered does not break the order.
	mergeMaxHold = MaxWait + fetchTimeout + time.Second
)

// Merger hands the records of a topic's partitions to the window in the
// window's order (record time, then partition, then offset),
// whatever order the partitions' fetches return them in, so that a backlog
// is merged by time instead of drained one partition after the other, and
// live records stamped alike are ordered alike by every member. Records of
// one partition keep their offset order.
//
// Transitions, per partition: push(records) queues them and clears
// caughtUp; mark(caughtUp, back) records what the partition's last fetch said
// and when it came back. Next(now) pops the smallest head r when every
// partition with nothing queued is caught up as of a fetch that came back at
// least mergeGrace after r's time; or when r waited mergeMaxHold; or when
// more than maxBuffered records wait (NewMerger's bound on the records held
// back for one topic: past it, one partition far slower to fetch than the
// others, the oldest record goes anyway, out of the window's order rather
// than out of memory). Take hands over what a fetcher
// sent: records as pushed when taken (a record waits from then), a mark as
// of its fetch's return, never as of when it is taken: a consumer that
// stalled (an offset commit on a hung connection) takes a mark long after
// its fetch, and by then the partition may have newer records waiting
// behind it in the fetchers' channel, which must not be overtaken.
//
// Records are queued in the chunks the fetchers hand over and popped in
// place: a record is never copied, and a chunk is dropped whole once popped.
type Merger struct {
	parts       map[int]*mergeQueue
	queues      []*mergeQueue // parts' values, for Next's scans
	buffered    int
	maxBuffered int
}

type mergeQueue struct {
	chunks   []mergeChunk // oldest first; the head is chunks[0].msgs[head]
	head     int
	caughtUp bool
	markedAt time.Time // when the fetch of the last mark came back
}

// mergeChunk is records of one partition in offset order, pushed at at.
type mergeChunk struct {
	msgs []kafka.Message
	at   time.Time
}

// NewMerger returns a merger of the given partitions that holds back at
// most maxBuffered records.
func NewMerger(partitions []int, maxBuffered int) *Merger {
	g := &Merger{parts: make(map[int]*mergeQueue, len(partitions)), maxBuffered: maxBuffered}
	for _, p := range partitions {
		g.queue(p)
	}
	return g
}

func (g *Merger) queue(p int) *mergeQueue {
	q := g.parts[p]
	if q == nil {
		q = &mergeQueue{}
		g.parts[p] = q
		g.queues = append(g.queues, q)
	}
	return q
}

// empty reports whether q holds no record.
func (q *mergeQueue) empty() bool { return len(q.chunks) == 0 }

// push queues records of partition p (in offset order), fetched at now.
// The merger keeps msgs: the caller must not modify them afterwards.
func (g *Merger) push(p int, msgs []kafka.Message, now time.Time) {
	if len(msgs) == 0 {
		return
	}
	q := g.queue(p)
	q.chunks = append(q.chunks, mergeChunk{msgs, now})
	q.caughtUp = false
	g.buffered += len(msgs)
}

// mark records whether partition p's last fetch, which came back at back,
// reached its high watermark.
func (g *Merger) mark(p int, caughtUp bool, back time.Time) {
	q := g.queue(p)
	q.caughtUp, q.markedAt = caughtUp, back
}

// Take hands over what a fetcher sent, taken at now: records are pushed at
// now, a mark is recorded as of f.Back.
func (g *Merger) Take(f Fetched, now time.Time) {
	if f.Mark {
		g.mark(f.TP.Partition, f.CaughtUp, f.Back)
		return
	}
	g.push(f.TP.Partition, f.Msgs, now)
}

// Next returns the next record in the window's order, if one may go at now.
// The record stays valid after later calls (the merger never reuses it).
func (g *Merger) Next(now time.Time) (*kafka.Message, bool) {
	var (
		best *mergeQueue
		msg  *kafka.Message
	)
	for _, q := range g.queues {
		if q.empty() {
			continue
		}
		if h := &q.chunks[0].msgs[q.head]; best == nil || mergeBefore(h, msg) {
			best, msg = q, h
		}
	}
	if best == nil {
		return nil, false
	}
	if g.buffered <= g.maxBuffered && now.Sub(best.chunks[0].at) < mergeMaxHold {
		for _, q := range g.queues {
			if q.empty() && (!q.caughtUp || q.markedAt.Before(msg.Time.Add(mergeGrace))) {
				return nil, false // it may get an older record yet
			}
		}
	}
	best.head++
	if best.head == len(best.chunks[0].msgs) {
		best.chunks[0] = mergeChunk{}
		best.chunks, best.head = best.chunks[1:], 0
		if len(best.chunks) == 0 {
			best.chunks = nil
		}
	}
	g.buffered--
	return msg, true
}

// mergeBefore is the window's order on fetched records.
func mergeBefore(a, b *kafka.Message) bool {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c < 0
	}
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Offset < b.Offset
}
