package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/redis/go-redis/v9"
)

// TestCluster runs the store's tests and the conformance suite on a Redis
// Cluster of three masters it starts itself.
func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	addrs := startCluster(t)
	t.Logf("cluster %v ready in %v", addrs, time.Since(start).Round(time.Millisecond))
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = client.Close() })

	t.Run("Store", func(t *testing.T) {
		storeSuite(t, func(t *testing.T) *Store { return newStore(t, client, Options{}) })
	})
	t.Run("Waiter", func(t *testing.T) {
		var stores []*Store
		waiterSuite(t, func(t *testing.T, opts Options) *Store {
			s := newStore(t, client, opts)
			stores = append(stores, s)
			return s
		})
		// Redis 7 has sharded pub/sub: the waiter must have used it.
		if stores[0].pubsub.Load() != pubsubSharded {
			t.Errorf("waiter used subscription mode %d, want sharded", stores[0].pubsub.Load())
		}
	})
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, conformance(client)) })
	t.Run("PlantedRecords", func(t *testing.T) { plantedProperty(t, newStore(t, client, Options{})) })
	t.Run("BatchConformance", func(t *testing.T) { storetest.RunBatch(t, conformance(client)) })
	t.Run("OneSlotPerKey", func(t *testing.T) {
		ctx := ctxT(t)
		for _, key := range []string{"k", "order-42", "{x}", "a}b{c", "%"} {
			k := keysFor("p", key)
			for _, name := range []string{k.record, k.fence(), k.channel()} {
				slot, err := client.ClusterKeySlot(ctx, name).Result()
				if err != nil {
					t.Fatal(err)
				}
				if slot != int64(k.slot) {
					t.Errorf("key %q: CLUSTER KEYSLOT %q = %d, want %d", key, name, slot, k.slot)
				}
			}
		}
	})
	t.Run("FencedSink", func(t *testing.T) {
		f, err := NewFencedSink(client, cleanPrefix(t, client))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{true, false, true} {
			tok := []uint64{2, 1, 3}[i]
			if ok, err := f.ApplyFenced(ctxT(t), "e", idemToken(tok), "v"); ok != want || err != nil {
				t.Fatalf("ApplyFenced(%d) = %v, %v", tok, ok, err)
			}
		}
	})
	t.Run("CheckConfig", func(t *testing.T) {
		s := newStore(t, client, Options{})
		ctx := ctxT(t)
		if err := s.CheckConfig(ctx); err != nil {
			t.Fatalf("CheckConfig on noeviction cluster: %v", err)
		}
		node := redis.NewClient(&redis.Options{Addr: addrs[1]})
		defer node.Close()
		if err := node.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatal(err)
		}
		defer node.ConfigSet(ctx, "maxmemory-policy", "noeviction")
		if err := s.CheckConfig(ctx); !errors.Is(err, ErrEvictionPolicy) {
			t.Fatalf("CheckConfig with one allkeys-lru master: %v, want ErrEvictionPolicy", err)
		}
	})
}
