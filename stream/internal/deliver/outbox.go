package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/internal/backoff"
	"github.com/odwatch/odwatch/state"
	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/segmentio/kafka-go"
)

// Delivery retries: events a sink failed to take stay in the outbox and are
// sent again on a timer, from DefaultRetryBase doubling up to maxRetryDelay
// while deliveries keep failing, besides after every evaluation.
const (
	DefaultRetryBase = 5 * time.Second
	maxRetryDelay    = time.Minute
)

// Sink is a sink with the name its delivery markers and error metric use.
type Sink struct {
	Name string
	Sink alerts.Sink
}

// Outbox sends a stream's outbox events to the sinks and sends again, on
// a timer of its own, what they failed to take.
type Outbox struct {
	store     *state.Store
	stream    string
	log       *slog.Logger
	sinks     []Sink
	metrics   *alerts.Metrics
	retryBase func() time.Duration
	// undelivered is the number of outbox events some sink has not taken
	// yet, after the last delivery.
	undelivered int
	timer       *time.Timer
	armed       bool
	wait        backoff.Backoff
}

// New returns the outbox of stream in store, delivered to sinks.
// retryBase is read at the first Rearm: the first wait before sending
// again what a sink failed to take.
func New(store *state.Store, stream string, log *slog.Logger, sinks []Sink, metrics *alerts.Metrics, retryBase func() time.Duration) *Outbox {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Outbox{store: store, stream: stream, log: log, sinks: sinks, metrics: metrics, retryBase: retryBase, timer: t}
}

// Undelivered is the number of outbox events some sink had not taken after
// the last delivery.
func (s *Outbox) Undelivered() int { return s.undelivered }

