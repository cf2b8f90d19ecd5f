package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
	"github.com/odwatch/odwatch/state"
	"github.com/segmentio/kafka-go"
)

// evalJob is one window to evaluate: an immutable snapshot and the
// sequence number of its last record.
type evalJob struct {
	snap   *Snapshot
	endSeq uint64
	// bounds: the window's eviction bounds at the snapshot (evictHold).
	bounds map[int32]int64
	next   map[int32]int64 // the stream's next offsets at the snapshot
	// replay: the evaluation lost in a crash, replayed on start before the
	// consumer knows whether this member still owns the stream, so it is
	// not published to the state topic (it could shadow a newer owner's).
	replay bool
}

// mailbox holds at most one pending evaluation. A new window due while the
// previous one still waits replaces it (counted as skipped): the evaluator
// always works on the newest window and consumption never waits for it. A
// replayed evaluation (lost in a crash) has its own slot and goes first, so
// that the first live window does not replace it.
type mailbox struct {
	mu      sync.Mutex
	pending *evalJob
	replay  *evalJob
	restore *stateRecord // a tracker state to restore before the next evaluation
	wake    chan struct{}
}

func newMailbox() mailbox { return mailbox{wake: make(chan struct{}, 1)} }

// evictHold is a dispatched count window not saved yet: the store keeps
// its records (offsets from bounds on, per partition) until the evaluation
// of end is saved.
type evictHold struct {
	end    uint64
	bounds map[int32]int64
}

// maxHolds bounds the windows whose records the store keeps for a replay:
// the running evaluation, the pending one and a replay (a skipped one is
// released at once). Beyond it the oldest is given up, so that the store
// stays bounded whatever the evaluator does.
const maxHolds = 4

// dispatch snapshots the window (ending at record endSeq) for the
// evaluator.
func (s *streamRun) dispatch(endSeq uint64) {
	job := &evalJob{snap: s.win.Snapshot(), endSeq: endSeq, bounds: s.win.EvictionBounds()}
	if s.m.stateWriter != nil {
		job.next = make(map[int32]int64, len(s.next))
		for p, o := range s.next {
			job.next[p] = o
		}
	}
	s.dispatchJob(job)
}

// dispatchJob hands job to the evaluator and, for a count window, keeps
// its records in the store until it is saved.
func (s *streamRun) dispatchJob(job *evalJob) {
	s.evalSeq = max(s.evalSeq, job.endSeq+1)
	s.mb.mu.Lock()
	switch {
	case job.replay:
		s.mb.replay = job
	case s.mb.pending != nil:
		skipped := s.mb.pending.endSeq
		s.m.metrics.evaluations.WithLabelValues(s.name, "skipped").Inc()
		s.log.Debug("evaluation skipped: the previous one is still running", "window_end", skipped)
		// Never evaluated, so nothing to replay: its records can go.
		s.holds = slices.DeleteFunc(s.holds, func(h evictHold) bool { return h.end == skipped })
		fallthrough
	default:
		s.mb.pending = job
	}
	s.mb.mu.Unlock()
	if s.cfg.Interval == 0 {
		if len(s.holds) == maxHolds {
			s.holds = slices.Delete(s.holds, 0, 1)
		}
		s.holds = append(s.holds, evictHold{end: job.endSeq, bounds: job.bounds})
	}
	select {
	case s.mb.wake <- struct{}{}:
	default:
	}
}

// evictionBounds are the store's eviction bounds for the next commit: the
// window's, held back to the first records of the dispatched windows whose
// evaluation is not saved yet.
func (s *streamRun) evictionBounds() map[int32]int64 {
	b := s.win.EvictionBounds()
	done := s.evaluated.Load() // window end of the last saved evaluation + 1
	s.holds = slices.DeleteFunc(s.holds, func(h evictHold) bool { return h.end < done })
	for _, h := range s.holds {
		for p, o := range h.bounds {
			if cur, ok := b[p]; ok && o < cur {
				b[p] = o
			}
		}
	}
	return b
}

// Delivery retries: events a sink failed to take stay in the outbox and are
// sent again on a timer, from defaultRetryBase doubling up to maxRetryDelay
// while deliveries keep failing, besides after every evaluation.
const (
	defaultRetryBase = 5 * time.Second
	maxRetryDelay    = time.Minute
)

