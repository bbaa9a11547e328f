//go:build !race

package nodetest

const raceEnabled = false
