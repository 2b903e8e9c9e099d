package history

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNowMatchesClockMonotonic compares Now with a direct clock_gettime.
func TestNowMatchesClockMonotonic(t *testing.T) {
	for range 100 {
		a := Now()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		b := Now()
		const slack = 100_000 // calibration error plus scheduling noise
		if m := ts.Nano(); m < a-slack || m > b+slack {
			t.Fatalf("CLOCK_MONOTONIC %d outside [%d, %d]", m, a, b)
		}
	}
	if base.err > 50_000 {
		t.Logf("calibration error bound %d ns is unusually large", base.err)
	}
}
