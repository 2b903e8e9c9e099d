//go:build unix

package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/history"
)

// SentinelMaster is the name the Sentinels of a RedisSentinel monitor the
// primary under (redis.FailoverOptions.MasterName).
const SentinelMaster = "idem"

// RedisSentinelOptions configures StartRedisSentinel. The zero value is a
// primary with one replica, directly linked, and three Sentinels that call
// the primary down after 500 milliseconds.
type RedisSentinelOptions struct {
	// Replicas is 1 (the zero value) or 2.
	Replicas int
	// ReplicationLag[i], when positive, routes replica i's link to the
	// primary through a proxy that holds every byte for that long and drops
	// what it holds when the primary dies (see the package doc): writes the
	// primary acknowledged within the last ReplicationLag[i] before it died
	// never reach replica i. Missing or zero entries link directly.
	ReplicationLag []time.Duration
	// ReplicaPriority gives replica i the replica-priority
	// ReplicaPriority[i] (Sentinel promotes the lowest first, before it
	// compares replication offsets). Missing or zero entries mean Redis's
	// default, 100.
	ReplicaPriority []int
	// DownAfter is the Sentinels' down-after-milliseconds. Zero means 500
	// milliseconds.
	DownAfter time.Duration
	// Binary is the redis-server executable. Empty looks it up in PATH.
	Binary string
}

// RedisSentinel is a Redis primary with replicas and three Sentinels, each
// a private redis-server process (StartRedis) on a loopback port, in its
// own temporary directory. Its methods are safe for concurrent use.
type RedisSentinel struct {
	nodes     []*Redis // nodes[0] is the first primary
	sentinels []*Redis
	proxies   []*lagProxy

	stopGuard     // serializes Failover, its steps and Stop
	primary   int // index in nodes of the current primary
	dead      map[int]bool
	killed    int // index of a primary KillPrimary killed and no Promote followed, else -1
}

var _ StepFailover = (*RedisSentinel)(nil)

// StartRedisSentinel starts a primary, its replicas (replicaof the primary,
// or the lag proxy in front of it) and three Sentinels monitoring it as
// SentinelMaster with quorum 2, and waits until every replica's link is up
// and every Sentinel knows the other two and every replica. The servers run
// without persistence, with maxmemory-policy noeviction and diskless
// replication without delay. If ctx has no deadline, it gives up after 60
// seconds. On error nothing is left running and every directory is
// removed.
func StartRedisSentinel(ctx context.Context, opts RedisSentinelOptions) (*RedisSentinel, error) {
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.Replicas < 1 || opts.Replicas > 2 {
		return nil, fmt.Errorf("servers: sentinel topology with %d replicas (1 or 2)", opts.Replicas)
	}
	if opts.DownAfter == 0 {
		opts.DownAfter = 500 * time.Millisecond
	}
	if opts.DownAfter < 0 || slices.ContainsFunc(opts.ReplicationLag, func(d time.Duration) bool { return d < 0 }) {
		return nil, errors.New("servers: negative ReplicationLag or DownAfter")
	}
	ctx, cancel := withStartTimeout(ctx, 2*redisStartTimeout)
	defer cancel()
	s := &RedisSentinel{dead: map[int]bool{}, killed: -1}
	register(s)
	if err := s.start(ctx, opts); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func (s *RedisSentinel) start(ctx context.Context, opts RedisSentinelOptions) error {
	ropts := RedisOptions{Binary: opts.Binary}
	nodeArgs := []string{"--repl-diskless-sync-delay", "0"}
	primary, err := startRedis(ctx, ropts, redisRole{args: nodeArgs})
	if err != nil {
		return err
	}
	if err := s.keep(&s.nodes, primary); err != nil {
		return err
	}
	for i := range opts.Replicas {
		port := primary.Port()
		if i < len(opts.ReplicationLag) && opts.ReplicationLag[i] > 0 {
			p, err := startLagProxy(primary.Addr(), opts.ReplicationLag[i])
			if err != nil {
				return err
			}
			s.mu.Lock()
			s.proxies = append(s.proxies, p)
			stopped := s.stopped
			s.mu.Unlock()
			if stopped {
				return errors.Join(ErrStopped, p.Close())
			}
			port = p.Port()
		}
		args := append(cloneArgs(nodeArgs), "--replicaof", "127.0.0.1", strconv.Itoa(port))
		if i < len(opts.ReplicaPriority) && opts.ReplicaPriority[i] != 0 {
			args = append(args, "--replica-priority", strconv.Itoa(opts.ReplicaPriority[i]))
		}
		r, err := startRedis(ctx, ropts, redisRole{args: args})
		if err != nil {
			return err
		}
		if err := s.keep(&s.nodes, r); err != nil {
			return err
		}
	}
	for _, r := range s.nodes[1:] {
		if err := waitReplicaLinked(ctx, r.Addr()); err != nil {
			return err
		}
	}
	conf := func(dir string, _ int) (string, error) {
		path := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
			"sentinel down-after-milliseconds %[1]s %[3]d\n"+
			"sentinel failover-timeout %[1]s 10000\n"+
			"sentinel parallel-syncs %[1]s 1\n", SentinelMaster, primary.Port(), opts.DownAfter.Milliseconds())
		return path, os.WriteFile(path, []byte(text), 0o644)
	}
	for range 3 {
		r, err := startRedis(ctx, ropts, redisRole{conf: conf, args: []string{"--sentinel"}})
		if err != nil {
			return err
		}
		if err := s.keep(&s.sentinels, r); err != nil {
			return err
		}
	}
	for _, sn := range s.sentinels {
		if err := waitSentinelReady(ctx, sn.Addr(), len(s.sentinels)-1, opts.Replicas); err != nil {
			return err
		}
	}
	return nil
}

