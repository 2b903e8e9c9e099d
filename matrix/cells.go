package matrix

import (
	"context"

	"slices"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/backendfault"
	_ "github.com/idembench/idembench/chaos/backendfault/netproxy" // the network cells (netFaults)
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
)

// Servers are the private servers the restart cells crash (and the other
// server cells use when no URL is given). A nil field leaves its cells out
// of reach: they end as errors.
type Servers struct {
	RedisNone, RedisAOF backendfault.Server
	Postgres            backendfault.Server
}

// How each fault is injected, in the cells' How column.
const (
	howCrash      = "in-process crash hook"
	howPause      = "in-process stall hook, heartbeat stopped"
	howDup        = "concurrent + delayed copies, client retries"
	howNet        = "toxiproxy: latency, drop replies after apply, reset, partition; a 1s partition aimed after one effect"
	howKill       = "SIGKILL of a worker process at the crash point (4 workers), restarted"
	howStop       = "SIGSTOP of a worker process right after an effect, SIGCONT 4 lease TTLs later (4 workers)"
	howRedisCrash = "SIGKILL + restart of a private redis-server, twice, and once aimed right after an effect"
	howPgCrash    = "immediate shutdown + restart of a private postgres, twice, and a SIGKILL aimed right after an effect"
)

// aimKind is the network fault aimed at a completion: a partition, so
// that the completion's write never reaches the server (with drop-replies
// it is applied and the retry replays it: measured, the Redis cells
// missed).
const aimKind = history.FaultPartition

// aimDown is how long the aimed crash after an effect keeps the server
// down: past the client's retries of the completion.
const aimDown = time.Second

// netFaults is the network column's schedule for traffic of length d.
func netFaults(d time.Duration) *backendfault.Plan {
	frac := func(f float64) time.Duration { return time.Duration(f * float64(d)) }
	p := &backendfault.Plan{ClientTimeout: 300 * time.Millisecond, Faults: []chaos.Fault{
		{Kind: history.FaultLatency, Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, Start: frac(0.1), Duration: frac(0.1)},
		{Kind: history.FaultDropReplies, Start: frac(0.3), Duration: 400 * time.Millisecond},
		{Kind: history.FaultReset, Start: frac(0.55), Duration: 100 * time.Millisecond},
		{Kind: history.FaultPartition, Start: frac(0.7), Duration: 300 * time.Millisecond},
	}, Aim: &chaos.Fault{Kind: aimKind, Point: chaos.AimPoint, Duration: time.Second}}
	p.ReplayArgs = p.Args(false)
	return p
}

// restarts crashes srv at 35% and 70% of the traffic; aof says srv is a
// Redis with an always-fsynced AOF.
func restarts(srv backendfault.Server, label string, aof bool) func(time.Duration) *backendfault.Plan {
	return func(d time.Duration) *backendfault.Plan {
		p := &backendfault.Plan{Server: srv, RestartLabel: label,
			Faults: []chaos.Fault{
				{Kind: history.FaultRestart, Start: time.Duration(0.35 * float64(d))},
				{Kind: history.FaultRestart, Start: time.Duration(0.7 * float64(d))},
			},
			Aim: &chaos.Fault{Kind: history.FaultRestart, Point: chaos.AimPoint, Duration: aimDown}}
		p.ReplayArgs = p.Args(aof)
		return p
	}
}

// cellList builds the cells on the wanted backends.
type cellList struct {
	want []harness.Backend
	ps   Servers
	out  []*Cell
}

func (l *cellList) add(c Cell) {
	if !slices.Contains(l.want, c.Backend) {
		return
	}
	c.Expected, c.ByChance = expect(c.Config, c.Fault, c.Variant)
	l.out = append(l.out, &c)
}

func (l *cellList) inProcess(cfg Config, b harness.Backend) {
	l.add(Cell{Config: cfg, Backend: b, Fault: Crash, How: howCrash, scenario: "crash-after-effect"})
	l.add(Cell{Config: cfg, Backend: b, Fault: Pause, How: howPause, scenario: "gc-pause"})
	l.add(Cell{Config: cfg, Backend: b, Fault: Dup, How: howDup, scenario: "duplicates"})
}

func (l *cellList) processes(cfg Config, b harness.Backend, crash, pause bool) {
	if crash {
		l.add(Cell{Config: cfg, Backend: b, Fault: Crash, Variant: Processes, How: howKill, scenario: "crash-after-effect", workers: 4, duration: 3 * time.Second})
	}
	if pause {
		l.add(Cell{Config: cfg, Backend: b, Fault: Pause, Variant: Processes, How: howStop, scenario: "gc-pause", workers: 4, duration: 4 * time.Second})
	}
}

