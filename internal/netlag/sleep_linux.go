package netlag

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper waits for sub-millisecond delays on a timerfd read through the
// runtime's network poller: the kernel wakes the poller when it fires, so
// the wait is accurate to some microseconds even in an idle process, where
// a Go timer under 1 ms can take a whole millisecond.
type sleeper struct {
	f *os.File
	goTimer
}

func newSleeper() *sleeper {
	s := &sleeper{}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err == nil {
		s.f = os.NewFile(uintptr(fd), "netlag-timerfd")
	}
	return s
}

// sleep waits d; it falls back on a Go timer without a timerfd.
func (s *sleeper) sleep(d time.Duration) {
	if s.f != nil {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if unix.TimerfdSettime(int(s.f.Fd()), 0, &spec, nil) == nil {
			var buf [8]byte
			if _, err := s.f.Read(buf[:]); err == nil {
				return
			}
		}
	}
	s.sleepUnless(d, nil)
}

func (s *sleeper) close() {
	if s.f != nil {
		_ = s.f.Close()
	}
	s.stop()
}
