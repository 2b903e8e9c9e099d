//go:build !linux

package netlag

import "time"

// sleeper waits on a Go timer (outside Linux, no timerfd).
type sleeper struct{ goTimer }

func newSleeper() *sleeper { return &sleeper{} }

func (s *sleeper) sleep(d time.Duration) { s.sleepUnless(d, nil) }

func (s *sleeper) close() { s.stop() }
