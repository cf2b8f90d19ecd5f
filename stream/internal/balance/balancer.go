// Package balance is the consumer group's balancer: which member gets which
// topic (all of a topic's partitions together, spread by load, sticky across
// rebalances). It is kafka-go's GroupBalancer, run by the group leader on the
// members' join metadata, and reads nothing of the monitor but the rates the
// consumer reports (Consumed) and the topics it owns (SetOwned); it is a
// package of its own so that the assignment rules can be read and tested
// without the stream around them.
package balance

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Balancer is the consumer group balancer of docs/DESIGN.md
// "Scale-out". A window needs the whole stream, so all partitions of a
// topic go to one member. Topics spread over the members by load, and stay where they are
// across rebalances unless moving one makes the busiest member markedly
// less busy:
//
//  1. Sticky: a topic stays with the member that owned it in the previous
//     generation (each member reports what it owns in its join metadata;
//     when two claim a topic, the lowest member id keeps it).
//  2. Orphans: the topics nobody owns (new, or their member left or
//     crashed) go, heaviest first, to the least loaded member subscribed
//     to them.
//  3. Balance: while moving one topic from a member to a less loaded one
//     lowers the higher of the two loads by at least rebalanceMinGain of
//     it, the best such move is made (the largest gain, from the most
//     loaded member, to the least loaded one).
//
// A topic's load is its records/s (reported by its owner: the rate at which
// its committed offsets advanced since it got the topic) plus the mean rate
// of all topics, a fixed cost per topic (each has a window to keep and
// evaluate). Rates unknown (a topic nobody owned) count as the mean; with no
// rate known at all every topic weighs the same, and the balance is by
// count: three topics on two members are always 2 + 1, whatever the join
// order. With N members and M topics each member gets about M/N topics (by
// load); a member joining takes topics only from members above the balance
// (about M/(N+1) of them move), a member leaving hands only its own topics
// to the others. Everything is decided by the group leader from the
// members' metadata, deterministically (ties by topic name and member id).
//
// Who touches it: the consume goroutine (SetOwned at each generation,
// Consumed as its batches are stored) and kafka-go's consumer group goroutine
// (UserData when joining, AssignGroups on the leader). mu guards owned;
// the assignment itself reads only its arguments.
type Balancer struct {
	mu    sync.Mutex
	owned map[string]*topicRate
}

// topicRate measures the records/s of a topic this member owns.
type topicRate struct {
	since   time.Time
	records int64
}

// rebalanceMinGain is the least relative gain on the busier member's load
// for which a balanced topic moves: smaller moves would chase noise in the
// rates and move windows for nothing.
var rebalanceMinGain = 0.05

// balancerMeta is a member's join metadata (GroupMember.UserData, JSON).
type balancerMeta struct {
	// Owned maps the topics the member owns to their records/s.
	Owned map[string]float64 `json:"owned,omitempty"`
}

// New returns a balancer of a member that owns no topic yet.
func New() *Balancer { return &Balancer{owned: map[string]*topicRate{}} }

// ProtocolName is unchanged from the earlier oldest-member balancer, whose
// metadata this one reads as "owns nothing", so that a rolling upgrade does
// not split the group.
func (b *Balancer) ProtocolName() string { return "odwatch-topic" }

// UserData reports the topics this member owns and their rates.
func (b *Balancer) UserData() ([]byte, error) {
	b.mu.Lock()
	meta := balancerMeta{Owned: make(map[string]float64, len(b.owned))}
	now := time.Now()
	for t, r := range b.owned {
		rate := 0.0
		if d := now.Sub(r.since).Seconds(); d > 0 {
			rate = float64(r.records) / d
		}
		meta.Owned[t] = rate
	}
	b.mu.Unlock()
	return json.Marshal(meta)
}

// SetOwned records the topics of a new generation; the rates of the topics
// kept go on.
func (b *Balancer) SetOwned(topics []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	owned := make(map[string]*topicRate, len(topics))
	now := time.Now()
	for _, t := range topics {
		if r := b.owned[t]; r != nil {
			owned[t] = r
		} else {
			owned[t] = &topicRate{since: now}
		}
	}
	b.owned = owned
}

// Consumed counts records consumed from topic.
func (b *Balancer) Consumed(topic string, n int) {
	b.mu.Lock()
	if r := b.owned[topic]; r != nil {
		r.records += int64(n)
	}
	b.mu.Unlock()
}

// AssignGroups is run by the group leader.
func (b *Balancer) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	byTopic := map[string][]int{}
	for _, p := range partitions {
		byTopic[p.Topic] = append(byTopic[p.Topic], p.ID)
	}
	subs := make(map[string]map[string]bool, len(members))
	claims := make(map[string]map[string]float64, len(members))
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.ID)
		subs[m.ID] = map[string]bool{}
		for _, t := range m.Topics {
			subs[m.ID][t] = true
		}
		var meta balancerMeta
		if json.Unmarshal(m.UserData, &meta) == nil {
			claims[m.ID] = meta.Owned
		}
	}
	slices.Sort(ids)
	owner := balanceTopics(ids, subs, claims, slices.Sorted(maps.Keys(byTopic)))
	out := kafka.GroupMemberAssignments{}
	for _, id := range ids {
		out[id] = map[string][]int{}
	}
	for t, id := range owner {
		ps := slices.Clone(byTopic[t])
		slices.Sort(ps)
		out[id][t] = ps
	}
	return out
}

