package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/chaos/servers"
)

// backendFaultFlags are the run flags for faults on the backend.
type backendFaultFlags struct {
	RestartAt        []time.Duration `help:"Crash and restart the backend at these offsets into the traffic (Redis: SIGKILL; PostgreSQL: immediate shutdown). Runs against a private server (chaos/servers)." placeholder:"DURATION,..."`
	RedisPersistence string          `help:"Persistence of the private Redis server of --restart-at: none or aof-always." default:"none" enum:"none,aof-always"`
	NetFault         []string        `help:"Network fault between engine and backend, KIND@START+LENGTH (KIND: latency, reset, drop-replies, partition; e.g. drop-replies@1s+400ms); repeatable." placeholder:"FAULT"`
	ClientTimeout    time.Duration   `help:"Client timeout per call (default: the scenario's); with --net-fault a lost reply then ends as unknown and is retried." default:"0s"`
}

func (f *backendFaultFlags) any() bool {
	return len(f.RestartAt) > 0 || len(f.NetFault) > 0 || f.ClientTimeout > 0
}

// open starts the private server --restart-at needs and returns the faults
// and a function that stops the server.
func (f *backendFaultFlags) open(ctx context.Context, backend string) (*backendFaults, func(), error) {
	bf := &backendFaults{RetryTimeout: f.ClientTimeout, ReplayArgs: f.replayArgs()}
	stop := func() {}
	for _, s := range f.NetFault {
		w, err := parseNetFault(s)
		if err != nil {
			return nil, stop, usageErr("--net-fault %q: %v", s, err)
		}
		bf.Net = append(bf.Net, w)
	}
	if bf.RetryTimeout == 0 && len(bf.Net) > 0 {
		bf.RetryTimeout = 300 * time.Millisecond
	}
	if len(f.RestartAt) == 0 {
		return bf, stop, nil
	}
	bf.Restarts = f.RestartAt
	switch backend {
	case backendRedis:
		p := servers.None
		if f.RedisPersistence == "aof-always" {
			p = servers.AOFAlways
		}
		r, err := servers.StartRedis(ctx, servers.RedisOptions{Persistence: p})
		if err != nil {
			return nil, stop, envErr(err)
		}
		bf.Redis = r
		return bf, func() { _ = r.Stop() }, nil
	case backendPostgres:
		pg, err := servers.StartPostgres(ctx, servers.PostgresOptions{})
		if err != nil {
			return nil, stop, envErr(err)
		}
		bf.Postgres = pg
		return bf, func() { _ = pg.Stop() }, nil
	}
	return nil, stop, usageErr("--restart-at needs --backend redis or postgres")
}

// replayArgs returns the flags that repeat these faults, for the replay
// command.
func (f *backendFaultFlags) replayArgs() []string {
	var args []string
	if len(f.RestartAt) > 0 {
		at := make([]string, len(f.RestartAt))
		for i, d := range f.RestartAt {
			at[i] = d.String()
		}
		args = append(args, "--restart-at", strings.Join(at, ","))
		if f.RedisPersistence != "" && f.RedisPersistence != "none" {
			args = append(args, "--redis-persistence", f.RedisPersistence)
		}
	}
	for _, s := range f.NetFault {
		args = append(args, "--net-fault", shellQuote(s))
	}
	if f.ClientTimeout > 0 {
		args = append(args, "--client-timeout", f.ClientTimeout.String())
	}
	return args
}

// parseNetFault parses KIND@START+LENGTH, with latency taking an optional
// delay: latency:50ms@1s+500ms.
func parseNetFault(s string) (netWindow, error) {
	var w netWindow
	kind, rest, ok := strings.Cut(s, "@")
	if !ok {
		return w, fmt.Errorf("want KIND@START+LENGTH")
	}
	start, length, ok := strings.Cut(rest, "+")
	if !ok {
		return w, fmt.Errorf("want KIND@START+LENGTH")
	}
	var err error
	if w.At, err = time.ParseDuration(start); err != nil {
		return w, err
	}
	if w.For, err = time.ParseDuration(length); err != nil {
		return w, err
	}
	if w.At < 0 || w.For <= 0 {
		return w, fmt.Errorf("start must not be negative and length must be positive")
	}
	k, arg, _ := strings.Cut(kind, ":")
	w.Fault.Kind = netfault.Kind(k)
	if w.Fault.Kind == netfault.KindLatency {
		w.Fault.Latency = 50 * time.Millisecond
		if arg != "" {
			if w.Fault.Latency, err = time.ParseDuration(arg); err != nil {
				return w, err
			}
		}
	}
	return w, w.Fault.Validate()
}
