//go:build unix

package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/history"
)

// RedisClusterOptions configures StartRedisCluster. The zero value is three
// primaries with one replica each and a one-second cluster-node-timeout.
type RedisClusterOptions struct {
	// Primaries is the number of primaries, each owning an equal share of
	// the 16384 slots. Zero means 3.
	Primaries int
	// ReplicasPerPrimary is the number of replicas of each primary. Zero
	// means 1; at most 2.
	ReplicasPerPrimary int
	// NodeTimeout is cluster-node-timeout: how long a primary must be
	// unreachable before the others mark it failed and its replica takes
	// over. Zero means one second.
	NodeTimeout time.Duration
	// Binary is the redis-server executable. Empty looks it up in PATH.
	Binary string
	// ReplicationLag, when positive, routes every replica's replication
	// link to its primary through a proxy that holds every byte for that
	// long and drops what it holds when the primary dies (see the package
	// doc). A Cluster replica connects to the address its primary
	// announces on the cluster bus, and clients to the one CLUSTER SLOTS
	// and MOVED name; so each primary announces ClusterLagIP (its
	// replicas' proxy, with a plain forwarder for the bus port beside it)
	// and the hostname 127.0.0.1, and every node sends clients to the
	// hostname (cluster-preferred-endpoint-type hostname). It needs
	// ClusterLagIP to be a loopback address, as on Linux.
	ReplicationLag time.Duration
}

// ClusterLagIP is the address the primaries of a RedisCluster with
// ReplicationLag announce to the cluster, where their replicas' lag
// proxies listen, on the primaries' own ports.
const ClusterLagIP = "127.0.0.2"

// RedisCluster is a Redis Cluster of private redis-server processes
// (StartRedis) on loopback ports, each in its own temporary directory. Its
// methods are safe for concurrent use.
type RedisCluster struct {
	nodes   []*Redis // primaries first, then their replicas in order
	proxies []*lagProxy

	stopGuard // serializes Failover and Stop
	dead      map[int]bool
}

var _ Topology = (*RedisCluster)(nil)

// StartRedisCluster starts the nodes (cluster-enabled, no persistence,
// maxmemory-policy noeviction, the cluster bus on a free port of its own),
// assigns the slots, joins the nodes, makes the replicas replicate their
// primaries, and waits until every node reports cluster_state:ok, knows
// every other node, and every replica's link is up. If ctx has no deadline,
// it gives up after 60 seconds. On error nothing is left running and every
// directory is removed.
func StartRedisCluster(ctx context.Context, opts RedisClusterOptions) (*RedisCluster, error) {
	if opts.Primaries == 0 {
		opts.Primaries = 3
	}
	if opts.ReplicasPerPrimary == 0 {
		opts.ReplicasPerPrimary = 1
	}
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = time.Second
	}
	if opts.Primaries < 1 || opts.Primaries > 16 || opts.ReplicasPerPrimary < 1 || opts.ReplicasPerPrimary > 2 ||
		opts.NodeTimeout < 0 || opts.ReplicationLag < 0 {
		return nil, fmt.Errorf("servers: cluster of %d primaries with %d replicas each, node timeout %v, replication lag %v",
			opts.Primaries, opts.ReplicasPerPrimary, opts.NodeTimeout, opts.ReplicationLag)
	}
	ctx, cancel := withStartTimeout(ctx, 2*redisStartTimeout)
	defer cancel()
	c := &RedisCluster{dead: map[int]bool{}}
	register(c)
	if err := c.start(ctx, opts); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *RedisCluster) start(ctx context.Context, opts RedisClusterOptions) error {
	lagged := opts.ReplicationLag > 0
	n := opts.Primaries * (1 + opts.ReplicasPerPrimary)
	for i := range n {
		var bus int
		conf := func(dir string, _ int) (string, error) {
			var err error
			if bus, err = freePort(); err != nil {
				return "", err
			}
			path := filepath.Join(dir, "cluster.conf")
			text := fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-port %d\n"+
				"cluster-node-timeout %d\nrepl-diskless-sync-delay 0\n", bus, opts.NodeTimeout.Milliseconds())
			if lagged {
				text += "cluster-announce-hostname 127.0.0.1\ncluster-preferred-endpoint-type hostname\n"
				if i < opts.Primaries {
					text += "cluster-announce-ip " + ClusterLagIP + "\n"
				}
			}
			return path, os.WriteFile(path, []byte(text), 0o644)
		}
		r, err := startRedis(ctx, RedisOptions{Binary: opts.Binary}, redisRole{conf: conf})
		if err != nil {
			return err
		}
		if err := adopt(&c.stopGuard, &c.nodes, r, r.Stop); err != nil {
			return err
		}
		if lagged && i < opts.Primaries {
			if err := c.proxy(r.Port(), bus, opts.ReplicationLag); err != nil {
				return err
			}
		}
	}
	clients := make([]*redis.Client, n)
	for i, r := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
		defer clients[i].Close()
	}
	if err := c.assemble(ctx, clients, opts.Primaries); err != nil {
		return fmt.Errorf("servers: assemble the cluster: %w", err)
	}
	return nil
}

