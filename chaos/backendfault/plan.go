// Package backendfault injects faults on a run's backend rather than in the
// engine: crash restarts of a private server (chaos/servers) and network
// faults on a proxy between the engine and the server (chaos/netfault), on
// the traffic's clock, recording every window for the history.
//
// A Plan says what to inject, as chaos.Fault values (the one planned form
// of a fault); Open turns it into an Env for one run, which the harness
// starts and stops with the traffic. Env is an interface so that
// other backend faults (a failover to a replica, ...) plug into the harness
// the same way.
package backendfault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

// ErrPlan reports a plan that cannot be injected on the given backend.
var ErrPlan = errors.New("backendfault: invalid plan")

// Server is a private backend server a plan may crash and restart
// (*servers.Redis and *servers.Postgres implement it).
type Server interface {
	// URL is where the server answers.
	URL() string
	// Restart crashes the server and starts it again on the same port and
	// data, returning once it answers.
	Restart(ctx context.Context) error
}

// HealthChecker is a Server that can tell a death or a freeze nobody
// planned (*servers.Redis and *servers.Postgres implement it): Health
// returns nil while the server is as its owner left it, and otherwise an
// error naming it and what happened.
type HealthChecker interface {
	Health() error
}

// ServerHealth reports whether p's private Server died or froze outside
// the plan: its Health error, or nil when it is healthy, when p has no
// Server or when the Server cannot tell (no Health method). A restart of
// the plan is not such a death.
func (p *Plan) ServerHealth() error {
	if p == nil || p.Server == nil {
		return nil
	}
	if h, ok := p.Server.(HealthChecker); ok {
		return h.Health()
	}
	return nil
}

// Plan is the backend faults of one run. The zero value injects nothing.
// Offsets count from the start of traffic.
type Plan struct {
	// Server, when set, is the private server the run uses instead of its
	// URL, and the one Restarts crash. The caller owns it.
	Server Server
	// RestartLabel describes a restart in the history ("restart redis
	// (SIGKILL)"); empty means "restart backend".
	RestartLabel string
	// Faults are the faults timed at an offset of the traffic (their
	// Start): restarts of Server (history.FaultRestart), and network
	// faults, each on for its Duration on a proxy that goes in front of
	// the server when there is any.
	Faults []chaos.Fault
	// Aim, when set, is one more fault, aimed: it fires once, from the
	// engine hook, at the first execution that reaches its Point
	// (chaos.AimPoint, right after an effect). A restart crashes Server
	// there and starts it again Duration later; a network fault stays on
	// for Duration, on the proxy of Faults, which it needs.
	Aim *chaos.Fault
	// Failover, when set, runs the store on a replicated topology (in
	// place of the private single server) and fails its primary over once,
	// aimed right after a completion; it goes with no other backend fault.
	// The caller owns it.
	Failover *Failover
	// ClientTimeout, when positive, replaces the scenario's client timeout,
	// so that a call whose reply is lost ends as unknown and is retried.
	ClientTimeout time.Duration
	// ReplayArgs are the command-line flags that repeat these faults, for
	// the replay command.
	ReplayArgs []string
}

// Active reports whether p injects anything or moves the store to a
// private server. A nil plan is not active.
func (p *Plan) Active() bool {
	return p != nil && (p.Server != nil || len(p.Faults) > 0 || p.Failover != nil || p.Aim != nil)
}

// Restarts returns the offsets at which p restarts its Server, in the
// order of Faults.
func (p *Plan) Restarts() []time.Duration {
	var at []time.Duration
	for _, f := range p.timed() {
		if f.Kind == history.FaultRestart {
			at = append(at, f.Start)
		}
	}
	return at
}

// Network returns the network faults of Faults, in their order.
func (p *Plan) Network() []chaos.Fault {
	var net []chaos.Fault
	for _, f := range p.timed() {
		if f.Kind.Network() {
			net = append(net, f)
		}
	}
	return net
}

// KillsServer reports whether p's own faults kill its backend server: a
// restart, timed or aimed, or a failover. A nil plan kills nothing.
func (p *Plan) KillsServer() bool {
	return p != nil && (len(p.Restarts()) > 0 || p.aimed(history.FaultRestart) || p.Failover != nil)
}

// aimed reports whether p's aimed fault is of kind k.
func (p *Plan) aimed(k history.FaultKind) bool { return p != nil && p.Aim != nil && p.Aim.Kind == k }

func (p *Plan) timed() []chaos.Fault {
	if p == nil {
		return nil
	}
	return p.Faults
}

// validate checks every fault of p: Faults are restarts or network
// faults at an offset, Aim a restart or a network fault aimed at a point.
func (p *Plan) validate() error {
	for i := range p.Faults {
		f := &p.Faults[i]
		if err := f.Validate(0); err != nil {
			return fmt.Errorf("%w: %w", ErrPlan, err)
		}
		if (f.Kind != history.FaultRestart && !f.Kind.Network()) || f.Aimed() {
			return fmt.Errorf("%w: %s: a backend fault at an offset is a restart or a network fault", ErrPlan, f)
		}
	}
	if a := p.Aim; a != nil {
		if err := a.Validate(0); err != nil {
			return fmt.Errorf("%w: aimed fault: %w", ErrPlan, err)
		}
		if (a.Kind != history.FaultRestart && !a.Kind.Network()) || a.Point != chaos.AimPoint || a.Duration <= 0 {
			return fmt.Errorf("%w: aimed %s: an aimed backend fault is a restart or a network fault at %s, with a duration", ErrPlan, a.Kind, chaos.AimPoint)
		}
	}
	return nil
}

// Env is the backend side of one run's faults. The harness calls Start
// when traffic starts and Stop once it has drained (a fault still on is
// healed), then reads Windows and Err, and Closes it after the run.
type Env interface {
	// Start runs the schedule on its own goroutine.
	Start()
	// Stop ends the schedule and waits for it.
	Stop()
	// Windows returns the fault windows recorded so far.
	Windows() []history.Op
	// Err reports what went wrong injecting the faults: a run whose
	// faults were not injected proves nothing.
	Err() error
	// Close releases the proxy.
	Close() error
}

// None is the Env of a run without backend faults: it does nothing.
type None struct{}

func (None) Start()                {}
func (None) Stop()                 {}
func (None) Windows() []history.Op { return nil }
func (None) Err() error            { return nil }
func (None) Close() error          { return nil }

// Args returns the idembench run flags that repeat p's restarts, network
// faults, aimed faults and client timeout, for a replay command; aof says
// that the private Redis of the restarts keeps an always-fsynced AOF. A
// failover is repeated by --failover, which the caller adds.
func (p *Plan) Args(aof bool) []string {
	var args []string
	if p == nil {
		return args
	}
	if restarts := p.Restarts(); len(restarts) > 0 {
		at := make([]string, len(restarts))
		for i, d := range restarts {
			at[i] = d.String()
		}
		args = append(args, "--restart-at", strings.Join(at, ","))
	}
	if aof && (len(p.Restarts()) > 0 || p.aimed(history.FaultRestart)) {
		args = append(args, "--redis-persistence", "aof-always")
	}
	if p.aimed(history.FaultRestart) {
		args = append(args, "--aim-restart", p.Aim.Duration.String())
	}
	for _, f := range p.Network() {
		args = append(args, "--net-fault", f.String())
	}
	if p.Aim != nil && p.Aim.Kind.Network() {
		args = append(args, "--aim-net", p.Aim.String())
	}
	if p.ClientTimeout > 0 {
		args = append(args, "--client-timeout", p.ClientTimeout.String())
	}
	return args
}
