// Package alerts owns turning successive window results of a stream into
// dependency-change events, and delivering them.
//
// A Tracker keeps, per stream, the tracked dependencies (the rules a
// discovery found that then held in the checks after it, plus the pinned
// ones) and the candidates with their hysteresis state, and turns each
// window's observations into events: discovered, violated, restored,
// changed, retired (see Tracker for the exact rules). Event ids are a hash of
// stream, dependency id, window end sequence and type, and an event's time is
// the window's end time, so replaying the same windows from the same tracker
// state emits byte-identical events.
//
// Sinks deliver events: the log, a text writer (demo), a Kafka topic as
// CloudEvents 1.0 in binary content mode, and an HTTP webhook with retries.
// A sink tells a failure retrying may fix from one that refuses a single
// event for good (ErrPermanent, see SendError), which the caller drops so
// that the events after it are not blocked behind it for ever.
// Metrics counts events, sink errors and dropped events and exports the
// tracked state.
//
// The package does not import stream or state: the stream feeds it
// observations and persists the tracker (MarshalJSON) where it likes.
package alerts
