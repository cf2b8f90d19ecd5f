// Package stream owns odwatch's streaming pipeline: consuming Kafka topics
// with a consumer group (kafka-go, at-least-once, offsets committed only
// after the records are synced to the state store), mirroring the decoded
// records in a columnar window, scheduling evaluations (re-validation of
// tracked dependencies and full discovery) off the consume path, and
// handing the results to package alerts for events, delivered through a
// persistent outbox.
//
// Package stream is the face: Monitor, Config and StreamConfig, Options,
// Replayer and the status types the status page reads. The machinery is in
// packages by job: stream/decode (records and their decoders),
// stream/window (the window mirror), stream/kafkaread (topic ranges and
// scans), stream/internal/fetch (partition fetchers, the merger, the
// offset committer, broker health and retries), stream/internal/deliver
// (the outbox's delivery to the sinks), stream/internal/takeover (the
// window read back and the state topic's records), stream/internal/balance
// (the group balancer), stream/internal/metrics (the stream's
// Prometheus collectors), stream/internal/history (the historian's queue,
// an evaluation's append, the status board, the stored events' encoding)
// and stream/internal/eval (the evaluation of a window, shared by the
// evaluator, the discoverer and Replayer: full evaluations, the
// two-cadence checker and its deltas, removal samples), stream/internal/pace
// (discovery's pacer and the check gate). The in-process broker and the
// payroll generator of the demo and tests are internal/demo's.
//
// # Goroutines and their owners
//
// Each goroutine of a stream owns one type, and touches the others' state
// only through the channels and locks named here:
//
//   - The consumer (Monitor.consume, one for all streams) owns streamRun:
//     fetch (through a fetcher per assigned partition, each a goroutine of
//     its own that hands records over through a channel, merged by
//     fetch.Merger), decode, window append, the store batch and the offset
//     commits (through the generation's fetch.Committer, a goroutine of its
//     own), dispatch, takeover (its reads: takeover.Read) and drop. It
//     puts work in the stream's mailbox under mailbox.mu and wakes the
//     evaluator (mailbox.wake) and the discoverer (cadenceFeed.discWake);
//     of the evaluator it reads only progress.evaluated (atomic); it asks
//     the pacer (cadenceFeed.pace) and waits on cadenceFeed.consumerWake.
//   - The evaluator (evaluator.run, one per stream) owns evaluator: the
//     tracker, the checker of two cadences (eval.Checker), the saved
//     window end; it runs the evaluations (eval.Env), within a check
//     starting and waiting for helpers that share nothing writable (the
//     engine's spread, the rules rated on every core:
//     eval.validateOnCores). It takes
//     its work from the mailbox under mailbox.mu, saves under
//     mailbox.saveMu (so that a drop and a save are ordered), publishes
//     progress.evaluated and releases the check gate. Delivery
//     (deliver.Outbox: the outbox, its sinks and its retry timer) is a
//     unit of its own on the evaluator's goroutine.
//   - The discoverer (discoverer.run, one per two-cadence stream, started
//     and waited for by the evaluator) owns nothing but the discovery it
//     runs: it takes jobs and hands results through cadenceFeed under
//     mailbox.mu (telling the pacer each one's end there), and its workers
//     wait at the check gate (pace.Gate).
//   - The historian (history.Historian, one per stream, started and
//     closed by the evaluator) takes the status history's jobs through its
//     own queue and lock (Historian.mu) and publishes progress.statusEnd.
//
// Streams share only the monitor's configuration (read-only), its store
// and metrics (safe for concurrent use) and its status board (its own
// lock); the status page reads a stream's tracker under the tracker's own
// lock.
//
// # Lock order
//
// The one order in which a goroutine may hold a stream's locks:
//
//	mailbox.saveMu -> mailbox.mu -> pace.Gate.mu
//
// drop takes saveMu, then mu (and the gate's through cadenceFeed.forget);
// the evaluator holds saveMu alone around a save, and mu around the
// queues, taking the gate's lock inside mu to change the gate with the
// queue. Historian.mu, the committer's lock and fetch.Health's lock are
// leaves: nothing else is taken while they are held.
//
// # Delivery guarantees
//
// A batch of records is applied to the store (records, next offsets, next
// arrival sequence, evictions) in one synced commit before its offsets are
// committed to Kafka; a redelivered record (offset below the stored next
// offset) is skipped, so a crash neither loses nor double-counts records.
// The sync of one batch runs while the next one fills, and synced offsets
// are committed at most every offsetCommitInterval and when a generation
// ends, on a goroutine of their own (fetch.Committer): one commit in flight, the newest
// synced offsets winning, a failed one retried with the newest, so that a
// commit that hangs (on a broker connection an outage left hung, until
// kafka-go's request timeout closes it) stalls neither consumption nor
// evaluation; a generation ends only once its last commit completed or
// failed. An evaluation's own synced commit comes after the records it
// evaluated in the store's log, so what it saves is never durable before
// them.
// Arrival sequence numbers are persisted, so evaluations happen at the same
// window ends after a restart, and event ids (hash of stream, dependency,
// window end, type) repeat instead of multiplying. The records of a count
// window handed to the evaluator stay in the store until its evaluation is
// saved, so that a restart rebuilds and replays the last one a crash
// interrupted. With two cadences (cadence.go), the records of the window a
// discovery started on stay until the check that merges its result is
// saved; a restart runs again every check after the last saved one (each
// on its own, none coalesced) and every discovery not merged yet, and the
// check that merges a re-run discovery waits for it: a crash anywhere
// between a check and a merge (discovery running, or done and waiting)
// gives the events and ids of an uninterrupted run, none twice, provided
// the uninterrupted run skipped no check (coalesced under load) and merged
// no discovery late. Only the errors an event carries may differ: after a
// restart every count is exact at the first check, where the uninterrupted
// run may have kept the last exact count of a dependency whose verdict
// could not change (incremental.Engine's skip). An evaluation saves the
// tracker state and its events in one synced commit, then sends them to
// every sink and marks each sink's delivery; what a sink failed to take is
// sent again on a timer (deliver.DefaultRetryBase, doubling up to
// maxRetryDelay), after the next evaluation, and on restart. An event
// carries the sample of its own rule's violating records, taken before
// the save; the status history (its related rules' samples, the rules'
// points) is display data, appended unsynced after the delivery by the
// stream's historian, off the evaluator (docs/DESIGN.md, "Streaming
// semantics", says what a crash or a historian behind leaves out).
// Delivery markers are kept for a week (deliver.DeliveredKeep); for the
// Kafka events sink the gap between a send and its mark is closed on start
// by marking the ids found in the events topic's tail (ce_id header), so
// no event id reaches the topic twice.
//
// # Scale-out and takeover
//
// Membership is kafka-go's consumer group API (kafka.NewConsumerGroup):
// every generation brings this member's assignment, and the consume loop
// runs inside it. The group balancer (balance.Balancer) gives all partitions of
// a topic to one member, since a window needs the whole stream, keeps
// topics where they are across rebalances and spreads them over the
// members by load. When a generation assigns a topic whose partitions the
// group consumed past this member's store (a takeover, or a lost state
// dir), or for none of which the store holds a position (a fresh member,
// or a window it dropped; the group may have committed nothing yet), the
// member rebuilds the whole window before fetching anything new:
// the last Window records across partitions up to the group's committed
// offsets (for a time window, only the records of the last Interval: each
// partition is read from its first offset at or after the newest record
// time minus Interval, looked up by timestamp), in the window's order
// (record time, partition, offset). With
// Config.StateTopic set, every evaluation also publishes the stream's
// tracker state there (a compacted topic, key = stream name), and such a
// member, when the topic holds a newer tracker state than its own store (a
// fresh instance has none), restores the tracker from it; either way it
// continues the arrival sequence numbers where the previous owner's count
// stands at the committed offsets (the state record's, less the records it
// counted past them: an owner killed after publishing an evaluation and
// before the offsets of its records were committed): the tracked
// dependencies keep their state, no discovered event is repeated, and
// evaluations fall at the window ends of an uninterrupted member.
// Without a state topic the tracker starts empty and the dependencies are
// rediscovered on the member's first window. A member that loses a topic
// in a rebalance drops the stream's window (memory and store, its
// positions with it) so that it never evaluates a stale one, nor goes on
// from those positions with an empty window after a restart, and so does
// a member whose stored position is behind the group's committed offset
// (it restarted on an old state dir, or got the topic back): both then
// take over as above. What it dispatched for the dropped window goes with
// it: the queued evaluations, checks and discoveries are forgotten, a
// running discovery is stopped, and an evaluation or check running is not
// saved, so that once the window is dropped none of its events is stored
// or delivered by this member (the new owner raises them, with the same
// ids), and a check after the topic comes back starts the checker over
// (streamRun.drop). A clean stop commits and leaves the group at once;
// a crashed member's topics move after Config.SessionTimeout.
//
// # Broker outages
//
// Broker errors (timeouts, refused or reset connections, a coordinator or
// leader that moved, a broker restarting) are retried with capped
// exponential backoff; meanwhile Ready is false and
// odwatch_kafka_unreachable_seconds_total grows, and the log says so once
// per backoff step. Consumption resumes from the stored positions, which are
// never behind the committed offsets, so nothing is lost or counted twice.
// Only a permanent authorization failure ends Run.
//
// # A damaged store
//
// A store that is damaged (state.ErrCorrupt) fails NewMonitor, or ends Run
// when a read or a background compaction finds the damage later
// (state.Store.Failed); it is never used further. With
// Config.RebuildState, NewMonitor sets it aside and opens a fresh store,
// which holds no position: every partition is then taken over as above
// (window read back from Kafka, tracker from the state topic).
package stream
