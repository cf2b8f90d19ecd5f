package stream

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// Merging of a topic's partitions (see merger).
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
	mergeMaxHold = fetchMaxWait + fetchTimeout + time.Second
	// mergeMaxBuffered bounds the records a merger holds back for one
	// topic: past it (one partition far slower to fetch than the others)
	// the oldest record goes anyway, out of the window's order rather than
	// out of memory.
	mergeMaxBuffered = 4 * maxBatch
)

// merger hands the records of a topic's partitions to the window in the
// window's order (windowOrder: record time, then partition, then offset),
// whatever order the partitions' fetches return them in, so that a backlog
// is merged by time instead of drained one partition after the other, and
// live records stamped alike are ordered alike by every member. Records of
// one partition keep their offset order.
//
// Transitions, per partition: push(record) queues it and clears caughtUp;
// mark(caughtUp, at) records what the partition's last fetch said and when
// it came back. next(now) pops the smallest head r when every partition
// with nothing queued is caught up as of a fetch that came back at least
// mergeGrace after r's time; or when r waited mergeMaxHold; or when more
// than mergeMaxBuffered records wait.
type merger struct {
	parts    map[int]*mergeQueue
	buffered int
}

type mergeQueue struct {
	msgs     []mergeItem
	head     int
	caughtUp bool
	markedAt time.Time
}

type mergeItem struct {
	msg kafka.Message
	at  time.Time // when it was pushed
}

func newMerger(partitions []int) *merger {
	g := &merger{parts: make(map[int]*mergeQueue, len(partitions))}
	for _, p := range partitions {
		g.parts[p] = &mergeQueue{}
	}
	return g
}

func (g *merger) queue(p int) *mergeQueue {
	q := g.parts[p]
	if q == nil {
		q = &mergeQueue{}
		g.parts[p] = q
	}
	return q
}

// push queues a fetched record of its partition, fetched at now.
func (g *merger) push(msg kafka.Message, now time.Time) {
	q := g.queue(msg.Partition)
	q.msgs = append(q.msgs, mergeItem{msg, now})
	q.caughtUp = false
	g.buffered++
}

// mark records whether partition p's last fetch, back at now, reached its
// high watermark.
func (g *merger) mark(p int, caughtUp bool, now time.Time) {
	q := g.queue(p)
	q.caughtUp, q.markedAt = caughtUp, now
}

// next returns the next record in the window's order, if one may go at now.
func (g *merger) next(now time.Time) (kafka.Message, bool) {
	var best *mergeQueue
	for _, q := range g.parts {
		if q.head < len(q.msgs) && (best == nil || mergeBefore(&q.msgs[q.head].msg, &best.msgs[best.head].msg)) {
			best = q
		}
	}
	if best == nil {
		return kafka.Message{}, false
	}
	it := &best.msgs[best.head]
	if g.buffered <= mergeMaxBuffered && now.Sub(it.at) < mergeMaxHold {
		for _, q := range g.parts {
			if q.head == len(q.msgs) && (!q.caughtUp || q.markedAt.Before(it.msg.Time.Add(mergeGrace))) {
				return kafka.Message{}, false // it may get an older record yet
			}
		}
	}
	msg := it.msg
	*it = mergeItem{}
	best.head++
	if best.head == len(best.msgs) {
		best.msgs, best.head = best.msgs[:0], 0
	}
	g.buffered--
	return msg, true
}

// mergeBefore is windowOrder on fetched records.
func mergeBefore(a, b *kafka.Message) bool {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c < 0
	}
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Offset < b.Offset
}
