package cli

import (
	"context"
	"errors"
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
	AimRestart       time.Duration   `help:"One more crash of the private server of --restart-at (started for it if there is no --restart-at), aimed right after one execution's effect, and its restart this much later (the matrix uses 1s)." default:"0s"`
	AimNet           string          `help:"With --net-fault: one more network fault, KIND+LENGTH (e.g. partition+1s), switched on right after one execution's effect so that its completion meets it." placeholder:"FAULT"`
	Failover         string          `help:"Run the store on a replicated topology with 200ms replication lag and fail its primary over once, right after a completion was recorded: redis-sentinel, redis-wait (WAIT 1 after every write), redis-cluster (the primary of the completed key's slot), postgres-async or postgres-sync." placeholder:"KIND" enum:",redis-sentinel,redis-wait,redis-cluster,postgres-async,postgres-sync" default:""`
	ClientTimeout    time.Duration   `help:"Client timeout per call (default: the scenario's); with --net-fault a lost reply then ends as unknown and is retried." default:"0s"`
}

// plan returns the backend fault plan of the flags (nil when there is
// none), starting the private server --restart-at and --aim-restart need,
// and a function that stops it.
func (f *faultFlags) plan(ctx context.Context, backend string) (*backendfault.Plan, func(), error) {
	stop := func() {}
	p, err := f.schedule()
	if err != nil || p == nil {
		return nil, stop, err
	}
	if f.Failover != "" {
		return f.failoverPlan(ctx, p, backend)
	}
	if len(p.Restarts) == 0 && p.AimRestart == 0 {
		return p, stop, nil
	}
	srv, label, stop, err := backendfault.StartServer(ctx, backend, f.RedisPersistence == "aof-always")
	switch {
	case errors.Is(err, backendfault.ErrPlan):
		return nil, stop, usage("--restart-at and --aim-restart need --backend redis or postgres")
	case err != nil:
		return nil, stop, harness.EnvironmentError(err)
	}
	p.Server, p.RestartLabel = srv, label
	return p, stop, nil
}

// schedule returns what the flags inject, without the servers (nil when
// they inject nothing), or a usage error.
func (f *faultFlags) schedule() (*backendfault.Plan, error) {
	if len(f.RestartAt) == 0 && len(f.NetFault) == 0 && f.ClientTimeout == 0 && f.Failover == "" && f.AimRestart == 0 && f.AimNet == "" {
		return nil, nil
	}
	p := &backendfault.Plan{ClientTimeout: f.ClientTimeout, Restarts: f.RestartAt, AimRestart: f.AimRestart}
	for _, s := range f.NetFault {
		w, err := netfault.ParseWindow(s)
		if err != nil {
			return nil, usage("--net-fault %q: %v", s, err)
		}
		p.Net = append(p.Net, w)
	}
	if f.AimNet != "" {
		a, err := backendfault.ParseAim(f.AimNet)
		if err != nil {
			return nil, usage("--aim-net %q: %v", f.AimNet, err)
		}
		p.Aim = a
	}
	switch {
	case f.AimRestart < 0:
		return nil, usage("--aim-restart %v: want a positive duration", f.AimRestart)
	case p.Aim != nil && len(p.Net) == 0:
		return nil, usage("--aim-net needs at least one --net-fault (the proxy it switches)")
	case p.Aim != nil && p.AimRestart > 0:
		return nil, usage("--aim-net and --aim-restart do not go together: one aimed fault per run")
	case f.Failover != "" && (len(p.Restarts) > 0 || len(p.Net) > 0 || p.AimRestart > 0):
		return nil, usage("--failover goes with no --restart-at, --aim-restart or --net-fault")
	}
	if p.ClientTimeout == 0 && len(p.Net) > 0 {
		p.ClientTimeout = 300 * time.Millisecond
	}
	p.ReplayArgs = p.Args(f.RedisPersistence == "aof-always")
	if f.Failover != "" {
		p.ReplayArgs = append(p.ReplayArgs, "--failover", f.Failover)
	}
	return p, nil
}

// replayArgs returns the flags that repeat these faults, for the replay
// command (none for invalid flags, which never reach a run).
func (f *faultFlags) replayArgs() []string {
	p, err := f.schedule()
	if err != nil || p == nil {
		return nil
	}
	return p.ReplayArgs
}

// failoverPlan adds the --failover topology to p, started for backend.
func (f *faultFlags) failoverPlan(ctx context.Context, p *backendfault.Plan, backend string) (*backendfault.Plan, func(), error) {
	stop := func() {}
	kind, err := backendfault.ParseFailoverKind(f.Failover)
	switch {
	case err != nil:
		return nil, stop, usage("--failover: %v", err)
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
