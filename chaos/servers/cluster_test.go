//go:build linux

package servers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/history"
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
	topo, err := StartRedisCluster(ctx, RedisClusterOptions{ReplicationLag: c.lag})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
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
	if w := o.window; w.Kind != history.KindFault || w.Return == history.NoReturn || w.Call >= w.Return || w.Key != key {
		t.Errorf("fault window %+v", w)
	}
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
		if ln, err := net.Listen("tcp", p.ln.Addr().String()); err != nil {
			t.Errorf("lag proxy address %s still taken: %v", p.ln.Addr(), err)
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
	t.Parallel()
	needRedis(t)
	for i, c := range clusterCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := clusterTrial(t, c, fmt.Sprintf("k%d", i))
			t.Logf("Do %v (err %v), failover %v, record on the promoted replica: %s; retry ran again %v (same token %v, err %v)", o.doTook, o.doErr, o.failover, o.status, o.reran, o.sameTok, o.retryErr)
			if o.reran != o.lost {
				t.Errorf("retry ran the function again = %v, but completion lost = %v", o.reran, o.lost)
			}
			if o.doErr != nil {
				t.Fatalf("Do: %v", o.doErr)
			}
			if c.mustKeep && o.lost {
				t.Errorf("completion lost (record %s) although WAIT 1 acknowledged it", o.status)
			}
			if c.mustLose && !o.lost {
				t.Errorf("completion kept (record %s) although the replica lags by %v", o.status, c.lag)
			}
		})
	}
}

func TestFailoverTrialsCluster(t *testing.T) {
	needRedis(t)
	n := trials(t)
	for _, c := range clusterCases {
		t.Run(c.name, func(t *testing.T) {
			var outs []outcome
			for i := range n {
				outs = append(outs, clusterTrial(t, c, fmt.Sprintf("k%d", i)))
			}
			report(t, "redis cluster, "+c.name, outs)
		})
	}
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

// TestClusterStepFailover takes a Cluster failover in two steps, on the
// topology of the redis-cluster-wait failover (two lagging replicas per
// primary, a node timeout longer than the gap): nothing takes the killed
// primary's slot over until Promote, writes to it fail in between, and
// after Promote the slot is served by a replica and WAIT 1 is met again
// (the primary's other replica follows the new one).
func TestClusterStepFailover(t *testing.T) {
	t.Parallel()
	needRedis(t)
	ctx := testContext(t)
	topo, err := StartRedisCluster(ctx, RedisClusterOptions{ReplicasPerPrimary: 2, NodeTimeout: 20 * time.Second, ReplicationLag: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	if _, err := topo.Promote(ctx); err == nil {
		t.Fatal("Promote before KillPrimary succeeded")
	}
	client := topo.NewClient()
	defer client.Close()
	const key = "idem:{k1}"
	if err := client.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot := keySlot("k1")
	owner, _, err := topo.slotNodes(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	label, err := topo.KillPrimary("k1")
	if want := fmt.Sprintf("kill primary %s of slot %d", topo.Nodes()[owner].Addr(), slot); err != nil || label != want {
		t.Fatalf("KillPrimary = %q, %v; want %q", label, err, want)
	}
	if _, err := topo.KillPrimary("k1"); err != ErrNoReplica {
		t.Fatalf("second KillPrimary = %v, want ErrNoReplica", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err = client.Set(wctx, key, "between", 0).Err()
	cancel()
	if err == nil {
		t.Fatal("a write between KillPrimary and Promote succeeded")
	}
	time.Sleep(time.Second) // well past the lag, well inside the node timeout
	if n, _, err := topo.slotNodes(ctx, slot); err != nil || n != owner {
		t.Fatalf("slot %d owned by node %d (%v) before Promote, want the killed %d", slot, n, err, owner)
	}
	label, err = topo.Promote(ctx)
	if err != nil || !strings.HasPrefix(label, "promoted ") {
		t.Fatalf("Promote = %q, %v", label, err)
	}
	next, replicas, err := topo.slotNodes(ctx, slot)
	if err != nil || next == owner || label != "promoted "+topo.Nodes()[next].Addr() {
		t.Fatalf("after Promote slot %d is owned by %d (%v), label %q", slot, next, err, label)
	}
	var got string
	if err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := client.Set(ctx, key, "after", 0).Err(); err != nil {
			return false, nil
		}
		got, err = client.Get(ctx, key).Result()
		return true, err
	}); err != nil || got != "after" {
		t.Fatalf("write after Promote: %q, %v", got, err)
	}
	// The other replica follows the new primary, so WAIT 1 is met.
	if err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, replicas, err = topo.slotNodes(ctx, slot)
		return err == nil && replicas == 1, nil
	}); err != nil {
		t.Fatalf("the new primary has %d live replicas, want 1: %v", replicas, err)
	}
	direct := redis.NewClient(&redis.Options{Addr: topo.Nodes()[next].Addr()})
	defer direct.Close()
	conn := direct.Conn()
	defer conn.Close()
	if err := conn.Set(ctx, key, "waited", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 after a write on the new primary = %d, %v", n, err)
	}
}
