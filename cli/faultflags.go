package cli

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/harness"
)

// faultFlags are the run flags for faults on the backend.
type faultFlags struct {
	RestartAt        []time.Duration `help:"Crash and restart the backend at these offsets into the traffic (Redis: SIGKILL; PostgreSQL: immediate shutdown). Runs against a private server (chaos/servers)." placeholder:"DURATION,..."`
	RedisPersistence string          `help:"Persistence of the private Redis server of --restart-at: none or aof-always." default:"none" enum:"none,aof-always"`
	NetFault         []string        `help:"Network fault between engine and backend, KIND@START+LENGTH (KIND: latency, reset, drop-replies, partition; e.g. drop-replies@1s+400ms); repeatable." placeholder:"FAULT"`
	Failover         string          `help:"Run the store on a replicated topology with 200ms replication lag and fail its primary over once, right after a completion was recorded: redis-sentinel, redis-wait (WAIT 1 after every write), redis-cluster (the primary of the completed key's slot), postgres-async or postgres-sync." placeholder:"KIND" enum:",redis-sentinel,redis-wait,redis-cluster,postgres-async,postgres-sync" default:""`
	ClientTimeout    time.Duration   `help:"Client timeout per call (default: the scenario's); with --net-fault a lost reply then ends as unknown and is retried." default:"0s"`
}

// plan returns the backend fault plan of the flags (nil when there is
// none), starting the private server --restart-at needs, and a function
// that stops it.
func (f *faultFlags) plan(ctx context.Context, backend string) (*backendfault.Plan, func(), error) {
	stop := func() {}
	if len(f.RestartAt) == 0 && len(f.NetFault) == 0 && f.ClientTimeout == 0 && f.Failover == "" {
		return nil, stop, nil
	}
	p := &backendfault.Plan{ClientTimeout: f.ClientTimeout, ReplayArgs: f.replayArgs()}
	if f.Failover != "" {
		return f.failoverPlan(ctx, p, backend)
	}
	for _, s := range f.NetFault {
		w, err := netfault.ParseWindow(s)
		if err != nil {
			return nil, stop, usage("--net-fault %q: %v", s, err)
		}
		p.Net = append(p.Net, w)
	}
	if p.ClientTimeout == 0 && len(p.Net) > 0 {
		p.ClientTimeout = 300 * time.Millisecond
	}
	if len(f.RestartAt) == 0 {
		return p, stop, nil
	}
	p.Restarts = f.RestartAt
	srv, label, stop, err := backendfault.StartServer(ctx, backend, f.RedisPersistence == "aof-always")
	switch {
	case errors.Is(err, backendfault.ErrPlan):
		return nil, stop, usage("--restart-at needs --backend redis or postgres")
	case err != nil:
		return nil, stop, harness.EnvironmentError(err)
	}
	p.Server, p.RestartLabel = srv, label
	return p, stop, nil
}

// replayArgs returns the flags that repeat these faults, for the replay
// command.
func (f *faultFlags) replayArgs() []string {
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
		args = append(args, "--net-fault", harness.ShellQuote(s))
	}
	if f.Failover != "" {
		args = append(args, "--failover", f.Failover)
	}
	if f.ClientTimeout > 0 {
		args = append(args, "--client-timeout", f.ClientTimeout.String())
	}
	return args
}

// failoverPlan adds the --failover topology to p, started for backend.
func (f *faultFlags) failoverPlan(ctx context.Context, p *backendfault.Plan, backend string) (*backendfault.Plan, func(), error) {
	stop := func() {}
	kind, err := backendfault.ParseFailoverKind(f.Failover)
	switch {
	case err != nil:
		return nil, stop, usage("--failover: %v", err)
	case len(f.RestartAt) > 0 || len(f.NetFault) > 0:
		return nil, stop, usage("--failover goes with no --restart-at or --net-fault")
	case kind.Backend() != backend:
		return nil, stop, usage("--failover %s needs --backend %s", kind, kind.Backend())
	}
	fo, stop, err := backendfault.StartFailover(ctx, kind)
	if err != nil {
		return nil, stop, harness.EnvironmentError(err)
	}
	p.Failover = fo
	return p, stop, nil
}