// Rearm arms the retry timer while events wait in the outbox, and resets
// the backoff once they are all delivered.
func (s *Outbox) Rearm() {
	if s.wait.Base == 0 {
		base := s.retryBase()
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

// Retries fires when the events left in the outbox are due again.
func (s *Outbox) Retries() <-chan time.Time { return s.timer.C }

// Retry delivers the events left in the outbox again, after Retries fired.
func (s *Outbox) Retry(ctx context.Context) error {
	s.armed = false
	s.log.Info("retrying the delivery of events left in the outbox", "events", s.undelivered)
	if err := s.Deliver(ctx); err != nil {
		return err
	}
	s.Rearm()
	return nil
}

// StopRetries stops the retry timer (the evaluator ends).
func (s *Outbox) StopRetries() { s.timer.Stop() }

// Marker is the delivery marker of event id for one sink: each
// sink is marked on its own, so a failing webhook does not make the Kafka
// topic receive an event twice on the retry.
func Marker(id, sink string) string { return id + "/" + sink }

// Deliver sends the stream's outbox events to every sink that has not
// received them yet, and removes from the outbox the events every sink has.
// A failing sink keeps its events in the outbox for the next delivery (the
// retry timer, the next evaluation, or a restart); the number
// left is in s.undelivered. An event a sink refuses for good
// (alerts.ErrPermanent) is logged, counted in odwatch_events_dropped_total
// and marked delivered for that sink, and the events after it are sent on:
// retrying it would block them for ever. Only store failures are returned.
func (s *Outbox) Deliver(ctx context.Context) error {
	pending, err := s.store.PendingEvents(s.stream)
	if err != nil {
		return fmt.Errorf("stream %s: read outbox: %w", s.stream, err)
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
	for _, ns := range s.sinks {
		var todo []alerts.Event
		for _, e := range events {
			ok, err := s.store.Delivered(s.stream, Marker(e.ID, ns.Name))
			if err != nil {
				return fmt.Errorf("stream %s: read delivery marker: %w", s.stream, err)
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
	if err := s.store.MarkDelivered(s.stream, ids); err != nil {
		return fmt.Errorf("stream %s: mark delivered: %w", s.stream, err)
	}
	s.undelivered = len(pending) - len(ids)
	return nil
}

// sendTo sends todo to one sink and marks delivered for it the events it
// took and the ones it refused for good, each refused one dropped with an
// ERROR log and odwatch_events_dropped_total; it returns the events left
// for a retry (a transient failure stops the sink at the event that
// failed, so that order is kept). Only store failures are returned.
func (s *Outbox) sendTo(ctx context.Context, ns Sink, todo []alerts.Event) ([]alerts.Event, error) {
	for len(todo) > 0 {
		err := ns.Sink.Send(ctx, todo)
		// n events taken; with a permanent failure, todo[n] is refused.
		n := len(todo)
		permanent := false
		if err != nil {
			n = min(max(alerts.Delivered(err), 0), len(todo))
			permanent = n < len(todo) && ctx.Err() == nil && errors.Is(err, alerts.ErrPermanent)
		}
		markers := make([]string, 0, n+1)
		for _, e := range todo[:n] {
			markers = append(markers, Marker(e.ID, ns.Name))
		}
		if permanent {
			e := todo[n]
			s.metrics.SinkError(s.stream, ns.Name)
			s.metrics.EventDropped(s.stream, ns.Name)
			s.log.Error("event refused for good by a sink; dropped for it, later events go on",
				"id", e.ID, "type", e.Type, "dependency", e.DependencyText, "sink", ns.Name, "err", err)
			markers = append(markers, Marker(e.ID, ns.Name))
			n++
		}
		// Marked at once: a sink retrying inside Send may take long, and a
		// crash meanwhile must not send these again.
		if len(markers) > 0 {
			if err := s.store.MarkDelivered(s.stream, markers); err != nil {
				return nil, fmt.Errorf("stream %s: mark delivered: %w", s.stream, err)
			}
		}
		todo = todo[n:]
		if err == nil || permanent {
			continue
		}
		if ctx.Err() == nil {
			s.metrics.SinkError(s.stream, ns.Name)
			s.log.Error("event delivery failed; kept in the outbox", "sink", ns.Name,
				"events", len(todo), "delivered", n, "err", err)
		}
		return todo, nil
	}
	return nil, nil
}

// eventsTail is how many of the last messages per partition of the events
// topic are read on start.
const eventsTail = 2000

// DedupeFromTopic closes the crash window of the Kafka sink: an event
// written to the events topic just before a crash, while its delivery
// marker was not yet synced, would be written again from the outbox on
// restart. Before delivering the outbox, the last eventsTail messages of
// each partition of the events topic are read and the ids found there
// (ce_id header) are marked delivered for the Kafka sink. Events are rare
// and the outbox only holds the last evaluations' events, so the tail is
// where they are.
func DedupeFromTopic(ctx context.Context, store *state.Store, streams []string, brokers []string, dialer *kafka.Dialer, topic string, log *slog.Logger) error {
	pendingBy := map[string][]string{} // stream → pending ids
	any := false
	for _, s := range streams {
		p, err := store.PendingEvents(s)
		if err != nil {
			return err
		}
		for _, e := range p {
			pendingBy[s] = append(pendingBy[s], e.ID)
			any = true
		}
	}
	if !any {
		return nil
	}
	ids, err := readEventIDs(ctx, brokers, dialer, topic, eventsTail)
	if err != nil {
		return err
	}
	for stream, pend := range pendingBy {
		var seen []string
		for _, id := range pend {
			if ids[id] {
				seen = append(seen, Marker(id, "kafka"))
			}
		}
		if len(seen) > 0 {
			log.Info("events already on the events topic, not sent again", "stream", stream, "events", len(seen))
			if err := store.MarkDelivered(stream, seen); err != nil {
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

// DeliveredKeep is how long delivery markers are kept (Prune): a marker
// only matters while the evaluation that produced its event can be
// replayed (after a crash, the window end of the last batch) or the event
// id can come back from the events topic's tail; a week is far beyond
// both.
const DeliveredKeep = 7 * 24 * time.Hour

// Prune forgets the stream's delivery markers older than DeliveredKeep at
// now. Failures are logged: they cost disk, not correctness.
func (o *Outbox) Prune(now time.Time) {
	if err := o.store.PruneDelivered(o.stream, now.Add(-DeliveredKeep)); err != nil {
		o.log.Warn("prune delivery markers", "err", err)
	}
}

// Evaluation is what an evaluation of stream saves in one synced batch:
// the tracker's state after it (tracker) and its events, in the outbox
// form Deliver reads back.
func Evaluation(stream string, windowEnd uint64, tracker []byte, events []alerts.Event) (*state.Evaluation, error) {
	ev := &state.Evaluation{Stream: stream, WindowEnd: windowEnd, TrackerState: tracker}
	for _, e := range events {
		payload, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("stream %s: encode event %s: %w", stream, e.ID, err)
		}
		ev.Events = append(ev.Events, state.OutboxEvent{ID: e.ID, Payload: payload})
	}
	return ev, nil
}
