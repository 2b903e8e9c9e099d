//go:build linux

package servers

import (
	"net"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/redisstore"
)

// clusterCase is one Cluster configuration. Without a lag proxy an async
// outcome is a race on loopback and only measured.
type clusterCase struct {
	name     string
	wait     int
	lag      time.Duration
	mustKeep bool // the CI test asserts the completion survives
	mustLose bool // ... or that it is lost
}

var clusterCases = []clusterCase{
	{name: "async"},
	{name: "async, 200ms lag", lag: 200 * time.Millisecond, mustLose: true},
	{name: "WAIT 1", wait: 1, mustKeep: true},
}

// clusterTrial runs one trial of c on a fresh Cluster, which it stops and
// checks for leftovers.
func clusterTrial(t *testing.T, c clusterCase, key string) outcome {
	t.Helper()
	ctx := testContext(t)
	topo := start(ctx, t, StartRedisCluster, RedisClusterOptions{ReplicationLag: c.lag})
	client := topo.NewClient()
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Options{WaitReplicas: c.wait})
	if err != nil {
		t.Fatal(err)
	}
	if slot, err := client.ClusterKeySlot(ctx, "idem:{"+key+"}").Result(); err != nil || int(slot) != keySlot(key) {
		t.Fatalf("CLUSTER KEYSLOT = %d, %v; keySlot(%q) = %d", slot, err, key, keySlot(key))
	}
	o := runTrial(ctx, store, topo, key)
	checkWindow(t, o, key)
	if _, err := topo.Failover(ctx, key); err != ErrNoReplica {
		t.Errorf("second Failover of the same slot = %v, want ErrNoReplica", err)
	}
	_ = client.Close()
	if err := topo.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, r := range topo.Nodes() {
		assertGone(t, r.PID(), r.Port(), r.Dir(), r.Dir())
	}
	for _, p := range topo.proxies {
		if ln, err := net.Listen("tcp", p.Addr()); err != nil {
			t.Errorf("lag proxy address %s still taken: %v", p.Addr(), err)
		} else {
			ln.Close()
		}
	}
	if c.lag > 0 && len(topo.proxies) != len(topo.Nodes()) { // a pair per primary, one replica each
		t.Errorf("%d lag proxies for %d nodes, want a pair per primary", len(topo.proxies), len(topo.Nodes()))
	}
	return o
}

func TestClusterFailover(t *testing.T) {
	needRedis(t)
	failoverCases(t, clusterCases, func(c clusterCase) string { return c.name }, func(t *testing.T, c clusterCase, key string) {
		o := clusterTrial(t, c, key)
		checkOutcome(t, o, "the promoted replica")
		if c.mustKeep && o.lost {
			t.Errorf("completion lost (record %s) although WAIT 1 acknowledged it", o.status)
		}
		if c.mustLose && !o.lost {
			t.Errorf("completion kept (record %s) although the replica lags by %v", o.status, c.lag)
		}
	})
}

func TestFailoverTrialsCluster(t *testing.T) {
	needRedis(t)
	reportTrials(t, "redis cluster", clusterCases, func(c clusterCase) string { return c.name }, clusterTrial)
}

func TestKeySlot(t *testing.T) {
	tests := []struct {
		key  string
		want int
	}{
		{"foo", 12182},       // the examples of the Redis Cluster specification
		{"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
		{"{foo}.bar", 12182}, // a hash tag: the slot of "foo"
		{"x{foo}{bar}", 12182},
	}
	for _, tc := range tests {
		if got := keySlot(tc.key); got != tc.want {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
