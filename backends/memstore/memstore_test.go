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

func TestConformanceManualClock(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) idem.Store {
			s := New(Options{Clock: clock, SweepInterval: -1})
			t.Cleanup(func() { s.Close() })
			return s
		},
		Advance: clock.Advance,
		Corrupt: corrupt,
	})
}

func TestBatchConformance(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	storetest.RunBatch(t, storetest.Config{
		New: func(t *testing.T) idem.Store {
			s := New(Options{Clock: clock, SweepInterval: -1})
			t.Cleanup(func() { s.Close() })
			return s
		},
		Advance: clock.Advance,
	})
}

func TestConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time suite sleeps; skipped with -short")
	}
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) idem.Store {
			s := New(Options{SweepInterval: 10 * time.Millisecond})
			t.Cleanup(func() { s.Close() })
			return s
		},
		Corrupt: corrupt,
	})
}
