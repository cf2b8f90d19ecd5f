package kafkaread

// Before is before, for the external test.
var Before = before
