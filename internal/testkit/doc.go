// Package testkit holds the helpers that tests of several packages share:
// polling for a condition with a deadline, the path of the shared
// datasets, damaging a file, and reading a Kafka group's committed
// offsets. A helper used by tests of more than one package lives here,
// once; one that needs a project type stays in that package's tests, so
// that every package's tests can import testkit without a cycle (it
// depends on the standard library and kafka-go only). Only tests import
// it.
package testkit
