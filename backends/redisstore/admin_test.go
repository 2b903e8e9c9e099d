package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// adminConfig gives every case a store with a private prefix on client.
func adminConfig(client redis.UniversalClient) storetest.Config {
	return storetest.Config{New: func(t *testing.T) idem.Store { return newStore(t, client, Options{}) }}
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	storetest.Admin(t, adminConfig(newClient(t)))
}

// TestAdminCluster lists and counts records spread over the three primaries
// of a private Redis Cluster.
func TestAdminCluster(t *testing.T) {
	t.Parallel()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: startCluster(t)})
	t.Cleanup(func() { _ = client.Close() })
	storetest.Admin(t, adminConfig(client))
}

func TestKeyOfInvertsRecordNames(t *testing.T) {
	s := &Store{opts: Options{Prefix: "p*"}}
	for _, key := range []string{"k", "a}b{c", "%", "%7B", "x:y", "%257D"} {
		got, ok := s.keyOf(keysFor("p*", key).record)
		if !ok || got != key {
			t.Errorf("keyOf(record of %q) = %q, %v", key, got, ok)
		}
	}
	for _, name := range []string{"p*:fence:{0}", "q:{k}", "p*:{k}x", "p*:{a{b}"} {
		if k, ok := s.keyOf(name); ok {
			t.Errorf("keyOf(%q) = %q, want no key", name, k)
		}
	}
	if got := globEscape(`a*b?c[d]e\`); got != `a\*b\?c\[d\]e\\` {
		t.Errorf("globEscape = %q", got)
	}
}
