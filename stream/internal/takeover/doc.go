// Package takeover is what a member reads from Kafka when it takes a
// stream over: the window read back up to the group's committed offsets
// (Read, in the window's order: time, partition, offset) and the stream's
// last state record on the state topic (ReadStateRecord), which every
// evaluation publishes (EncodeState, through NewStateWriter's writer).
//
// Who touches it: the consumer goroutine, while a generation's takeover
// runs and before it fetches anything (stream's takeOver, retried through
// fetch.Health); the evaluator goroutine encodes and publishes the state
// records. A ReadBack is built by Read and then belongs to the consumer,
// which makes it the stream's window (stream's applyTakeOver: the
// sequence numbers and the positions are the consumer's state, so that
// part stays there). Nothing here holds a lock or outlives the call.
//
// It is its own package because reading a window back is Kafka reads and
// decoding only: it needs of the stream its topic, its window bounds and
// its decoder, and none of its state.
package takeover
