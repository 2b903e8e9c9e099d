//go:build !linux

package netlag

import "time"

// sleeper waits on a Go timer (outside Linux, no timerfd).
type sleeper struct{ timer *time.Timer }

func newSleeper() *sleeper { return &sleeper{} }

func (s *sleeper) sleep(d time.Duration) {
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	<-s.timer.C
}

func (s *sleeper) close() {
	if s.timer != nil {
		s.timer.Stop()
	}
}
