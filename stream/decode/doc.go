// Package decode turns a Kafka record's value (JSON, Avro with a fixed
// schema, or Avro framed by a Confluent Schema Registry) into a FlatRecord:
// the record flattened to scalar fields, reused from record to record, and
// encoded for the store as it is. It owns the record limits, the column
// selection and the reasons a record is rejected (DecodeError).
//
// It is a package of its own because decoding only sees bytes: it reads no
// Kafka, no window and no store, so each decoder is tested and fuzzed on
// bytes alone, and the window, the store and the replay command share
// FlatRecord through it. JSON is flattened by discovery's Flattener, the
// same code the JSON Lines file reader uses, so that a topic and a file of
// the same records give the same columns.
package decode
