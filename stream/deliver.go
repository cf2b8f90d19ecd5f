package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/backoff"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/segmentio/kafka-go"
)

// Delivery retries: events a sink failed to take stay in the outbox and are
// sent again on a timer, from defaultRetryBase doubling up to maxRetryDelay
// while deliveries keep failing, besides after every evaluation.
const (
	defaultRetryBase = 5 * time.Second
	maxRetryDelay    = time.Minute
)

// delivery sends a stream's outbox events to the sinks and sends again,
// on a timer of its own, what they failed to take. It runs on the
// evaluator goroutine (after each save, and when its timer fires: the
// evaluator's loop waits on retries), and on Run's before the evaluator
// starts (the outbox left by the last run); it reads only the store and
// the monitor's sinks.
type delivery struct {
	*streamBase
	// undelivered is the number of outbox events some sink has not taken
	// yet, after the last delivery.
	undelivered int
	timer       *time.Timer
	armed       bool
	wait        backoff.Backoff
}

func newDelivery(base *streamBase) *delivery {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &delivery{streamBase: base, timer: t}
}

// rearm arms the retry timer while events wait in the outbox, and resets
// the backoff once they are all delivered.
func (s *delivery) rearm() {
	if s.wait.Base == 0 {
		base := s.m.hooks.retryBaseOr(defaultRetryBase)
		s.wait = backoff.New(base, max(maxRetryDelay, base))
	}
	switch {
	case s.undelivered == 0:
		if s.armed {
			s.timer.Stop()
			s.armed = false
		}
		s.wait.Reset()
	case !s.armed:
		s.timer.Reset(s.wait.Next())
		s.armed = true
	}
}

// retries fires when the events left in the outbox are due again.
func (s *delivery) retries() <-chan time.Time { return s.timer.C }

// retry delivers the events left in the outbox again, after retries fired.
func (s *delivery) retry(ctx context.Context) error {
	s.armed = false
	s.log.Info("retrying the delivery of events left in the outbox", "events", s.undelivered)
	if err := s.deliver(ctx); err != nil {
		return err
	}
	s.rearm()
	return nil
}

// stopRetries stops the retry timer (the evaluator ends).
func (s *delivery) stopRetries() { s.timer.Stop() }

// deliveredMarker is the delivery marker of event id for one sink: each
// sink is marked on its own, so a failing webhook does not make the Kafka
// topic receive an event twice on the retry.
func deliveredMarker(id, sink string) string { return id + "/" + sink }

