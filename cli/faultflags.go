package cli

import (
	"context"
	"errors"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// faultFlags are the run flags for faults on the backend.
type faultFlags struct {
	RestartAt        []time.Duration `help:"Crash and restart the backend at these offsets into the traffic (Redis: SIGKILL; PostgreSQL: immediate shutdown): at most 100 offsets, each above 0 and at most 24h. Runs against a private server (chaos/servers)." placeholder:"DURATION,..."`
	RedisPersistence string          `help:"Persistence of the private Redis server of --restart-at: none or aof-always." default:"none" enum:"none,aof-always"`
	NetFault         []string        `help:"Network fault between engine and backend, KIND@START+LENGTH (KIND: latency, reset, drop-replies, partition; e.g. drop-replies@1s+400ms; START at most 24h, LENGTH above 0 and at most 10m); repeatable, at most 100." placeholder:"FAULT"`
	AimRestart       time.Duration   `help:"One more crash of the private server of --restart-at (started for it if there is no --restart-at), aimed right after one execution's effect, and its restart this much later: 0 (none) or 1ms to 10m (the matrix uses 1s)." default:"0s"`
	AimNet           string          `help:"With --net-fault: one more network fault, KIND+LENGTH (e.g. partition+1s; LENGTH at most 10m), switched on right after one execution's effect so that its completion meets it." placeholder:"FAULT"`
	Failover         string          `help:"Run the store on a replicated topology with 200ms replication lag and fail its primary over once, right after a completion was recorded: redis-sentinel, redis-wait (WAIT 1 after every write), redis-cluster (the primary of the completed key's slot), postgres-async or postgres-sync." placeholder:"KIND" enum:",redis-sentinel,redis-wait,redis-cluster,postgres-async,postgres-sync" default:""`
	ClientTimeout    time.Duration   `help:"Client timeout per call: 0 (the scenario's) or 1ms to 10m; with --net-fault a lost reply then ends as unknown and is retried." default:"0s"`
}

// Limits of the fault flags, as their help states them.
const (
	maxFaultFlags    = 100                  // --restart-at offsets, --net-fault windows
	maxFaultOffset   = workload.MaxDuration // a restart's or a window's start
	maxFaultLength   = workload.MaxWait     // a window's, an aimed fault's length
	minClientTimeout = workload.MinTimeout
)

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
	if !p.KillsServer() {
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
	if err := f.limits(); err != nil {
		return nil, err
	}
	p := &backendfault.Plan{ClientTimeout: f.ClientTimeout}
	for _, at := range f.RestartAt {
		p.Faults = append(p.Faults, chaos.Fault{Kind: history.FaultRestart, Start: at})
	}
	for _, s := range f.NetFault {
		w, err := chaos.ParseWindow(s)
		if err != nil {
			return nil, usage("--net-fault %q: %v", s, err)
		}
		if w.Start > maxFaultOffset || w.Duration > maxFaultLength {
			return nil, usage("--net-fault %q: START must be at most %s and LENGTH at most %s", s, maxFaultOffset, maxFaultLength)
		}
		p.Faults = append(p.Faults, w)
	}
	if f.AimRestart > 0 {
		p.Aim = &chaos.Fault{Kind: history.FaultRestart, Point: chaos.AimPoint, Duration: f.AimRestart}
	}
	if f.AimNet != "" {
		a, err := chaos.ParseAim(f.AimNet)
		if err != nil {
			return nil, usage("--aim-net %q: %v", f.AimNet, err)
		}
		if a.Duration > maxFaultLength {
			return nil, usage("--aim-net %q: LENGTH %s is above the limit of %s", f.AimNet, a.Duration, maxFaultLength)
		}
		if p.Aim != nil {
			return nil, usage("--aim-net and --aim-restart do not go together: one aimed fault per run")
		}
		p.Aim = &a
	}
	net := len(p.Network()) > 0
	switch {
	case f.AimNet != "" && !net:
		return nil, usage("--aim-net needs at least one --net-fault (the proxy it switches)")
	case f.Failover != "" && (len(p.Faults) > 0 || p.Aim != nil):
		return nil, usage("--failover goes with no --restart-at, --aim-restart or --net-fault")
	}
	if p.ClientTimeout == 0 && net {
		p.ClientTimeout = 300 * time.Millisecond
	}
	p.ReplayArgs = p.Args(f.RedisPersistence == "aof-always")
	if f.Failover != "" {
		p.ReplayArgs = append(p.ReplayArgs, "--failover", f.Failover)
	}
	return p, nil
}

// limits checks the bounds the flags' help states.
func (f *faultFlags) limits() error {
	switch {
	case len(f.RestartAt) > maxFaultFlags:
		return usage("--restart-at: %d offsets is above the limit of %d", len(f.RestartAt), maxFaultFlags)
	case len(f.NetFault) > maxFaultFlags:
		return usage("--net-fault: %d windows is above the limit of %d", len(f.NetFault), maxFaultFlags)
	case f.AimRestart < 0 || f.AimRestart > maxFaultLength || (f.AimRestart > 0 && f.AimRestart < time.Millisecond):
		return usage("--aim-restart %s: want 0 (none) or 1ms to %s", f.AimRestart, maxFaultLength)
	case f.ClientTimeout < 0 || f.ClientTimeout > maxFaultLength || (f.ClientTimeout > 0 && f.ClientTimeout < minClientTimeout):
		return usage("--client-timeout %s: want 0 (the scenario's) or %s to %s", f.ClientTimeout, minClientTimeout, maxFaultLength)
	}
	for _, at := range f.RestartAt {
		if at <= 0 || at > maxFaultOffset {
			return usage("--restart-at %s: want an offset above 0 and at most %s", at, maxFaultOffset)
		}
	}
	return nil
}

// validate checks the flags for a run on backend without starting
// anything: the bounds, the combinations, and the backend the private
// server or the failover topology needs.
func (f *faultFlags) validate(backend string) error {
	p, err := f.schedule()
	if err != nil || p == nil {
		return err
	}
	if f.Failover != "" {
		kind, err := backendfault.ParseFailoverKind(f.Failover)
		switch {
		case err != nil:
			return usage("--failover: %v", err)
		case kind.Backend() != backend:
			return usage("--failover %s needs --backend %s", kind, kind.Backend())
		}
		return nil
	}
	if p.KillsServer() && backend != "redis" && backend != "postgres" {
		return usage("--restart-at and --aim-restart need --backend redis or postgres")
	}
	return nil
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