// evaluator runs the stream's evaluations, and the delivery retries, until
// ctx is done. It returns an error only for failures that must stop the
// pipeline (the store).
func (s *streamRun) evaluator(ctx context.Context) error {
	base := s.m.retryBase
	if base <= 0 {
		base = defaultRetryBase
	}
	delay := base
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	armed := false
	// rearm arms the retry timer while events wait in the outbox, and
	// resets the backoff once they are all delivered.
	rearm := func() {
		switch {
		case s.undelivered == 0:
			if armed {
				retry.Stop()
				armed = false
			}
			delay = base
		case !armed:
			retry.Reset(delay)
			armed = true
			delay = min(2*delay, max(maxRetryDelay, base))
		}
	}
	rearm()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
			armed = false
			s.log.Info("retrying the delivery of events left in the outbox", "events", s.undelivered)
			if err := s.deliver(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			rearm()
			continue
		case <-s.mb.wake:
		}
		s.mb.mu.Lock()
		replay, job, restore := s.mb.replay, s.mb.pending, s.mb.restore
		s.mb.replay, s.mb.pending, s.mb.restore = nil, nil, nil
		s.mb.mu.Unlock()
		if restore != nil {
			if err := s.applyState(restore); err != nil {
				return err
			}
		}
		for _, j := range []*evalJob{replay, job} {
			if j == nil {
				continue
			}
			if err := s.evaluate(ctx, j); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		rearm()
	}
}

// dependencyColumns lists the columns a dependency mentions.
func dependencyColumns(d discovery.Dependency) []string {
	switch d.Kind {
	case discovery.KindOFD:
		return append(append([]string(nil), d.Context...), d.RHS)
	case discovery.KindOC:
		return append(append([]string(nil), d.Context...), d.Left, d.Right)
	}
	return append(append([]string(nil), d.LHSList...), d.RHSList...)
}

// dependencyLevel is the lattice level of a dependency (FASTOD): the number
// of columns it mentions.
func dependencyLevel(d discovery.Dependency) int { return len(dependencyColumns(d)) }

// windowInfo describes a snapshot for events.
func (s *streamRun) windowInfo(snap *Snapshot, endSeq uint64) alerts.WindowInfo {
	w := alerts.WindowInfo{
		Stream:       s.name,
		Topic:        s.cfg.Topic,
		StartOffsets: map[int32]int64{},
		EndOffsets:   map[int32]int64{},
		Records:      snap.Len(),
		EndSeq:       endSeq,
	}
	for row := range snap.Len() {
		m := snap.Meta(row)
		if o, ok := w.StartOffsets[m.Partition]; !ok || m.Offset < o {
			w.StartOffsets[m.Partition] = m.Offset
		}
		if o, ok := w.EndOffsets[m.Partition]; !ok || m.Offset > o {
			w.EndOffsets[m.Partition] = m.Offset
		}
		if w.StartTime.IsZero() || m.Time.Before(w.StartTime) {
			w.StartTime = m.Time
		}
		if m.Time.After(w.EndTime) {
			w.EndTime = m.Time
		}
	}
	return w
}

// samples maps removal-set rows to records with the dependency's values.
func (s *streamRun) samples(snap *Snapshot, d discovery.Dependency, rows []int) []alerts.Sample {
	if len(rows) == 0 {
		return nil
	}
	cols := dependencyColumns(d)
	out := make([]alerts.Sample, 0, min(len(rows), s.cfg.Sample))
	for _, row := range rows {
		if len(out) == s.cfg.Sample || row < 0 || row >= snap.Len() {
			break
		}
		m := snap.Meta(row)
		out = append(out, alerts.Sample{Topic: s.cfg.Topic, Partition: m.Partition, Offset: m.Offset, Values: snap.Values(row, cols)})
	}
	return out
}

// attachSamples gives the events that carry violating records (violated,
// discovered) a sample of a minimal removal set. It runs after the tracker,
// for the few dependencies that raise an event: a removal set costs a sort
// of the dependency's classes, and computing one for every observation made
// it a third of an evaluation's time.
func (s *streamRun) attachSamples(ctx context.Context, table *discovery.Table, snap *Snapshot, events []alerts.Event) {
	opts := discovery.Options{Epsilon: s.cfg.Epsilon, RemovalSample: s.cfg.Sample}
	for i := range events {
		e := &events[i]
		if e.Removals == 0 || (e.Type != alerts.EventViolated && e.Type != alerts.EventDiscovered) {
			continue
		}
		r, err := discovery.Validate(ctx, table, e.Dependency, opts)
		if err != nil {
			s.log.Warn("removal sample", "dependency", e.DependencyText, "err", err)
			continue
		}
		e.Samples = s.samples(snap, e.Dependency, r.RemovalSample)
	}
}

