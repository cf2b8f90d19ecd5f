package balance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/segmentio/kafka-go"
)

// member is a group member for the balancer tests: its topics and what it
// claims to own (topic → records/s).
type member struct {
	id    string
	subs  []string
	owned map[string]float64
}

func assignTopics(t *testing.T, members []member, topics map[string]int) map[string][]string {
	t.Helper()
	var gms []kafka.GroupMember
	for _, m := range members {
		ud, err := json.Marshal(balancerMeta{Owned: m.owned})
		if err != nil {
			t.Fatal(err)
		}
		gms = append(gms, kafka.GroupMember{ID: m.id, Topics: m.subs, UserData: ud})
	}
	var parts []kafka.Partition
	for _, topic := range slices.Sorted(maps.Keys(topics)) {
		for p := topics[topic] - 1; p >= 0; p-- {
			parts = append(parts, kafka.Partition{Topic: topic, ID: p})
		}
	}
	got := New().AssignGroups(gms, parts)
	out := map[string][]string{}
	for id, ts := range got {
		for topic, ps := range ts {
			if len(ps) != topics[topic] || !slices.IsSorted(ps) {
				t.Errorf("member %s got partitions %v of %s, want all %d in order", id, ps, topic, topics[topic])
			}
			out[id] = append(out[id], topic)
		}
		slices.Sort(out[id])
	}
	return out
}

func TestTopicBalancer(t *testing.T) {
	abc := []string{"a", "b", "c"}
	three := map[string]int{"a": 2, "b": 1, "c": 3}
	tests := []struct {
		name    string
		members []member
		topics  map[string]int
		want    map[string][]string
	}{
		{"one member takes all", []member{{"m1", abc, nil}}, three,
			map[string][]string{"m1": abc}},
		{"two fresh members: 2 + 1", []member{{"m1", abc, nil}, {"m2", abc, nil}}, three,
			map[string][]string{"m1": {"a", "c"}, "m2": {"b"}}},
		{"second joins the owner of all: it takes one", []member{{"m1", abc, map[string]float64{"a": 0, "b": 0, "c": 0}}, {"m0", abc, nil}}, three,
			map[string][]string{"m1": {"b", "c"}, "m0": {"a"}}},
		{"first joins after the second took all: 2 + 1 the other way", []member{{"m2", abc, map[string]float64{"a": 0, "b": 0, "c": 0}}, {"m1", abc, nil}}, three,
			map[string][]string{"m2": {"b", "c"}, "m1": {"a"}}},
		{"sticky: 2 + 1 stays", []member{{"m1", abc, map[string]float64{"b": 5}}, {"m2", abc, map[string]float64{"a": 5, "c": 5}}}, three,
			map[string][]string{"m1": {"b"}, "m2": {"a", "c"}}},
		{"third member takes one topic", []member{{"m1", abc, map[string]float64{"b": 5}}, {"m2", abc, map[string]float64{"a": 5, "c": 5}}, {"m3", abc, nil}}, three,
			map[string][]string{"m1": {"b"}, "m2": {"c"}, "m3": {"a"}}},
		{"a member leaves: its topics go to the others", []member{{"m1", abc, map[string]float64{"b": 5}}, {"m3", abc, map[string]float64{"a": 5}}}, three,
			map[string][]string{"m1": {"b", "c"}, "m3": {"a"}}},
		{"by load: the busy topic alone", []member{{"m1", abc, map[string]float64{"a": 1000, "b": 10, "c": 10}}, {"m2", abc, nil}}, three,
			map[string][]string{"m1": {"b", "c"}, "m2": {"a"}}},
		{"noise in the rates moves nothing", []member{{"m1", []string{"a", "b", "c", "d"}, map[string]float64{"a": 100, "b": 98}}, {"m2", []string{"a", "b", "c", "d"}, map[string]float64{"c": 101, "d": 95}}},
			map[string]int{"a": 1, "b": 1, "c": 1, "d": 1},
			map[string][]string{"m1": {"a", "b"}, "m2": {"c", "d"}}},
		{"subscriptions respected", []member{{"m1", []string{"a", "b"}, nil}, {"m2", []string{"c"}, nil}}, three,
			map[string][]string{"m1": {"a", "b"}, "m2": {"c"}}},
		{"a topic claimed twice goes to the lowest id", []member{{"m2", abc, map[string]float64{"a": 1}}, {"m1", abc, map[string]float64{"a": 1}}}, map[string]int{"a": 1},
			map[string][]string{"m1": {"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assignTopics(t, tt.members, tt.topics)
			for _, m := range tt.members {
				if !slices.Equal(got[m.id], tt.want[m.id]) {
					t.Errorf("%s got %v, want %v (all: %v)", m.id, got[m.id], tt.want[m.id], got)
				}
			}
		})
	}
}

// TestTopicBalancerCounts checks the balance by count for N members and M
// topics with no rates known, built up by members joining one at a time
// (each generation sticky on the previous one): every member holds
// floor(M/N) or ceil(M/N) topics, and a join moves only the topics the
// newcomer takes.
func TestTopicBalancerCounts(t *testing.T) {
	for _, mTopics := range []int{1, 3, 7, 12} {
		topics := map[string]int{}
		var names []string
		for i := range mTopics {
			name := fmt.Sprintf("t%02d", i)
			topics[name] = 1
			names = append(names, name)
		}
		var members []member
		prev := map[string]string{} // topic → owner
		for n := 1; n <= 5; n++ {
			for i := range members {
				members[i].owned = map[string]float64{}
				for topic, id := range prev {
					if id == members[i].id {
						members[i].owned[topic] = 0
					}
				}
			}
			members = append(members, member{id: fmt.Sprintf("m%d", 6-n), subs: names}) // ids not in join order
			got := assignTopics(t, members, topics)
			owner := map[string]string{}
			for id, ts := range got {
				if len(ts) < mTopics/n || len(ts) > (mTopics+n-1)/n {
					t.Errorf("M=%d N=%d: %s holds %d topics", mTopics, n, id, len(ts))
				}
				for _, topic := range ts {
					owner[topic] = id
				}
			}
			newcomer := members[len(members)-1].id
			for topic, id := range owner {
				if was, ok := prev[topic]; ok && was != id && id != newcomer {
					t.Errorf("M=%d N=%d: %s moved from %s to %s, not to the newcomer", mTopics, n, topic, was, id)
				}
			}
			if len(owner) != mTopics {
				t.Errorf("M=%d N=%d: %d topics assigned", mTopics, n, len(owner))
			}
			prev = owner
		}
	}
}
