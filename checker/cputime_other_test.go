//go:build !unix

package checker

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }
