//go:build race

package simredis_test

// raceEnabled: the race detector slows the simulation about eightfold, so
// the tests run their quick forms.
const raceEnabled = true
