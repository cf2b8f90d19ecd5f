// Package fetch is the Kafka side of a stream's consumer: the fetchers
// that read assigned partitions (Fetcher), the merger that orders a
// topic's partitions by record time (Merger), the committer that commits
// a generation's offsets (Committer), and the health of the broker
// requests with their retries (Health).
//
// Who touches it: the consumer goroutine (stream's consume loop, one per
// monitor) starts a Fetcher per assigned partition, each on a goroutine of
// its own that owns its partition's offset and hands records over only
// through the Fetched channel. The consumer alone owns the Mergers (one per
// topic, no lock). A Committer runs its own goroutine; the consumer hands
// it offsets (Offer, never waiting) and waits for the last commit of a
// generation (Flush), through the committer's lock. Health is shared by
// every requester (the group membership, the fetchers, a takeover's
// read-back, the status page's readiness and the metrics) under its own
// lock. Both locks are leaves of the stream's lock order (package stream's
// doc): nothing else is taken while one is held.
//
// Guarantee: a Merger hands over a partition's records in offset order and
// the topic's in the window's order (time, partition, offset) within its
// grace and bounds; a Committer commits only offsets it was handed, at most
// one commit in flight, the newest per partition winning.
//
// It is its own package because none of it needs the stream's state: it
// speaks kafka-go and hands over kafka.Messages, and is tested on fakes of
// the broker alone.
package fetch
