package naive_test

import (
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// TestReferencePassesConformance: the exported reference store is correct,
// the whole conformance suite on a manual clock.
func TestReferencePassesConformance(t *testing.T) {
	start, err := time.Parse(time.RFC3339, conformanceTime)
	if err != nil {
		t.Fatal(err)
	}
	clock := memstore.NewManualClock(start)
	storetest.Run(t, storetest.Config{
		Advance: clock.Advance,
		New:     func(t *testing.T) idem.Store { return naive.NewReference(naive.Options{Clock: clock}) },
		Corrupt: func(t *testing.T, s idem.Store, key string) {
			t.Helper()
			if !naive.Corrupt(s, key) {
				t.Fatalf("cannot corrupt %q in %T", key, s)
			}
		},
	})
}
