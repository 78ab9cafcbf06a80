//go:build race

package serve

// raceEnabled: the race detector drops pooled objects at random, which
// allocation counts see.
const raceEnabled = true