func (l *cellList) net(cfg Config, b harness.Backend) {
	l.add(Cell{Config: cfg, Backend: b, Fault: Net, How: howNet, scenario: "duplicates", faults: netFaults})
}

func (l *cellList) redisRestart(cfg Config, aof bool) {
	variant, srv, label := RedisNone, l.ps.RedisNone, "restart redis (SIGKILL)"
	if aof {
		variant, srv = RedisAOF, l.ps.RedisAOF
	}
	l.add(Cell{Config: cfg, Backend: harness.Redis, Fault: Restart, Variant: variant, How: howRedisCrash, scenario: "duplicates", faults: restarts(srv, label, aof)})
}

func (l *cellList) pgRestart(cfg Config) {
	l.add(Cell{Config: cfg, Backend: harness.Postgres, Fault: Restart, Variant: PostgresCrash, How: howPgCrash, scenario: "duplicates",
		faults: restarts(l.ps.Postgres, "restart postgres (immediate)", false)})
}

// Cells lists the matrix's cells on the given backends, in the order they
// run: the reduced matrix for CI when quick, else the full one.
func Cells(quick bool, backends []harness.Backend, ps Servers) []*Cell {
	l := &cellList{want: backends, ps: ps}
	if quick {
		for _, cfg := range []Config{Plain, Fenced, Recovery} {
			l.inProcess(cfg, harness.Memory)
		}
		l.redisRestart(Plain, false)
		l.redisRestart(Recovery, false)
		l.redisRestart(Recovery, true)
		l.net(Recovery, harness.Redis)
		l.inProcess(Tx, harness.Postgres)
		l.net(Tx, harness.Postgres)
		l.pgRestart(Tx)
		l.processes(Plain, harness.Redis, true, false)
		l.processes(Fenced, harness.Redis, false, true)
		l.processes(Recovery, harness.Redis, false, true)
		l.processes(Tx, harness.Postgres, true, false)
		l.failover(Recovery, backendfault.RedisSentinel)
		l.failover(Tx, backendfault.PostgresSync)
		l.brokerRows(true)
		return l.out
	}
	for _, cfg := range []Config{Plain, Fenced, Recovery} {
		l.inProcess(cfg, harness.Memory)
		for _, b := range []harness.Backend{harness.Redis, harness.Postgres} {
			l.inProcess(cfg, b)
			l.processes(cfg, b, true, true)
			l.net(cfg, b)
		}
		l.redisRestart(cfg, false)
		l.redisRestart(cfg, true)
		l.pgRestart(cfg)
	}
	l.inProcess(Tx, harness.Postgres)
	l.processes(Tx, harness.Postgres, true, true)
	l.net(Tx, harness.Postgres)
	l.pgRestart(Tx)
	// DynamoDB: in-process faults and network loss; no worker processes
	// (their effect ledgers live in Redis or PostgreSQL), no restart.
	for _, cfg := range []Config{Plain, Fenced, Recovery} {
		l.inProcess(cfg, harness.DynamoDB)
		l.net(cfg, harness.DynamoDB)
	}
	l.failoverColumn()
	l.brokerRows(false)
	return l.out
}

// StartServers starts the private servers of the restart cells on the
// given backends (chaos/servers: Redis without persistence and with AOF
// always, PostgreSQL) and returns them with a function that stops them,
// which is never nil, also after an error.
func StartServers(ctx context.Context, backends []harness.Backend) (Servers, func(), error) {
	var ps Servers
	var stops []func() error
	stop := func() {
		for _, s := range stops {
			_ = s()
		}
	}
	for _, b := range backends {
		switch b {
		case harness.Redis:
			for _, p := range []servers.Persistence{servers.None, servers.AOFAlways} {
				r, err := servers.StartRedis(ctx, servers.RedisOptions{Persistence: p})
				if err != nil {
					return ps, stop, err
				}
				stops = append(stops, r.Stop)
				if p == servers.None {
					ps.RedisNone = r
				} else {
					ps.RedisAOF = r
				}
			}
		case harness.Postgres:
			pg, err := servers.StartPostgres(ctx, servers.PostgresOptions{})
			if err != nil {
				return ps, stop, err
			}
			stops = append(stops, pg.Stop)
			ps.Postgres = pg
		}
	}
	return ps, stop, nil
}
