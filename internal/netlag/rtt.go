package netlag

import (
	"slices"
	"time"
)

// AddedRTT measures what a proxy really adds to a round trip: it calls
// direct and proxied (each one round trip to the same server, one without
// and one through the proxy, such as a PING) n times each, alternately, and
// returns the median of the proxied times less the median of the direct
// ones. It stops at the first error.
func AddedRTT(n int, direct, proxied func() error) (time.Duration, error) {
	var d, p []time.Duration
	for range max(n, 1) {
		for _, side := range []struct {
			f   func() error
			out *[]time.Duration
		}{{direct, &d}, {proxied, &p}} {
			t0 := time.Now()
			if err := side.f(); err != nil {
				return 0, err
			}
			*side.out = append(*side.out, time.Since(t0))
		}
	}
	return median(p) - median(d), nil
}

func median(xs []time.Duration) time.Duration {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
