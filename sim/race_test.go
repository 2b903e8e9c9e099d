//go:build race

package sim_test

// raceEnabled: the race detector slows the simulation about eightfold, so
// the tests run their quick forms.
const raceEnabled = true
