package memstore

import (
	"testing"

	"github.com/idembench/idembench/backends/storetest"
)

func TestAdminManualClock(t *testing.T) {
	storetest.Admin(t, manualClockConfig())
}

func TestAdminRealTime(t *testing.T) {
	storetest.Admin(t, storetest.Config{New: closedAtEnd(Options{SweepInterval: -1})})
}
