package state

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The status page's history: per stream, a ring of observations per rule
// and a ring of events, so that its charts and timelines survive a restart.
// Both are bounded by their ring sizes whatever the stream does: slot i of
// a ring is overwritten by the append that comes ring-size appends later,
// and a rule's ring is deleted when the rule is dropped (retired).
const (
	pfxRuleRing  = "r/"
	pfxEventRing = "l/"
	pfxRingHead  = "q/"
)

// RulePoint is one observation of one rule in one evaluated window.
type RulePoint struct {
	DependencyID string
	WindowEnd    uint64 // seq of the last record of the evaluated window
	Time         time.Time
	Error        float64
	Removals     int
	Records      int
	Violated     bool // the rule's state after this window
}

// HistoryAppend is what one evaluation adds to the status history.
type HistoryAppend struct {
	Stream    string
	WindowEnd uint64
	// Rules are the observations of this evaluation, one per rule.
	Rules []RulePoint
	// Events are opaque event payloads (package stream writes JSON), in
	// the order they happened.
	Events [][]byte
	// Drop lists rules whose ring is deleted (retired rules).
	Drop []string
	// RuleRing and EventRing are the ring sizes (> 0).
	RuleRing, EventRing int
	// Again: more events of the window appended last (a discovery merged
	// on it after its check): Events are added, Rules ignored.
	Again bool
}

// ringHead is the q/<stream> value: appends so far (the rule rings' next
// slot), events so far (the event ring's next slot), and one past the
// last window end appended (0 = none).
type ringHead struct {
	appends, events, nextEnd uint64
}

func ringHeadKey(stream string) []byte { return append([]byte(pfxRingHead), stream...) }

func ruleRingPrefix(stream, dep string) []byte {
	b := streamPrefix(pfxRuleRing, stream)
	b = append(b, dep...)
	return append(b, 0)
}

// AppendHistory adds one evaluation to the stream's status history, in one
// batch. An evaluation at or below a window end already appended (a replay
// after a crash) is skipped and reported false, but the events of one
// marked Again at the last window end appended. The batch is not synced: a
// crash of the machine may lose the last appends, which only costs chart
// points; a crash of the process loses nothing (Pebble's WAL is written).
func (s *Store) AppendHistory(h *HistoryAppend) (bool, error) {
	release, err := s.acquireStream("append history", h.Stream)
	if err != nil {
		return false, err
	}
	defer release()
	if h.RuleRing <= 0 || h.EventRing <= 0 {
		return false, fmt.Errorf("state: append history %s: %w: ring sizes %d, %d", h.Stream, ErrInvalid, h.RuleRing, h.EventRing)
	}
	for _, id := range h.Drop {
		if err := checkName("dependency id", id); err != nil {
			return false, fmt.Errorf("state: append history %s: %w", h.Stream, err)
		}
	}
	for i := range h.Rules {
		if err := checkName("dependency id", h.Rules[i].DependencyID); err != nil {
			return false, fmt.Errorf("state: append history %s: %w", h.Stream, err)
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	head, err := s.ringHead(h.Stream)
	if err != nil {
		return false, err
	}
	again := h.Again && head.nextEnd == h.WindowEnd+1
	if head.nextEnd > h.WindowEnd && !again {
		return false, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, id := range h.Drop {
		p := ruleRingPrefix(h.Stream, id)
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return false, fmt.Errorf("state: append history %s: %w", h.Stream, err)
		}
	}
	slot := uint32(head.appends % uint64(h.RuleRing))
	var v []byte
	for i := range h.Rules {
		if again {
			break
		}
		p := &h.Rules[i]
		v = encodeRulePoint(v[:0], p)
		if err := b.Set(binary.BigEndian.AppendUint32(ruleRingPrefix(h.Stream, p.DependencyID), slot), v, nil); err != nil {
			return false, fmt.Errorf("state: append history %s: %w", h.Stream, err)
		}
	}
	for _, payload := range h.Events {
		k := binary.BigEndian.AppendUint32(streamPrefix(pfxEventRing, h.Stream), uint32(head.events%uint64(h.EventRing)))
		v = binary.BigEndian.AppendUint64(v[:0], head.events)
		v = append(v, payload...)
		if err := b.Set(k, v, nil); err != nil {
			return false, fmt.Errorf("state: append history %s: %w", h.Stream, err)
		}
		head.events++
	}
	if !again {
		head.appends++
		head.nextEnd = h.WindowEnd + 1
	}
	hv := binary.BigEndian.AppendUint64(nil, head.appends)
	hv = binary.BigEndian.AppendUint64(hv, head.events)
	hv = binary.BigEndian.AppendUint64(hv, head.nextEnd)
	if err := b.Set(ringHeadKey(h.Stream), hv, nil); err != nil {
		return false, fmt.Errorf("state: append history %s: %w", h.Stream, err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return false, fmt.Errorf("state: append history %s: commit to %s: %w", h.Stream, s.dir, err)
	}
	return true, nil
}

func (s *Store) ringHead(stream string) (ringHead, error) {
	v, ok, err := s.get(ringHeadKey(stream))
	if err != nil || !ok {
		return ringHead{}, err
	}
	if len(v) != 24 {
		return ringHead{}, fmt.Errorf("state %s: ring head of %s: %w", s.dir, stream, ErrCorrupt)
	}
	return ringHead{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), binary.BigEndian.Uint64(v[16:])}, nil
}

// encodeRulePoint: window end BE8, time BE8, error bits BE8, uvarint
// removals, uvarint records, flags (1 = violated).
func encodeRulePoint(b []byte, p *RulePoint) []byte {
	b = binary.BigEndian.AppendUint64(b, p.WindowEnd)
	b = appendTime(b, p.Time)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Error))
	b = binary.AppendUvarint(b, uint64(max(p.Removals, 0)))
	b = binary.AppendUvarint(b, uint64(max(p.Records, 0)))
	var flags byte
	if p.Violated {
		flags = 1
	}
	return append(b, flags)
}

