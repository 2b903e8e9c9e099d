//go:build linux

package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// ClockName names the timeline Now reads, for Header.Clock.
const ClockName = "CLOCK_MONOTONIC"

// CrossProcess reports whether timestamps from Now taken by different
// processes on this machine are comparable. It is true on Linux.
const CrossProcess = true

// timebase pairs a reading of the Go runtime's monotonic clock with the
// CLOCK_MONOTONIC value at the same instant. On Linux the runtime's monotonic
// clock is CLOCK_MONOTONIC itself (read through the vDSO), so adding the
// elapsed runtime time to mono gives CLOCK_MONOTONIC without a system call
// per reading; the only error is the pairing error below.
type timebase struct {
	t    time.Time // carries the runtime's monotonic reading
	mono int64     // CLOCK_MONOTONIC in ns at t
	err  int64     // bound on |mono - true CLOCK_MONOTONIC at t|, ns
}

var base = calibrate()

// calibrate brackets a clock_gettime system call between two runtime clock
// readings and keeps the tightest of a few tries; the pairing error is at
// most half the bracket (typically well under a microsecond).
func calibrate() timebase {
	var best timebase
	best.err = -1
	for range 16 {
		var ts unix.Timespec
		t0 := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			// Cannot happen on Linux; fall back to a process-local
			// timeline rather than failing.
			return timebase{t: time.Now(), mono: 1}
		}
		d := int64(time.Since(t0))
		if best.err < 0 || d/2 < best.err {
			best = timebase{t: t0, mono: ts.Nano() - d/2, err: d/2 + 1}
		}
	}
	return best
}

// Now returns CLOCK_MONOTONIC in nanoseconds: system-wide, so timestamps of
// different processes of one run on one machine compare directly (to within
// each process's calibration error, normally below a microsecond). It does
// not enter the kernel: it costs one vDSO clock read, like time.Now.
func Now() int64 { return base.mono + int64(time.Since(base.t)) }
