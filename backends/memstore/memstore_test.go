package memstore

import (
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func corrupt(t *testing.T, st idem.Store, key string) {
	t.Helper()
	s := st.(*Store)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.entries[key]
	if !ok {
		t.Fatalf("corrupt: no record for %q", key)
	}
	c := *e
	c.corrupted = true
	sh.entries[key] = &c
}

// closedAtEnd is a Config.New that builds a store with opts and closes it
// when the test ends.
func closedAtEnd(opts Options) func(t *testing.T) idem.Store {
	return func(t *testing.T) idem.Store {
		s := New(opts)
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// manualClockConfig describes stores on one manual clock that only the
// suite moves, with no background sweep.
func manualClockConfig() storetest.Config {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return storetest.Config{New: closedAtEnd(Options{Clock: clock, SweepInterval: -1}), Advance: clock.Advance}
}

func TestConformanceManualClock(t *testing.T) {
	cfg := manualClockConfig()
	cfg.Corrupt = corrupt
	storetest.Run(t, cfg)
}

func TestBatchConformance(t *testing.T) {
	storetest.RunBatch(t, manualClockConfig())
}

func TestConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time suite sleeps; skipped with -short")
	}
	storetest.Run(t, storetest.Config{New: closedAtEnd(Options{SweepInterval: 10 * time.Millisecond}), Corrupt: corrupt})
}
