// Package testkit holds the helpers that tests of several packages share,
// written once: polling for a condition with a deadline, a logger to the
// test log, a context past its deadline, a fake offset committer, the path of the
// shared datasets, damaging a file, reading a Kafka group's committed
// offsets, a fake Confluent Schema Registry, the process's CPU time, and the Avro and JSON records
// the decoder and stream tests feed. A helper that needs a project type
// stays in that package's tests, so that every package's in-package tests
// can import testkit without a cycle: it imports none of odwatch's
// packages (the standard library and kafka-go only). Only tests import it.
package testkit
