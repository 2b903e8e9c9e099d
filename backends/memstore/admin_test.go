package memstore

import (
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestAdminManualClock(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	storetest.Admin(t, storetest.Config{
		New: func(t *testing.T) idem.Store {
			s := New(Options{Clock: clock, SweepInterval: -1})
			t.Cleanup(func() { s.Close() })
			return s
		},
		Advance: clock.Advance,
	})
}

func TestAdminRealTime(t *testing.T) {
	storetest.Admin(t, storetest.Config{
		New: func(t *testing.T) idem.Store {
			s := New(Options{SweepInterval: -1})
			t.Cleanup(func() { s.Close() })
			return s
		},
	})
}
