// Package testkit holds the helpers that tests of more than one package
// share, written once: a fake Confluent Schema Registry and the Avro and
// JSON records the decoder and stream tests feed. It is imported by tests
// only, and imports none of odwatch's packages, so that any package's
// in-package tests can use it without an import cycle.
package testkit
