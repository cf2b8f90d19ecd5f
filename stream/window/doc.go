// Package window holds a stream's window: the columnar in-memory mirror of
// its last records (Window), the copies other goroutines evaluate
// (Snapshot) and where each row came from (RowMeta).
//
// Who touches it: a Window belongs to the goroutine that appends to it, the
// stream's consumer (stream's streamRun, or the replay command's Replayer,
// which has no other goroutine). That goroutine alone appends, evicts,
// takes snapshots and reads rows (Row, NewerThan, NewestValues for the
// check jobs of two cadences, Info for events). A Window has no lock:
// other goroutines never see it, only the Snapshots and check jobs built
// from it, which nothing changes once handed over.
//
// Guarantee: the ring, the dictionaries and their reference counts stay
// private, so every code a snapshot or a check job carries indexes a
// dictionary value that was live in the window when it was taken.
//
// It is its own package because it depends on nothing of the stream's
// (records come decoded, from package decode) and is tested and fuzzed on
// records alone, against a naive model.
package window