// proxy starts the proxies of a primary that announces ClusterLagIP: on
// its port with lag (its replicas' replication links) and on its bus port
// without (the cluster bus).
func (c *RedisCluster) proxy(port, bus int, lag time.Duration) error {
	for _, p := range []struct {
		port int
		lag  time.Duration
	}{{port, lag}, {bus, 0}} {
		lp, err := startLagProxyOn(net.JoinHostPort(ClusterLagIP, strconv.Itoa(p.port)), loopback(p.port), p.lag)
		if err != nil {
			return fmt.Errorf("%w (ReplicationLag needs %s to be a loopback address)", err, ClusterLagIP)
		}
		if err := adopt(&c.stopGuard, &c.proxies, lp, lp.Close); err != nil {
			return err
		}
	}
	return nil
}

// assemble assigns slots to the first primaries nodes, joins every node,
// attaches the replicas round robin, and waits until the cluster is ready.
func (c *RedisCluster) assemble(ctx context.Context, clients []*redis.Client, primaries int) error {
	ids := make([]string, len(clients))
	for i, cl := range clients {
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return err
		}
		ids[i] = id
	}
	for i := range primaries {
		lo, hi := i*16384/primaries, (i+1)*16384/primaries-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return err
		}
	}
	bus, err := clients[0].ConfigGet(ctx, "cluster-port").Result()
	if err != nil {
		return err
	}
	for i, cl := range clients[1:] {
		if err := cl.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.nodes[0].Port(), bus["cluster-port"]).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER MEET: %w", i+1, err)
		}
	}
	for i := primaries; i < len(clients); i++ {
		primary := ids[(i-primaries)%primaries]
		var last error
		err := poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
			// The replica must have heard of its primary first.
			last = clients[i].Do(ctx, "CLUSTER", "REPLICATE", primary).Err()
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("node %d: CLUSTER REPLICATE %s: %w (last: %v)", i, primary, err, last)
		}
	}
	return poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
		for i, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(clients))+"\r") {
				return false, nil
			}
			if i >= primaries {
				repl, err := cl.Info(ctx, "replication").Result()
				if err != nil || !strings.Contains(repl, "master_link_status:up") {
					return false, nil
				}
			}
			// Every node must send clients to 127.0.0.1 (a hostname not
			// gossiped yet is reported as "?").
			slots, err := cl.ClusterSlots(ctx).Result()
			if err != nil || len(slots) != primaries {
				return false, nil
			}
			for _, s := range slots {
				for _, n := range s.Nodes {
					if !strings.HasPrefix(n.Addr, "127.0.0.1:") {
						return false, nil
					}
				}
			}
		}
		return true, nil
	})
}

// Nodes returns every node: the primaries first, then the replicas.
func (c *RedisCluster) Nodes() []*Redis { return c.nodes }

// Addrs returns the 127.0.0.1:PORT addresses of every node.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, r := range c.nodes {
		addrs[i] = r.Addr()
	}
	return addrs
}

// NewClient returns a redis.ClusterClient seeded with every node that
// follows a failover (FollowClusterFailover). Timeouts are short (dial 1s,
// read and write 3s). The caller closes the client.
func (c *RedisCluster) NewClient() *redis.ClusterClient {
	return FollowClusterFailover(&redis.ClusterOptions{
		Addrs:        c.Addrs(),
		DialTimeout:  time.Second,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
	})
}

// FollowClusterFailover returns a redis.ClusterClient on o whose dialer
// asks for a reload of the slot map whenever a dial fails. It replaces
// o.Dialer (a nil one dials TCP with o.DialTimeout, or 5 seconds).
//
// go-redis (v9.23) reloads its slot map on MOVED and READONLY replies but
// not when it cannot reach a slot's primary: measured here, a plain
// ClusterClient kept dialling the dead primary for more than 20 seconds
// after its replica took over, until ReloadState was called.
func FollowClusterFailover(o *redis.ClusterOptions) *redis.ClusterClient {
	var client atomic.Pointer[redis.ClusterClient]
	d := net.Dialer{Timeout: o.DialTimeout}
	if d.Timeout <= 0 {
		d.Timeout = 5 * time.Second
	}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			if cc := client.Load(); cc != nil {
				cc.ReloadState(ctx)
			}
		}
		return conn, err
	}
	cc := redis.NewClusterClient(o)
	client.Store(cc)
	return cc
}

