//go:build !linux

package history

import "time"

// ClockName names the timeline Now reads, for Header.Clock.
const ClockName = "process-monotonic"

// CrossProcess reports whether timestamps from Now taken by different
// processes are comparable. It is false outside Linux: there Now counts from
// this process's start, so multi-process runs cannot be merged.
const CrossProcess = false

var start = time.Now()

// Now returns nanoseconds since this process first used the package, from
// the Go runtime's monotonic clock. Outside Linux the timeline is local to
// the process.
func Now() int64 { return 1 + int64(time.Since(start)) }
