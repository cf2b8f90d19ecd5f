package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// Committed returns group's committed offset of partition 0 of topic on
// the broker at addr, or -1 when there is none or the broker cannot say.
func Committed(t testing.TB, addr, group, topic string) int64 {
	t.Helper()
	return CommittedTotal(t, addr, group, topic, 1)
}

// CommittedTotal returns the sum of group's committed offsets of the
// partitions 0 to parts-1 of topic, or -1 when one of them has none or
// the broker cannot say.
func CommittedTotal(t testing.TB, addr, group, topic string, parts int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps := make([]int, parts)
	for i := range ps {
		ps[i] = i
	}
	c := &kafka.Client{Addr: kafka.TCP(addr)}
	res, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil || res.Error != nil || len(res.Topics[topic]) != parts {
		return -1
	}
	var sum int64
	for _, p := range res.Topics[topic] {
		if p.Error != nil || p.CommittedOffset < 0 {
			return -1
		}
		sum += p.CommittedOffset
	}
	return sum
}
