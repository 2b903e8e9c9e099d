//go:build linux

package servers

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/redisstore"
)

// sentinelCase is one replicated Redis configuration and its expected
// outcome under an aimed failover.
type sentinelCase struct {
	name     string
	opts     RedisSentinelOptions
	wait     int  // redisstore WaitReplicas
	wantLost bool // for the CI test: what must happen every time
}

var sentinelCases = []sentinelCase{
	{"async, direct link", RedisSentinelOptions{}, 0, false},
	{"async, 200ms lag", RedisSentinelOptions{ReplicationLag: []time.Duration{200 * time.Millisecond}}, 0, true},
	{"WAIT 1, 200ms lag", RedisSentinelOptions{ReplicationLag: []time.Duration{200 * time.Millisecond}}, 1, false},
	// Two replicas: the one that acknowledges WAIT at once has the default
	// priority; Sentinel prefers the lagging one (priority 10) whatever
	// its offset.
	{"WAIT 1, 2 replicas, lagging one preferred", RedisSentinelOptions{Replicas: 2,
		ReplicationLag: []time.Duration{0, 300 * time.Millisecond}, ReplicaPriority: []int{100, 10}}, 1, true},
	// The same with equal priorities: Sentinel picks the larger offset.
	{"WAIT 1, 2 replicas, one lagging, equal priority", RedisSentinelOptions{Replicas: 2,
		ReplicationLag: []time.Duration{0, 300 * time.Millisecond}}, 1, false},
}

// sentinelTrial runs one trial of c on a fresh topology, which it stops
// and checks for leftovers.
func sentinelTrial(t *testing.T, c sentinelCase, key string) outcome {
	t.Helper()
	ctx := testContext(t)
	topo := start(ctx, t, StartRedisSentinel, c.opts)
	client := redis.NewFailoverClient(topo.FailoverOptions())
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Options{WaitReplicas: c.wait})
	if err != nil {
		t.Fatal(err)
	}
	old := topo.Primary()
	o := runTrial(ctx, store, topo, key)
	checkWindow(t, o, key)
	if topo.Primary() == old {
		t.Errorf("primary still %s after Failover", old.Addr())
	}
	if _, err := topo.Failover(ctx, key); c.opts.Replicas < 2 && err != ErrNoReplica {
		t.Errorf("second Failover with no replica left = %v, want ErrNoReplica", err)
	}
	_ = client.Close()
	assertTopologyGone(t, topo)
	return o
}

// assertTopologyGone stops a Sentinel topology and checks that none of its
// processes, ports or directories remain.
func assertTopologyGone(t *testing.T, topo *RedisSentinel) {
	t.Helper()
	if err := topo.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(topo.Nodes(), topo.Sentinels()...) {
		assertGone(t, r.PID(), r.Port(), r.Dir(), r.Dir())
	}
	for _, p := range topo.proxies {
		assertPortFree(t, p.Port())
	}
}

func TestSentinelFailover(t *testing.T) {
	needRedis(t)
	failoverCases(t, sentinelCases, func(c sentinelCase) string { return c.name }, func(t *testing.T, c sentinelCase, key string) {
		if c.name == "async, direct link" || c.name == "WAIT 1, 2 replicas, one lagging, equal priority" {
			t.Skip("measured by TestFailoverTrialsSentinel")
		}
		o := sentinelTrial(t, c, key)
		checkOutcome(t, o, "the promoted primary")
		if o.lost != c.wantLost {
			t.Errorf("completion lost = %v (record %s), want %v", o.lost, o.status, c.wantLost)
		}
	})
}

func TestFailoverTrialsSentinel(t *testing.T) {
	needRedis(t)
	reportTrials(t, "redis sentinel", sentinelCases, func(c sentinelCase) string { return c.name }, sentinelTrial)
}

// TestSentinelStepFailover takes a failover in two steps: nothing is
// promoted while the primary is dead until Promote asks the Sentinels,
// and writes sent in between fail at once instead of waiting.
func TestSentinelStepFailover(t *testing.T) {
	t.Parallel()
	needRedis(t)
	ctx := testContext(t)
	topo := start(ctx, t, StartRedisSentinel, RedisSentinelOptions{DownAfter: 30 * time.Second})
	if _, err := topo.Promote(ctx); err == nil {
		t.Fatal("Promote before KillPrimary succeeded")
	}
	client := redis.NewFailoverClient(topo.FailoverOptions())
	defer client.Close()
	if err := client.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old, replica := topo.Primary(), topo.Nodes()[1]
	label, err := topo.KillPrimary()
	if err != nil || label != "kill primary "+old.Addr() {
		t.Fatalf("KillPrimary = %q, %v", label, err)
	}
	if _, err := topo.KillPrimary(); err == nil {
		t.Fatal("second KillPrimary before Promote succeeded")
	}
	if _, err := topo.Failover(ctx, "k"); err == nil {
		t.Fatal("Failover between KillPrimary and Promote succeeded")
	}
	start := time.Now()
	if err := client.Set(ctx, "k", "between", 0).Err(); err == nil {
		t.Fatal("a write between KillPrimary and Promote succeeded")
	} else if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the write between the steps failed after %v, want at once (%v)", took, err)
	}
	if isRedisPrimary(ctx, replica.Addr()) {
		t.Fatal("the replica was promoted before Promote")
	}
	label, err = topo.Promote(ctx)
	if err != nil || label != "promoted "+replica.Addr() || topo.Primary() != replica {
		t.Fatalf("Promote = %q, %v; primary %s, want %s", label, err, topo.Primary().Addr(), replica.Addr())
	}
	var got string
	if err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := client.Set(ctx, "k", "after", 0).Err(); err != nil {
			return false, nil
		}
		got, err = client.Get(ctx, "k").Result()
		return true, err
	}); err != nil || got != "after" {
		t.Fatalf("write after Promote: %q, %v", got, err)
	}
	if _, err := topo.KillPrimary(); err != ErrNoReplica {
		t.Fatalf("KillPrimary with no replica left = %v, want ErrNoReplica", err)
	}
	_ = client.Close()
	assertTopologyGone(t, topo)
}