func cloneArgs(a []string) []string { return append([]string(nil), a...) }

// keep appends r to *list unless Stop (or StopAll) ran meanwhile; then it
// stops r and returns ErrStopped, so a start cut short leaves nothing.
func (s *RedisSentinel) keep(list *[]*Redis, r *Redis) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.Join(ErrStopped, r.Stop())
	}
	*list = append(*list, r)
	return nil
}

// waitReplicaLinked waits until the replica at addr reports
// master_link_status:up.
func waitReplicaLinked(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var info string
	err := poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
		info, _ = c.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up"), nil
	})
	if err != nil {
		return fmt.Errorf("servers: replica %s did not link to its primary: %w (%s)", addr, err, strings.TrimSpace(info))
	}
	return nil
}

// waitSentinelReady waits until the Sentinel at addr sees the primary up
// with the given numbers of other Sentinels and of replicas.
func waitSentinelReady(ctx context.Context, addr string, others, replicas int) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var m map[string]string
	err := poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		m, _ = c.Master(ctx, SentinelMaster).Result()
		return m["flags"] == "master" && m["num-other-sentinels"] == strconv.Itoa(others) &&
			m["num-slaves"] == strconv.Itoa(replicas), nil
	})
	if err != nil {
		return fmt.Errorf("servers: sentinel %s not ready: %w (sees %v)", addr, err, m)
	}
	return nil
}

// SentinelAddrs returns the Sentinels' 127.0.0.1:PORT addresses.
func (s *RedisSentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, sn := range s.sentinels {
		addrs[i] = sn.Addr()
	}
	return addrs
}

// Nodes returns the data nodes; Nodes()[0] is the first primary.
func (s *RedisSentinel) Nodes() []*Redis { return s.nodes }

// Sentinels returns the three Sentinel processes.
func (s *RedisSentinel) Sentinels() []*Redis { return s.sentinels }

// FailoverOptions returns options for redis.NewFailoverClient that find
// the primary through the Sentinels and follow a failover: after one, new
// connections go to the promoted replica. Timeouts are short (dial 1s,
// read and write 3s) so a call to the dead primary fails fast.
func (s *RedisSentinel) FailoverOptions() *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:    SentinelMaster,
		SentinelAddrs: s.SentinelAddrs(),
		DialTimeout:   time.Second,
		ReadTimeout:   3 * time.Second,
		WriteTimeout:  3 * time.Second,
	}
}

// Primary returns the current primary as this topology knows it: the first
// node until a Failover promoted another.
func (s *RedisSentinel) Primary() *Redis {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[s.primary]
}

// Failover kills the current primary with SIGKILL and waits until the
// Sentinels promoted a replica: a Sentinel names another node for
// SentinelMaster and that node reports role:master. The old primary stays
// down. It fails with ErrNoReplica when no live replica is left, and after
// Stop with ErrStopped. If ctx has no deadline, it gives up after 60
// seconds. See Topology.
func (s *RedisSentinel) Failover(ctx context.Context, key string) (history.Op, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return failover(ctx, key, "redis-sentinel", s.killPrimaryLocked, func(ctx context.Context, old *Redis) (string, error) {
		next, err := s.awaitPromotion(ctx, old.Addr())
		if err != nil {
			return "", err
		}
		s.primary = next
		return s.nodes[next].Addr(), nil
	})
}

