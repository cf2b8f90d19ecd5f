// Package demo is what `odwatch demo` runs besides the monitor, and what
// the tests run against: an in-process Kafka broker (kfake) and the payroll
// generator of the paper's running example (salary determines tax group
// and percentage, with data-entry errors when asked).
//
// It is a package of its own, under internal/, so that kfake is linked
// only into the binary, the scripts and the tests: the stream library that
// a deployment links talks to a real broker and carries neither.
package demo
