// Package deliver sends a stream's events from its persistent outbox (in
// the state store) to the sinks, like prometheus's notifier: each sink
// marked on its own (Marker), what a sink failed to take sent again on a
// timer with capped exponential backoff (Outbox), and on start the events
// already on the Kafka events topic marked delivered for it
// (DedupeFromTopic).
//
// Who touches it: an Outbox belongs to its stream's evaluator goroutine,
// which delivers after each save and when Retries fires; before that
// goroutine starts, the monitor's Run goroutine delivers the outbox left by
// the last run. An Outbox has no lock; it reads the store and the sinks,
// both safe for concurrent use.
//
// Guarantee: an event leaves the outbox only once every sink took it or
// refused it for good, and a sink's delivery markers are written as soon
// as the sink took the events, so a restart does not send them to it again
// (and, with DedupeFromTopic, not to the events topic either, even when a
// crash came before the marker).
//
// It is its own package because delivery is a unit with its own state (the
// retry timer and backoff) that reads nothing of the stream's but its
// name, its store and its sinks.
package deliver
