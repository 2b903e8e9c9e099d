package backendfault

import (
	"context"
	"fmt"
	neturl "net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// FailoverKind names a replicated topology a run's store is failed over
// on.
type FailoverKind string

// The failover topologies, each with FailoverLag of replication lag.
const (
	// RedisSentinel is a Redis primary, one asynchronous replica and
	// three Sentinels; the store follows the promotion through them.
	RedisSentinel FailoverKind = "redis-sentinel"
	// RedisWait is RedisSentinel with the store sending WAIT 1 after
	// every write (redisstore.Options.WaitReplicas).
	RedisWait FailoverKind = "redis-wait"
	// RedisCluster is a Redis Cluster of three primaries with one
	// asynchronous replica each; the primary of the completed key's slot
	// is killed and its replica takes over. The store follows through a
	// ClusterClient that reloads its slot map when a dial fails.
	RedisCluster FailoverKind = "redis-cluster"
	// PostgresAsync is a PostgreSQL primary with an asynchronous streaming
	// standby; the store follows through a multi-host URL.
	PostgresAsync FailoverKind = "postgres-async"
	// PostgresSync is PostgresAsync with synchronous_commit = on and the
	// standby synchronous.
	PostgresSync FailoverKind = "postgres-sync"
)

// FailoverKinds lists every FailoverKind.
var FailoverKinds = []FailoverKind{RedisSentinel, RedisWait, RedisCluster, PostgresAsync, PostgresSync}

// FailoverLag is the replication lag of every failover topology: writes
// acknowledged within it before the primary dies never reach the replica.
const FailoverLag = 200 * time.Millisecond

// Redis URL query parameters that redis.ParseFailoverURL does not know:
// a store factory that finds them sends WAIT after every write
// (redisstore.Options.WaitReplicas, WaitTimeout) and removes them before
// parsing the rest.
const (
	WaitReplicasParam = "wait_replicas"
	WaitTimeoutParam  = "wait_timeout"
)

// ClusterParam, set to "true" in a Redis URL, says the URL is a Cluster's
// (redis.ParseClusterURL: the first node as host, the others as addr
// parameters): a store factory that finds it opens a ClusterClient that
// follows a failover (servers.FollowClusterFailover) and removes it before
// parsing the rest.
const ClusterParam = "cluster"

// Backend returns the backend the kind runs on: "redis" or "postgres".
func (k FailoverKind) Backend() string {
	if k == RedisSentinel || k == RedisWait || k == RedisCluster {
		return "redis"
	}
	return "postgres"
}

// ParseFailoverKind returns the kind called s, or an error wrapping
// ErrPlan.
func ParseFailoverKind(s string) (FailoverKind, error) {
	if k := FailoverKind(s); slices.Contains(FailoverKinds, k) {
		return k, nil
	}
	return "", fmt.Errorf("%w: failover %q: want redis-sentinel, redis-wait, redis-cluster, postgres-async or postgres-sync", ErrPlan, s)
}

// Failover is a replicated topology whose primary a run fails over once,
// aimed. On an asynchronous topology it is aimed right after the engine
// recorded a completion (idem.PointAfterComplete), before the reply
// reaches the client, so the completion the client is told about may exist
// on the dead primary only. On RedisWait and PostgresSync, where an
// acknowledged write is on a replica too, it is aimed at the window that
// replication leaves open: the primary is killed right after one
// execution's effect (idem.PointAfterFn), its completion meets the dead
// primary and fails, and only AfterEffectHold later is a replica
// promoted, with the claim still in progress: a crash after the effect.
type Failover struct {
	Kind     FailoverKind
	Topology servers.Topology
	// URL is the store's URL, one that follows the promotion: the
	// Sentinels' (go-redis failover URL) or the multi-host PostgreSQL URL.
	URL string
	// Hold, when positive, replaces AfterEffectHold. On RedisWait the
	// Sentinels promote on their own 4×AfterEffectHold after the kill.
	Hold time.Duration
}

// AfterEffectHold is how long an aimed failover after an effect keeps the
// primary dead before it promotes a replica: longer than the store
// client's retries of the completion (go-redis: 3 retries, at most 512ms
// apart, each refused at once by the dead port; pgx: the dead primary
// refuses, the standby is not read-write).
const AfterEffectHold = 3 * time.Second

// afterEffect reports whether f is aimed after an effect, not after a
// completion.
func (f *Failover) afterEffect() (servers.StepFailover, bool) {
	s, ok := f.Topology.(servers.StepFailover)
	return s, ok && (f.Kind == RedisWait || f.Kind == PostgresSync)
}

// StartFailover starts the topology of kind with FailoverLag of
// replication lag and returns it with a function that stops it, which is
// never nil.
func StartFailover(ctx context.Context, kind FailoverKind) (*Failover, func(), error) {
	f := &Failover{Kind: kind}
	switch kind {
	case RedisSentinel, RedisWait:
		opts := servers.RedisSentinelOptions{ReplicationLag: []time.Duration{FailoverLag}}
		if kind == RedisWait {
			// Two lagging replicas of equal priority: WAIT 1 is met by one,
			// Sentinel promotes the one with the larger offset, and the
			// other follows the new primary, so WAIT 1 is met after the
			// failover too (with one replica no write would be).
			opts.Replicas, opts.ReplicationLag = 2, []time.Duration{FailoverLag, FailoverLag}
			// The Sentinels must not promote on their own while the
			// aimed failover holds the primary dead (AfterEffectHold).
			opts.DownAfter = 4 * AfterEffectHold
		}
		s, err := servers.StartRedisSentinel(ctx, opts)
		if err != nil {
			return nil, func() {}, err
		}
		f.Topology, f.URL = s, sentinelURL(s, kind == RedisWait)
	case RedisCluster:
		c, err := servers.StartRedisCluster(ctx, servers.RedisClusterOptions{ReplicationLag: FailoverLag})
		if err != nil {
			return nil, func() {}, err
		}
		f.Topology, f.URL = c, clusterURL(c)
	case PostgresAsync, PostgresSync:
		opts := servers.PostgresReplicatedOptions{ReplicationLag: FailoverLag}
		if kind == PostgresSync {
			opts.SynchronousCommit = "on"
		}
		t, err := servers.StartPostgresReplicated(ctx, opts)
		if err != nil {
			return nil, func() {}, err
		}
		f.Topology, f.URL = t, t.URL()
	default:
		return nil, func() {}, fmt.Errorf("%w: failover kind %q", ErrPlan, kind)
	}
	return f, func() { _ = f.Topology.Stop() }, nil
}

// sentinelURL is the go-redis failover URL of s (redis.ParseFailoverURL),
// with the WAIT parameters when wait.
func sentinelURL(s *servers.RedisSentinel, wait bool) string {
	o := s.FailoverOptions()
	q := neturl.Values{}
	q.Set("master_name", o.MasterName)
	for _, a := range o.SentinelAddrs[1:] {
		q.Add("addr", a)
	}
	q.Set("dial_timeout", o.DialTimeout.String())
	q.Set("read_timeout", o.ReadTimeout.String())
	q.Set("write_timeout", o.WriteTimeout.String())
	if wait {
		q.Set(WaitReplicasParam, "1")
		q.Set(WaitTimeoutParam, time.Second.String())
	}
	return "redis://" + o.SentinelAddrs[0] + "/0?" + q.Encode()
}

// clusterURL is the go-redis Cluster URL of c (redis.ParseClusterURL)
// with ClusterParam, and the timeouts of c.NewClient.
func clusterURL(c *servers.RedisCluster) string {
	addrs := c.Addrs()
	q := neturl.Values{}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	q.Set("dial_timeout", time.Second.String())
	q.Set("read_timeout", (3 * time.Second).String())
	q.Set("write_timeout", (3 * time.Second).String())
	q.Set(ClusterParam, "true")
	return "redis://" + addrs[0] + "?" + q.Encode()
}

// caughtUp waits, when the topology can tell, until its replica has
// everything the primary wrote before the traffic (the store's schema):
// the failover is to lose a completion, not the table.
func (f *Failover) caughtUp(ctx context.Context) error {
	w, ok := f.Topology.(interface{ WaitCaughtUp(context.Context) error })
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return w.WaitCaughtUp(ctx)
}

// Hooker is an Env that also injects faults from the engine's fault hook;
// the harness composes its Hook with the scenario's.
type Hooker interface {
	// Hook returns the engine fault hook, or nil.
	Hook() idem.Hook
}

// failoverHook fires the failover once, at the first completion recorded
// while the schedule runs, and records its window.
func (e *env) failoverHook() idem.Hook {
	var fired atomic.Bool
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		if p != idem.PointAfterComplete || !e.running.Load() || !fired.CompareAndSwap(false, true) {
			return nil
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		op, err := e.plan.Failover.Topology.Failover(fctx, l.Key)
		if op.Kind != 0 {
			e.record(op)
		}
		if err != nil {
			e.fail(fmt.Errorf("failover %s: %w", e.plan.Failover.Kind, err))
		}
		return nil
	}
}

// afterEffectHook kills the primary once, at the first effect while the
// schedule runs (idem.PointAfterFn), and promotes a replica
// AfterEffectHold later (at once if the run stops first), so the
// completion of that execution meets the dead primary; it records the
// window from the kill to the promotion.
func (e *env) afterEffectHook(st servers.StepFailover) idem.Hook {
	var fired atomic.Bool
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		if p != idem.PointAfterFn || !e.running.Load() || !fired.CompareAndSwap(false, true) {
			return nil
		}
		start := history.Now()
		killed, err := st.KillPrimary()
		if err != nil {
			e.fail(fmt.Errorf("failover %s: %w", e.plan.Failover.Kind, err))
			return nil
		}
		e.aimWG.Go(func() {
			// The hold ends early when the run stops: the rest of the run
			// (recovery, the liveness probe) needs a primary.
			hold := e.plan.Failover.Hold
			if hold <= 0 {
				hold = AfterEffectHold
			}
			select {
			case <-time.After(hold):
			case <-e.runCtx.Done():
			}
			fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			promoted, err := st.Promote(fctx)
			label := fmt.Sprintf("failover %s: %s right after the effect of %s", e.plan.Failover.Kind, killed, l.Key)
			op := history.Fault(history.FaultFailover, label+", "+promoted, start, history.Now()).OnKey(l.Key, uint64(l.Token))
			if err != nil {
				op = history.Fault(history.FaultFailover, label, start, history.NoReturn).OnKey(l.Key, uint64(l.Token))
				op.Err = err.Error()
				e.fail(fmt.Errorf("failover %s: %w", e.plan.Failover.Kind, err))
			}
			e.record(op)
		})
		return nil
	}
}

// Hook returns the failover hook of a plan with a Failover, else nil.
func (e *env) Hook() idem.Hook {
	return e.hook
}

// aimHook switches p's aimed network fault on once, at the first execution
// that reaches its Point while the schedule runs (the effect happened, the
// completion is not written), and off its Duration later, so the
// completion's write goes into it.
func (e *env) aimHook() idem.Hook {
	var fired atomic.Bool
	a := *e.plan.Aim
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		if p != a.Point || !e.running.Load() || !fired.CompareAndSwap(false, true) {
			return nil
		}
		if err := e.proxy.On(a); err != nil {
			e.fail(fmt.Errorf("aimed %s: %w", a.Kind, err))
			return nil
		}
		e.aimWG.Go(func() {
			time.Sleep(a.Duration)
			if err := e.proxy.Off(a.Kind); err != nil {
				e.fail(fmt.Errorf("aimed %s: %w", a.Kind, err))
			}
		})
		return nil
	}
}
