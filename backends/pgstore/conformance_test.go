package pgstore

import (
	"context"
	"testing"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestConformance(t *testing.T) {
	s := newStore(t, Options{})
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) idem.Store { return s },
		Corrupt: func(t *testing.T, st idem.Store, key string) {
			t.Helper()
			_, err := st.(*Store).pool.Exec(context.Background(),
				"UPDATE "+s.table+` SET response = '\xdeadbeef' WHERE key = $1`, key)
			if err != nil {
				t.Fatalf("corrupt %q: %v", key, err)
			}
		},
		Plant: storetest.PlantWith(plantRow),
		PlantPolicy: func(t *testing.T, st idem.Store, key, policy string) bool {
			t.Helper()
			_, err := st.(*Store).pool.Exec(context.Background(), "UPDATE "+s.table+` SET fp_policy = $2 WHERE key = $1`, key, policy)
			if err != nil {
				t.Fatalf("plant policy %q for %q: %v", policy, key, err)
			}
			return true
		},
	})
}

func TestBatchConformance(t *testing.T) {
	s := newStore(t, Options{})
	storetest.RunBatch(t, storetest.Config{New: func(t *testing.T) idem.Store { return s }})
}
