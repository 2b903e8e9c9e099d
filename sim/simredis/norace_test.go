//go:build !race

package simredis_test

const raceEnabled = false
