//go:build race

package stream

// raceEnabled: the race detector slows every memory access several times,
// so wall-clock bounds on the work of a monitor (beyond the group's own
// timeouts) are not meaningful under it.
const raceEnabled = true