// evaluate runs one evaluation: encode the window, re-validate every
// tracked dependency (exact error, whole window), run discovery, feed the
// tracker, persist tracker and events in one synced batch, deliver.
//
// A tracked dependency that mentions a column the window does not have (a
// field that stopped arriving) is not observed in that window: no event is
// raised for it, and an unpinned one is retired by the tracker after
// RetireAfter windows without observation. Reporting it as violated would
// page people for a schema change, which is not a data error.
func (s *streamRun) evaluate(ctx context.Context, job *evalJob) error {
	if s.hasTracker && job.endSeq <= s.trackerEnd {
		return nil // evaluated and saved before a restart
	}
	start := time.Now()
	snap := job.snap
	if snap.Len() == 0 {
		return nil
	}
	fail := func(what string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.m.metrics.evaluations.WithLabelValues(s.name, "error").Inc()
		s.log.Error("evaluation failed", "window_end", job.endSeq, "step", what, "err", err)
		return nil
	}
	info := s.windowInfo(snap, job.endSeq)
	table, err := discovery.Encode(snap.Columns())
	if err != nil {
		return fail("encode", err)
	}
	have := make(map[string]bool, len(table.Columns))
	for _, c := range table.Columns {
		have[c.Name] = true
	}
	encoded := time.Now()

	// Discovery first: a tracked dependency it finds minimal is valid, so
	// its removal count is exact (the early exit only cuts counts above
	// floor(eps*n)) and need not be validated again.
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.EvaluationTimeout > 0 {
		dctx, cancel = context.WithTimeout(ctx, s.cfg.EvaluationTimeout)
	}
	disc, derr := discovery.Discover(dctx, table, discovery.Options{
		Epsilon: s.cfg.Epsilon, MaxLevel: s.cfg.MaxLevel, Workers: discoveryWorkers(),
	})
	cancel()
	discovered := time.Now()
	result := "ok"
	if derr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(derr, context.DeadlineExceeded) {
			s.log.Warn("discovery stopped at the evaluation timeout; later levels not searched",
				"window_end", job.endSeq, "timeout", s.cfg.EvaluationTimeout)
		} else {
			result = "error"
			s.log.Error("discovery failed; tracked dependencies are still validated", "window_end", job.endSeq, "err", derr)
		}
	}
	complete, levels := false, 0
	found := map[string]discovery.Result{}
	if disc != nil {
		complete, levels = disc.Complete && derr == nil, disc.Stats.Levels
		for _, r := range disc.Dependencies {
			found[alerts.DependencyID(r.Dependency)] = r
		}
	}

	// Every tracked dependency gets its exact error on the whole window;
	// those discovery did not find are validated now.
	tracked := s.tracker.Tracked()
	obs := make([]alerts.Observation, 0, len(tracked)+len(found))
	inObs := make(map[string]bool, len(tracked)+len(found))
	var toValidate []discovery.Dependency
	for _, d := range tracked {
		id := alerts.DependencyID(d)
		if r, ok := found[id]; ok {
			inObs[id] = true
			obs = append(obs, alerts.Observation{Dependency: d, Removals: r.Removals, Error: r.Error})
			continue
		}
		missing := false
		for _, c := range dependencyColumns(d) {
			if !have[c] {
				missing = true
				break
			}
		}
		if !missing {
			toValidate = append(toValidate, d)
		}
	}
	vopts := discovery.Options{Epsilon: s.cfg.Epsilon}
	results, err := discovery.ValidateAll(ctx, table, toValidate, vopts)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Find the culprit: validate one by one.
		results = results[:0]
		var kept []discovery.Dependency
		for _, d := range toValidate {
			r, err := discovery.Validate(ctx, table, d, vopts)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s.log.Warn("validate tracked dependency", "dependency", d.String(), "err", err)
				continue
			}
			results = append(results, r)
			kept = append(kept, d)
		}
		toValidate = kept
	}
	for i, d := range toValidate {
		r := results[i]
		inObs[alerts.DependencyID(d)] = true
		obs = append(obs, alerts.Observation{Dependency: d, Removals: r.Removals, Error: r.Error})
	}
	validated := time.Now()
	// Newly minimal ones, in discovery's order (by score), unless their
	// context is too close to a key (MinScore).
	if disc != nil {
		for _, r := range disc.Dependencies {
			if r.Score < s.cfg.MinScore {
				continue
			}
			if id := alerts.DependencyID(r.Dependency); !inObs[id] {
				inObs[id] = true
				obs = append(obs, alerts.Observation{Dependency: r.Dependency, Removals: r.Removals, Error: r.Error})
			}
		}
	}
	// Minimal: found by this discovery. When discovery did not finish, a
	// dependency above the levels it completed counts as minimal (unknown),
	// so that it is not retired for want of search.
	for i := range obs {
		d := obs[i].Dependency
		_, ok := found[alerts.DependencyID(d)]
		obs[i].Minimal = ok || (!complete && dependencyLevel(d) > levels)
	}

	events := s.tracker.Observe(info, obs)
	s.attachSamples(ctx, table, snap, events)
	trackerState, err := s.tracker.MarshalJSON()
	if err != nil {
		return fmt.Errorf("stream %s: encode tracker: %w", s.name, err)
	}
	ev := &state.Evaluation{Stream: s.name, WindowEnd: job.endSeq, TrackerState: trackerState}
	for _, o := range obs {
		id := alerts.DependencyID(o.Dependency)
		if strings.IndexByte(id, 0) >= 0 {
			continue // the store keys history by id; a NUL in a column name cannot be stored
		}
		ev.History = append(ev.History, state.HistoryPoint{DependencyID: id, WindowEnd: job.endSeq, Error: o.Error, Time: info.EndTime})
	}
	for _, e := range events {
		payload, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("stream %s: encode event %s: %w", s.name, e.ID, err)
		}
		ev.Events = append(ev.Events, state.OutboxEvent{ID: e.ID, Payload: payload})
	}
	if err := s.m.store.SaveEvaluation(ev); err != nil {
		return fmt.Errorf("stream %s: save evaluation: %w", s.name, err)
	}
	s.trackerEnd, s.hasTracker = job.endSeq, true
	if !job.replay {
		s.publishState(ctx, job.endSeq, job.next, trackerState)
	}
	s.evaluated.Store(job.endSeq + 1)
	s.evaluations++
	if s.evaluations%housekeepingEvery == 0 {
		s.housekeeping(time.Now())
	}
	s.m.metrics.alerts.Observe(events)
	s.m.metrics.alerts.UpdateTracker(s.name, s.tracker)
	if err := s.deliver(ctx); err != nil {
		return err
	}
	d := time.Since(start)
	if int64(d) > s.maxEval.Load() {
		s.maxEval.Store(int64(d))
	}
	s.m.metrics.evalDuration.WithLabelValues(s.name).Observe(d.Seconds())
	s.m.metrics.evaluations.WithLabelValues(s.name, result).Inc()
	if result == "ok" {
		s.m.metrics.lastEval.WithLabelValues(s.name).Set(float64(time.Now().UnixNano()) / 1e9)
	}
	s.log.Debug("evaluation done", "window_end", job.endSeq, "records", snap.Len(), "columns", len(table.Columns),
		"tracked", len(tracked), "discovered", len(found), "events", len(events), "seconds", d.Seconds(),
		"validated", len(toValidate), "encode_s", encoded.Sub(start).Seconds(), "discover_s", discovered.Sub(encoded).Seconds(),
		"validate_s", validated.Sub(discovered).Seconds(), "persist_deliver_s", time.Since(validated).Seconds())
	return nil
}

