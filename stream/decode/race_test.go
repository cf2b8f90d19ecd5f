//go:build race

package decode

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of code that pools its scratch space are not
// meaningful under it.
const raceEnabled = true