func decodeRulePoint(v []byte, p *RulePoint) bool {
	if len(v) < 24+3 {
		return false
	}
	p.WindowEnd = binary.BigEndian.Uint64(v)
	p.Time = decodeTime(v[8:])
	p.Error = math.Float64frombits(binary.BigEndian.Uint64(v[16:]))
	v = v[24:]
	rem, n := binary.Uvarint(v)
	if n <= 0 {
		return false
	}
	v = v[n:]
	recs, n := binary.Uvarint(v)
	if n <= 0 || len(v) != n+1 {
		return false
	}
	p.Removals, p.Records, p.Violated = int(rem), int(recs), v[n]&1 != 0
	return true
}

// RuleHistory returns the stored observations of one rule of stream,
// oldest first.
func (s *Store) RuleHistory(stream, dependencyID string) ([]RulePoint, error) {
	release, err := s.acquireStream("rule history", stream)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := checkName("dependency id", dependencyID); err != nil {
		return nil, fmt.Errorf("state: rule history: %w", err)
	}
	lower := ruleRingPrefix(stream, dependencyID)
	var out []RulePoint
	err = s.scanPrefix(context.Background(), lower, prefixEnd(lower), func(k, v []byte) error {
		p := RulePoint{DependencyID: dependencyID}
		if len(k) != len(lower)+4 || !decodeRulePoint(v, &p) {
			return fmt.Errorf("state %s: rule history %q: %w", s.dir, k, ErrCorrupt)
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b RulePoint) int { return cmp.Compare(a.WindowEnd, b.WindowEnd) })
	return out, nil
}

// EventHistory returns the stored event payloads of stream, oldest first.
func (s *Store) EventHistory(stream string) ([][]byte, error) {
	release, err := s.acquireStream("event history", stream)
	if err != nil {
		return nil, err
	}
	defer release()
	lower := streamPrefix(pfxEventRing, stream)
	type stored struct {
		seq     uint64
		payload []byte
	}
	var all []stored
	err = s.scanPrefix(context.Background(), lower, prefixEnd(lower), func(k, v []byte) error {
		if len(k) != len(lower)+4 || len(v) < 8 {
			return fmt.Errorf("state %s: event history %q: %w", s.dir, k, ErrCorrupt)
		}
		all = append(all, stored{binary.BigEndian.Uint64(v), slices.Clone(v[8:])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b stored) int { return cmp.Compare(a.seq, b.seq) })
	out := make([][]byte, len(all))
	for i := range all {
		out[i] = all[i].payload
	}
	return out, nil
}
