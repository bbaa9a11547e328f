//go:build race

package nodetest

// raceEnabled reports that the tests run with the race detector; the node
// binary is then built with it too.
const raceEnabled = true