// Failover kills the primary that owns key's hash slot (slot 0 when key is
// empty; key is hashed as Redis Cluster hashes a key, by its {hash tag} if
// it has one, so an idempotency key without '%', '{' or '}' names the slot
// of its redisstore record P:{key}) with SIGKILL and waits until every live node reports the slot
// owned by another node, which says role:master, and cluster_state:ok. The
// old primary stays down. It fails with ErrNoReplica when the slot has no
// live replica left, and after Stop with ErrStopped. If ctx has no
// deadline, it gives up after 60 seconds. See Topology.
func (c *RedisCluster) Failover(ctx context.Context, key string) (history.Op, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := history.Now()
	if c.stopped {
		return history.Op{}, ErrStopped
	}
	ctx, cancel := withStartTimeout(ctx, failoverTimeout)
	defer cancel()
	slot := 0
	if key != "" {
		slot = keySlot(key)
	}
	owner, replicas, err := c.slotNodes(ctx, slot)
	if err != nil {
		return history.Op{}, err
	}
	if replicas == 0 {
		return history.Op{}, ErrNoReplica
	}
	old := c.nodes[owner]
	label := fmt.Sprintf("failover redis-cluster: kill primary %s of slot %d", old.Addr(), slot)
	if err := old.Kill(); err != nil {
		return faultWindow(start, key, label, err), err
	}
	c.dead[owner] = true
	var next int
	err = poll(ctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		n, _, err := c.slotNodes(ctx, slot)
		if err != nil || n == owner || !isRedisPrimary(ctx, c.nodes[n].Addr()) {
			return false, nil
		}
		next = n
		return true, nil
	})
	if err != nil {
		err = fmt.Errorf("servers: no replica took over slot %d from %s: %w", slot, old.Addr(), err)
		return faultWindow(start, key, label, err), err
	}
	return faultWindow(start, key, label+", promoted "+c.nodes[next].Addr(), nil), nil
}

// slotNodes returns the index of the node every live node names as the
// owner of slot, and how many live replicas that owner has. It fails
// unless the live nodes agree and report cluster_state:ok.
func (c *RedisCluster) slotNodes(ctx context.Context, slot int) (owner, replicas int, err error) {
	owner = -1
	for i, r := range c.nodes {
		if c.dead[i] {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		info, err1 := cl.ClusterInfo(ctx).Result()
		nodes, err2 := cl.ClusterNodes(ctx).Result()
		_ = cl.Close()
		if err := errors.Join(err1, err2); err != nil {
			return -1, 0, err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return -1, 0, fmt.Errorf("servers: node %s: cluster state not ok", r.Addr())
		}
		o, reps := parseSlotOwner(nodes, slot)
		idx := c.indexOf(o)
		if idx < 0 || (owner >= 0 && idx != owner) {
			return -1, 0, fmt.Errorf("servers: node %s names %q as the owner of slot %d", r.Addr(), o, slot)
		}
		owner = idx
		replicas = 0
		for _, a := range reps {
			if j := c.indexOf(a); j >= 0 && !c.dead[j] {
				replicas++
			}
		}
	}
	if owner < 0 {
		return -1, 0, errors.New("servers: no live cluster node")
	}
	return owner, replicas, nil
}

// indexOf returns the index of the node at addr, by port: a primary of a
// Cluster with ReplicationLag announces ClusterLagIP, on its own port.
func (c *RedisCluster) indexOf(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	for i, r := range c.nodes {
		if strconv.Itoa(r.Port()) == port {
			return i
		}
	}
	return -1
}

// parseSlotOwner reads CLUSTER NODES output and returns the address of the
// healthy master serving slot and the addresses of its healthy replicas.
func parseSlotOwner(nodes string, slot int) (owner string, replicas []string) {
	type node struct{ addr, flags, master string }
	byID := map[string]node{}
	var ownerID string
	for line := range strings.SplitSeq(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		byID[f[0]] = node{addr: addr, flags: f[2], master: f[3]}
		if !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			l, err1 := strconv.Atoi(lo)
			h, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && l <= slot && slot <= h {
				ownerID = f[0]
			}
		}
	}
	for _, n := range byID {
		if n.master == ownerID && !strings.Contains(n.flags, "fail") {
			replicas = append(replicas, n.addr)
		}
	}
	return byID[ownerID].addr, replicas
}

// keySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key,
// or of its first non-empty {hash tag}, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// Stop stops every node (SIGKILL) and the lag proxies, waits for them and
// removes their directories. It is idempotent.
func (c *RedisCluster) Stop() error {
	return c.stopOnce(c, func() error {
		err := stopAll(c.nodes)
		for _, p := range c.proxies {
			err = errors.Join(err, p.Close())
		}
		return err
	})
}
