//go:build linux

package servers

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/history"
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
	topo, err := StartRedisSentinel(ctx, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Stop()
	client := redis.NewFailoverClient(topo.FailoverOptions())
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Options{WaitReplicas: c.wait})
	if err != nil {
		t.Fatal(err)
	}
	old := topo.Primary()
	o := runTrial(ctx, store, topo, key)
	if o.window.Kind != history.KindFault || o.window.Return == history.NoReturn || o.window.Call >= o.window.Return || o.window.Key != key {
		t.Errorf("fault window %+v", o.window)
	}
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
		assertPortFree(t, p.port())
	}
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	needRedis(t)
	for i, c := range sentinelCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.name == "async, direct link" || c.name == "WAIT 1, 2 replicas, one lagging, equal priority" {
				t.Skip("measured by TestFailoverTrialsSentinel")
			}
			o := sentinelTrial(t, c, fmt.Sprintf("k%d", i))
			t.Logf("Do %v (err %v), failover %v, record on the promoted primary: %s; retry ran again %v (same token %v, err %v)", o.doTook, o.doErr, o.failover, o.status, o.reran, o.sameTok, o.retryErr)
			if o.reran != o.lost {
				t.Errorf("retry ran the function again = %v, but completion lost = %v", o.reran, o.lost)
			}
			if o.doErr != nil {
				t.Fatalf("Do: %v", o.doErr)
			}
			if o.lost != c.wantLost {
				t.Errorf("completion lost = %v (record %s), want %v", o.lost, o.status, c.wantLost)
			}
		})
	}
}

func TestFailoverTrialsSentinel(t *testing.T) {
	needRedis(t)
	n := trials(t)
	for _, c := range sentinelCases {
		t.Run(c.name, func(t *testing.T) {
			var outs []outcome
			for i := range n {
				outs = append(outs, sentinelTrial(t, c, fmt.Sprintf("k%d", i)))
			}
			report(t, "redis sentinel, "+c.name, outs)
		})
	}
}