// balanceTopics is the assignment of Balancer: members (sorted ids),
// the topics each subscribes to, the topics each claims with their rates,
// and the topics (sorted). It returns topic → member, in three steps:
// sticky claims, orphans to the least loaded, then moves that balance.
func balanceTopics(ids []string, subs map[string]map[string]bool, claims map[string]map[string]float64, topics []string) map[string]string {
	a := &topicAssignment{ids: ids, subs: subs, topics: topics, weight: topicWeights(ids, claims, topics),
		owner: map[string]string{}, load: map[string]float64{}, count: map[string]int{}}
	a.sticky(claims)
	a.orphans()
	a.balance()
	return a.owner
}

// topicWeights weighs each topic by its rate plus the mean rate (the
// highest rate any member claims it with); a topic no member claims counts
// as the mean, and when nothing is known (or all is idle) every topic
// weighs 1, which balances by count.
func topicWeights(ids []string, claims map[string]map[string]float64, topics []string) map[string]float64 {
	rate := map[string]float64{}
	for _, id := range ids {
		for t, r := range claims[id] {
			rate[t] = max(rate[t], r)
		}
	}
	var sum float64
	known := 0
	for _, t := range topics {
		if r, ok := rate[t]; ok {
			sum += r
			known++
		}
	}
	mean := 0.0
	if known > 0 {
		mean = sum / float64(known)
	}
	weight := map[string]float64{}
	for _, t := range topics {
		r, ok := rate[t]
		if !ok {
			r = mean
		}
		weight[t] = r + mean
		if mean == 0 {
			weight[t] = 1
		}
	}
	return weight
}

// topicAssignment is balanceTopics' state: each topic's owner, and each
// member's load (the weights of its topics) and topic count.
type topicAssignment struct {
	ids    []string
	subs   map[string]map[string]bool
	topics []string
	weight map[string]float64
	owner  map[string]string
	load   map[string]float64
	count  map[string]int
}

// give moves topic t to member id.
func (a *topicAssignment) give(t, id string) {
	if prev, ok := a.owner[t]; ok {
		a.load[prev] -= a.weight[t]
		a.count[prev]--
	}
	a.owner[t] = id
	a.load[id] += a.weight[t]
	a.count[id]++
}

// sticky gives each topic to the first member (by id) that claims it and
// still subscribes to it.
func (a *topicAssignment) sticky(claims map[string]map[string]float64) {
	for _, t := range a.topics {
		for _, id := range a.ids {
			if _, claimed := claims[id][t]; claimed && a.subs[id][t] {
				a.give(t, id)
				break
			}
		}
	}
}

// orphans gives the topics nobody kept, heaviest first, each to the least
// loaded subscriber (then the fewest topics, then the lowest id).
func (a *topicAssignment) orphans() {
	orphans := slices.DeleteFunc(slices.Clone(a.topics), func(t string) bool { _, ok := a.owner[t]; return ok })
	slices.SortStableFunc(orphans, func(x, y string) int { return cmp.Compare(a.weight[y], a.weight[x]) })
	lighter := func(x, y string) bool {
		return a.load[x] < a.load[y] || (a.load[x] == a.load[y] && (a.count[x] < a.count[y] || (a.count[x] == a.count[y] && x < y)))
	}
	for _, t := range orphans {
		best := ""
		for _, id := range a.ids {
			if a.subs[id][t] && (best == "" || lighter(id, best)) {
				best = id
			}
		}
		if best != "" {
			a.give(t, best)
		}
	}
}

// balance moves topics while a move lowers the most loaded side by at least
// rebalanceMinGain of its load: each move lowers the sum of squared loads,
// so this ends; the bound is a safeguard.
func (a *topicAssignment) balance() {
	for range len(a.topics)*len(a.ids) + 1 {
		t, to := a.bestMove()
		if t == "" {
			return
		}
		a.give(t, to)
	}
}

// bestMove is the move with the largest gain; among equal ones, from the
// most loaded member to the least loaded one (a newcomer), so that members
// already balanced do not trade topics. t is "" when no move gains enough.
func (a *topicAssignment) bestMove() (t, to string) {
	var bestFrom string
	bestGain := 0.0
	for _, topic := range a.topics {
		from, ok := a.owner[topic]
		if !ok {
			continue
		}
		w := a.weight[topic]
		for _, id := range a.ids {
			if id == from || !a.subs[id][topic] || a.load[id]+w >= a.load[from] {
				continue
			}
			gain := a.load[from] - max(a.load[from]-w, a.load[id]+w)
			if gain < rebalanceMinGain*a.load[from] {
				continue
			}
			if better(gain, bestGain, a.load[from], a.load[bestFrom], a.load[to], a.load[id]) {
				t, bestFrom, to, bestGain = topic, from, id, gain
			}
		}
	}
	return t, to
}

// better orders candidate moves: each pair of arguments compares the
// candidate with the best so far, the first pair that differs decides.
func better(pairs ...float64) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if d := pairs[i] - pairs[i+1]; d > 1e-9 {
			return true
		} else if d < -1e-9 {
			return false
		}
	}
	return false
}

// Topics are the topics this member owns, sorted.
func (b *Balancer) Topics() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.owned))
}
