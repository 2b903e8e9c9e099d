package redisstore

import (
	"testing"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// conformance returns the storetest configuration for stores on client.
func conformance(client redis.UniversalClient) storetest.Config {
	return plantConfig(storetest.Config{
		New: func(t *testing.T) idem.Store { return newStore(t, client, Options{}) },
		Corrupt: func(t *testing.T, st idem.Store, key string) {
			s := st.(*Store)
			// A hash whose fields do not parse: the subtle kind of garbage.
			err := s.client.HSet(ctxT(t), keysFor(s.opts.Prefix, key).record,
				fieldStatus, "completed", fieldToken, "not-a-number", fieldResponse, "\xff").Err()
			if err != nil {
				t.Fatal(err)
			}
		},
		PlantPolicy: func(t *testing.T, st idem.Store, key, policy string) bool {
			s := st.(*Store)
			if err := s.client.HSet(ctxT(t), keysFor(s.opts.Prefix, key).record, fieldPolicy, policy).Err(); err != nil {
				t.Fatal(err)
			}
			return true
		},
	})
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, conformance(newClient(t)))
}

func TestBatchConformance(t *testing.T) {
	t.Parallel()
	storetest.RunBatch(t, conformance(newClient(t)))
}
