package history

import (
	"fmt"
	"time"
)

// ClockBound is the clock error of one host of a run whose ops were
// timed by several clocks (the worker processes of a multi-process or
// multi-host run): the host measured its offset to the coordinator's
// timeline before its traffic, NTP-style (the tightest of a few round
// trips), and shifted its timestamps by Offset; they are then within
// Bound of the coordinator's timeline. Its ops are those of the clients
// ClientLo to ClientHi-1.
type ClockBound struct {
	// Worker is the host's worker index.
	Worker int `json:"worker"`
	// ClientLo and ClientHi bound the client ids of its ops: [lo, hi).
	ClientLo int `json:"client_lo"`
	ClientHi int `json:"client_hi"`
	// Offset is what the host added to its clock's readings.
	Offset time.Duration `json:"offset"`
	// Bound is the error left after the correction: half the round trip
	// of the sample the offset came from, plus the clocks' reading error.
	Bound time.Duration `json:"bound"`
}

func (c *ClockBound) validate() error {
	switch {
	case c.Bound < 0:
		return fmt.Errorf("history: clock bound of worker %d is negative (%s)", c.Worker, c.Bound)
	case c.ClientLo > c.ClientHi:
		return fmt.Errorf("history: clock bound of worker %d has clients [%d, %d)", c.Worker, c.ClientLo, c.ClientHi)
	}
	return nil
}

// MaxClockBound returns the largest Bound of the header's Clocks, or 0.
func (hd *Header) MaxClockBound() time.Duration {
	var m time.Duration
	for _, c := range hd.Clocks {
		m = max(m, c.Bound)
	}
	return m
}

// WidenedOps returns h's ops with the interval of every op timed by a host
// with a clock bound widened by that bound: its Call earlier, its Return
// (when it has one) later. A wider interval can only make two ops
// concurrent that looked ordered, never order two that looked
// concurrent, so a check of real-time order on the widened ops gives no
// false violation from the hosts' clock error; it cannot see a race
// shorter than the bound. Fault windows stay as recorded. Without Clocks
// it returns h.Ops itself; otherwise a copy.
func (h *History) WidenedOps() []Op {
	if len(h.Header.Clocks) == 0 {
		return h.Ops
	}
	ops := make([]Op, len(h.Ops))
	copy(ops, h.Ops)
	for i := range ops {
		op := &ops[i]
		if op.Kind == KindFault {
			continue
		}
		for _, c := range h.Header.Clocks {
			if op.Client < c.ClientLo || op.Client >= c.ClientHi || c.Bound == 0 {
				continue
			}
			op.Call -= int64(c.Bound)
			if op.Return != NoReturn {
				op.Return += int64(c.Bound)
			}
			break
		}
	}
	return ops
}