// deliver sends the stream's outbox events to every sink that has not
// received them yet, and removes from the outbox the events every sink has.
// A failing sink keeps its events in the outbox for the next delivery (the
// evaluator's retry timer, the next evaluation, or a restart); the number
// left is in s.undelivered. An event a sink refuses for good
// (alerts.ErrPermanent) is logged, counted in odwatch_events_dropped_total
// and marked delivered for that sink, and the events after it are sent on:
// retrying it would block them for ever. Only store failures are returned.
func (s *delivery) deliver(ctx context.Context) error {
	pending, err := s.m.store.PendingEvents(s.name)
	if err != nil {
		return fmt.Errorf("stream %s: read outbox: %w", s.name, err)
	}
	s.undelivered = len(pending)
	if len(pending) == 0 {
		return nil
	}
	events := make([]alerts.Event, 0, len(pending))
	done := map[string]bool{}
	for _, p := range pending {
		var e alerts.Event
		if err := json.Unmarshal(p.Payload, &e); err != nil {
			s.log.Error("dropping an undecodable outbox event", "id", p.ID, "err", err)
			done[p.ID] = true
			continue
		}
		events = append(events, e)
		done[e.ID] = true
	}
	for _, ns := range s.m.sinks {
		var todo []alerts.Event
		for _, e := range events {
			ok, err := s.m.store.Delivered(s.name, deliveredMarker(e.ID, ns.name))
			if err != nil {
				return fmt.Errorf("stream %s: read delivery marker: %w", s.name, err)
			}
			if !ok {
				todo = append(todo, e)
			}
		}
		kept, err := s.sendTo(ctx, ns, todo)
		if err != nil {
			return err
		}
		for _, e := range kept {
			done[e.ID] = false
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	var ids []string
	for _, p := range pending {
		if done[p.ID] {
			ids = append(ids, p.ID)
		}
	}
	if err := s.m.store.MarkDelivered(s.name, ids); err != nil {
		return fmt.Errorf("stream %s: mark delivered: %w", s.name, err)
	}
	s.undelivered = len(pending) - len(ids)
	return nil
}

// sendTo sends todo to one sink and marks delivered for it the events it
// took and the ones it refused for good, each refused one dropped with an
// ERROR log and odwatch_events_dropped_total; it returns the events left
// for a retry (a transient failure stops the sink at the event that
// failed, so that order is kept). Only store failures are returned.
func (s *delivery) sendTo(ctx context.Context, ns namedSink, todo []alerts.Event) ([]alerts.Event, error) {
	for len(todo) > 0 {
		err := ns.sink.Send(ctx, todo)
		// n events taken; with a permanent failure, todo[n] is refused.
		n := len(todo)
		permanent := false
		if err != nil {
			n = min(max(alerts.Delivered(err), 0), len(todo))
			permanent = n < len(todo) && ctx.Err() == nil && errors.Is(err, alerts.ErrPermanent)
		}
		markers := make([]string, 0, n+1)
		for _, e := range todo[:n] {
			markers = append(markers, deliveredMarker(e.ID, ns.name))
		}
		if permanent {
			e := todo[n]
			s.m.metrics.alerts.SinkError(s.name, ns.name)
			s.m.metrics.alerts.EventDropped(s.name, ns.name)
			s.log.Error("event refused for good by a sink; dropped for it, later events go on",
				"id", e.ID, "type", e.Type, "dependency", e.DependencyText, "sink", ns.name, "err", err)
			markers = append(markers, deliveredMarker(e.ID, ns.name))
			n++
		}
		// Marked at once: a sink retrying inside Send may take long, and a
		// crash meanwhile must not send these again.
		if len(markers) > 0 {
			if err := s.m.store.MarkDelivered(s.name, markers); err != nil {
				return nil, fmt.Errorf("stream %s: mark delivered: %w", s.name, err)
			}
		}
		todo = todo[n:]
		if err == nil || permanent {
			continue
		}
		if ctx.Err() == nil {
			s.m.metrics.alerts.SinkError(s.name, ns.name)
			s.log.Error("event delivery failed; kept in the outbox", "sink", ns.name,
				"events", len(todo), "delivered", n, "err", err)
		}
		return todo, nil
	}
	return nil, nil
}

// eventsTail is how many of the last messages per partition of the events
// topic are read on start.
const eventsTail = 2000

// dedupeFromEventsTopic closes the crash window of the Kafka sink: an event
// written to the events topic just before a crash, while its delivery
// marker was not yet synced, would be written again from the outbox on
// restart. Before delivering the outbox, the last eventsTail messages of
// each partition of the events topic are read and the ids found there
// (ce_id header) are marked delivered for the Kafka sink. Events are rare
// and the outbox only holds the last evaluations' events, so the tail is
// where they are.
func (m *Monitor) dedupeFromEventsTopic(ctx context.Context) error {
	if m.cfg.EventsTopic == "" {
		return nil
	}
	pendingBy := map[string][]string{} // stream → pending ids
	any := false
	for _, s := range m.streams {
		p, err := m.store.PendingEvents(s.name)
		if err != nil {
			return err
		}
		for _, e := range p {
			pendingBy[s.name] = append(pendingBy[s.name], e.ID)
			any = true
		}
	}
	if !any {
		return nil
	}
	ids, err := readEventIDs(ctx, m.cfg.Brokers, m.cfg.Dialer, m.cfg.EventsTopic, eventsTail)
	if err != nil {
		return err
	}
	for stream, pend := range pendingBy {
		var seen []string
		for _, id := range pend {
			if ids[id] {
				seen = append(seen, deliveredMarker(id, "kafka"))
			}
		}
		if len(seen) > 0 {
			m.log.Info("events already on the events topic, not sent again", "stream", stream, "events", len(seen))
			if err := m.store.MarkDelivered(stream, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// readEventIDs returns the ce_id headers of the last tail messages of every
// partition of topic.
func readEventIDs(ctx context.Context, brokers []string, dialer *kafka.Dialer, topic string, tail int64) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ids := map[string]bool{}
	err := kafkaread.Scan(ctx, brokers, dialer, topic, tail, func(_ int, rec *kafka.Record) {
		for _, h := range rec.Headers {
			if h.Key == "ce_id" {
				ids[string(h.Value)] = true
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