// discoveryWorkers leaves one core to the consume path, so that ingest
// keeps its pace while a window is evaluated (docs/DESIGN.md: evaluation never
// blocks consumption).
func discoveryWorkers() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// Housekeeping of the store, every housekeepingEvery evaluations: the
// newest historyKeep history points per dependency are kept, delivery
// markers for deliveredKeep.
const (
	housekeepingEvery = 64
	historyKeep       = 1000
	// deliveredKeep: a delivery marker only matters while the evaluation
	// that produced its event can be replayed (after a crash, the window
	// end of the last batch) or the event id can come back from the events
	// topic's tail; a week is far beyond both.
	deliveredKeep = 7 * 24 * time.Hour
)

// housekeeping prunes the stream's history and old delivery markers.
// Failures are logged: they cost disk, not correctness.
func (s *streamRun) housekeeping(now time.Time) {
	if err := s.m.store.PruneHistory(s.name, historyKeep); err != nil {
		s.log.Warn("prune history", "err", err)
	}
	if err := s.m.store.PruneDelivered(s.name, now.Add(-deliveredKeep)); err != nil {
		s.log.Warn("prune delivery markers", "err", err)
	}
}

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
func (s *streamRun) deliver(ctx context.Context) error {
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
func (s *streamRun) sendTo(ctx context.Context, ns namedSink, todo []alerts.Event) ([]alerts.Event, error) {
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
	err := scanTopic(ctx, brokers, dialer, topic, tail, func(_ int, rec *kafka.Record) {
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