// KillPrimary is the first step of a failover taken in two
// (StepFailover): it kills the current primary with SIGKILL and returns at
// once, so that writes meet a dead primary; no replica is promoted before
// Promote unless the Sentinels call the primary down on their own after
// DownAfter (set DownAfter longer than the gap between the two steps). It
// fails with ErrNoReplica when no live replica would be left, and after
// Stop with ErrStopped.
func (s *RedisSentinel) KillPrimary() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.killPrimaryLocked()
	if err != nil {
		return "", err
	}
	s.killed = s.primary
	return "kill primary " + old.Addr(), nil
}

// killPrimaryLocked is the kill both kinds of failover start with, under
// s.mu: it refuses after Stop, between KillPrimary and Promote and when no
// live replica would be left, and otherwise kills the primary and marks
// it dead. It returns the primary it tried to kill (nil when refused).
func (s *RedisSentinel) killPrimaryLocked() (*Redis, error) {
	switch {
	case s.stopped:
		return nil, ErrStopped
	case s.killed >= 0:
		return nil, fmt.Errorf("servers: primary %s already killed, not promoted yet", s.nodes[s.killed].Addr())
	case len(s.dead)+1 >= len(s.nodes):
		return nil, ErrNoReplica
	}
	old := s.nodes[s.primary]
	if err := old.Kill(); err != nil {
		return old, err
	}
	s.dead[s.primary] = true
	return old, nil
}

// Promote is the second step of a failover taken in two: it asks the
// Sentinels to fail over now (SENTINEL FAILOVER, which does not wait for
// down-after-milliseconds) and waits until a replica was promoted and says
// it is the primary. It needs a KillPrimary before it. If ctx has no
// deadline, it gives up after 60 seconds.
func (s *RedisSentinel) Promote(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return "", ErrStopped
	}
	if s.killed < 0 {
		return "", errors.New("servers: Promote without KillPrimary")
	}
	ctx, cancel := withStartTimeout(ctx, failoverTimeout)
	defer cancel()
	old := s.nodes[s.killed].Addr()
	// Any one Sentinel may run the failover; one that answers INPROG has
	// already started it (on its own, or asked before).
	var asked error
	for _, sn := range s.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), MaxRetries: -1})
		err := c.Failover(ctx, SentinelMaster).Err()
		_ = c.Close()
		if err == nil || strings.Contains(err.Error(), "INPROG") {
			asked = nil
			break
		}
		asked = errors.Join(asked, err)
	}
	if asked != nil {
		return "", fmt.Errorf("servers: no Sentinel took the failover: %w", asked)
	}
	next, err := s.awaitPromotion(ctx, old)
	if err != nil {
		return "", err
	}
	s.primary, s.killed = next, -1
	return "promoted " + s.nodes[next].Addr(), nil
}

// awaitPromotion waits until a Sentinel names a node other than old as
// the primary and that node says it is one; it returns the node's index.
func (s *RedisSentinel) awaitPromotion(ctx context.Context, old string) (int, error) {
	clients := make([]*redis.SentinelClient, len(s.sentinels))
	for i, sn := range s.sentinels {
		clients[i] = redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), MaxRetries: -1})
		defer clients[i].Close()
	}
	next := -1
	err := poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, c := range clients {
			addr, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
			if err != nil || len(addr) != 2 {
				continue
			}
			a := addr[0] + ":" + addr[1]
			for i, n := range s.nodes {
				if a != old && n.Addr() == a && !s.dead[i] && isRedisPrimary(ctx, a) {
					next = i
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return -1, fmt.Errorf("servers: no replica promoted after %s died: %w", old, err)
	}
	return next, nil
}

// isRedisPrimary reports whether the server at addr says role:master.
func isRedisPrimary(ctx context.Context, addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "role:master")
}

// Stop stops the Sentinels, the lag proxies and the data nodes (SIGKILL),
// waits for them and removes their directories. It is idempotent.
func (s *RedisSentinel) Stop() error {
	return s.stopOnce(s, func() error {
		err := stopAll(s.sentinels)
		for _, p := range s.proxies {
			err = errors.Join(err, p.Close())
		}
		return errors.Join(err, stopAll(s.nodes))
	})
}
