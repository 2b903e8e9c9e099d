//go:build race

package simtest

// raceEnabled: the race detector slows the simulation about eightfold, so
// the tests run their quick forms.
const raceEnabled = true
