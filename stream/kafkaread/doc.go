// Package kafkaread reads Kafka topics off the consumer group: a range of a
// topic, its partitions merged in time order as a takeover reads a window
// back (ReadRange, for `odwatch replay --topic`), and a scan of every
// partition from its start or of its last records (Scan, how a member reads
// back the events and state topics). Transport gives each reader and writer
// a kafka-go transport of its own, and MaxMessageBytes is the largest batch
// the monitor's writers send.
//
// It is a package of its own because these reads share no state with the
// consumer: each opens a client, reads up to the high watermark and closes
// it, so the replay command uses them without a monitor.
package kafkaread
