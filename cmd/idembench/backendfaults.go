package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"slices"
	"sync"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// backendFaults are the faults a run injects on its backend rather than in
// the engine: crash restarts of a private server (chaos/servers) and network
// faults on a proxy between the engine and the server (chaos/netfault).
// Offsets count from the start of traffic. The zero value injects nothing.
type backendFaults struct {
	// Redis or Postgres, when set, is the private server the run uses
	// instead of its URL, and the one Restarts crash. The caller owns it.
	Redis    *servers.Redis
	Postgres *servers.Postgres
	// Restarts are the offsets at which the server is crashed and started
	// again.
	Restarts []time.Duration
	// Net are network fault windows; a proxy is put in front of the server
	// when there is any.
	Net []netWindow
	// RetryTimeout, when positive, replaces the scenario's client timeout,
	// so that a call whose reply is lost ends as unknown and is retried.
	RetryTimeout time.Duration
	// ReplayArgs are the command-line flags that repeat these faults.
	ReplayArgs []string
}

// netWindow is one network fault from At for For.
type netWindow struct {
	Fault   netfault.Fault
	At, For time.Duration
}

func (b *backendFaults) active() bool {
	return b != nil && (b.Redis != nil || b.Postgres != nil || len(b.Restarts) > 0 || len(b.Net) > 0)
}

// faultEnv is the backend side of one run's faults: the proxy, the schedule
// and the windows it recorded.
type faultEnv struct {
	spec  *backendFaults
	proxy *netfault.Proxy

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	windows []history.Op
	errs    []error
}

// openBackendFaults points sp at the private server and the proxy of
// sp.BackendFaults, or returns nil when there is none. The caller closes
// the env after the run.
func openBackendFaults(ctx context.Context, sp *runSpec) (*faultEnv, error) {
	b := sp.BackendFaults
	if !b.active() {
		return nil, nil
	}
	switch {
	case b.Redis != nil:
		if sp.Backend != backendRedis {
			return nil, usageErr("a private Redis server needs --backend redis")
		}
		sp.RedisURL = b.Redis.URL()
	case b.Postgres != nil:
		if sp.Backend != backendPostgres {
			return nil, usageErr("a private PostgreSQL server needs --backend postgres")
		}
		sp.PostgresURL = b.Postgres.URL()
	case len(b.Restarts) > 0:
		return nil, usageErr("backend restarts need a private server")
	}
	env := &faultEnv{spec: b}
	if len(b.Net) == 0 {
		return env, nil
	}
	url := &sp.RedisURL
	switch sp.Backend {
	case backendPostgres:
		url = &sp.PostgresURL
	case backendRedis:
	default:
		return nil, usageErr("network faults need --backend redis or postgres")
	}
	u, err := neturl.Parse(*url)
	if err != nil || u.Host == "" {
		return nil, usageErr("network faults: backend URL %q has no host:port", redactURL(*url))
	}
	upstream := u.Host
	if u.Port() == "" {
		port := "6379"
		if sp.Backend == backendPostgres {
			port = "5432"
		}
		upstream = net.JoinHostPort(u.Hostname(), port)
	}
	env.proxy, err = netfault.New(ctx, upstream, netfault.Options{Clock: history.Now, Seed: uint64(sp.Seed)})
	if err != nil {
		return nil, envErr(err)
	}
	u.Host = env.proxy.Addr()
	*url = u.String()
	return env, nil
}

// wrap returns the run's fault injector: inj, plus this env's schedule,
// which starts and stops with the traffic.
func (e *faultEnv) wrap(inj *chaos.Injector) workload.Faults {
	if e == nil {
		return inj
	}
	return &envFaults{inj: inj, env: e}
}

type envFaults struct {
	inj *chaos.Injector
	env *faultEnv
}

func (f *envFaults) Start()                           { f.inj.Start(); f.env.start() }
func (f *envFaults) Hook() idem.Hook                  { return f.inj.Hook() }
func (f *envFaults) ForcedFailure(l idem.Lease) error { return f.inj.ForcedFailure(l) }
func (f *envFaults) Stop()                            { f.env.stop(); f.inj.Stop() }

var _ workload.Faults = (*envFaults)(nil)

type envEvent struct {
	at  time.Duration
	run func(ctx context.Context) error
}

// start runs the schedule on its own goroutine. On a nil env it does
// nothing.
func (e *faultEnv) start() {
	if e == nil {
		return
	}
	var evs []envEvent
	for _, at := range e.spec.Restarts {
		evs = append(evs, envEvent{at, e.restart})
	}
	for _, w := range e.spec.Net {
		evs = append(evs, envEvent{w.At, func(context.Context) error { return e.proxy.On(w.Fault) }})
		evs = append(evs, envEvent{w.At + w.For, func(context.Context) error { return e.proxy.Off(w.Fault.Kind) }})
	}
	slices.SortStableFunc(evs, func(a, b envEvent) int { return int(a.at - b.at) })
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(e.done)
		for _, ev := range evs {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(t0.Add(ev.at))):
			}
			// A restart under way finishes even when traffic ends: a
			// server left down would fail the rest of the run.
			if err := ev.run(context.WithoutCancel(ctx)); err != nil {
				e.fail(err)
			}
		}
	}()
}

// stop ends the schedule (a fault still on is healed) and waits for it. On
// a nil or unstarted env it does nothing.
func (e *faultEnv) stop() {
	if e == nil || e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	if e.proxy != nil {
		if err := e.proxy.Heal(); err != nil {
			e.fail(err)
		}
	}
}

func (e *faultEnv) fail(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

// restart crashes the private server and starts it again, recording the
// window it was down.
func (e *faultEnv) restart(ctx context.Context) error {
	w := history.Op{Kind: history.KindFault, Client: -1, Worker: -1, Call: history.Now()}
	var err error
	switch {
	case e.spec.Redis != nil:
		w.Label = "restart redis (SIGKILL)"
		err = e.spec.Redis.Restart(ctx)
	case e.spec.Postgres != nil:
		w.Label = "restart postgres (immediate)"
		err = e.spec.Postgres.Restart(ctx)
	}
	w.Return = history.Now()
	e.mu.Lock()
	e.windows = append(e.windows, w)
	e.mu.Unlock()
	return err
}

// addWindows adds the recorded restart and network windows to h.
func (e *faultEnv) addWindows(h *history.History) {
	if e == nil {
		return
	}
	e.mu.Lock()
	h.Ops = append(h.Ops, e.windows...)
	e.mu.Unlock()
	if e.proxy != nil {
		for _, w := range e.proxy.Windows() {
			end := w.End
			if w.Open {
				end = history.Now()
			}
			h.Ops = append(h.Ops, history.Op{Kind: history.KindFault, Client: -1, Worker: -1, Call: w.Start, Return: end, Label: "net " + w.Label})
		}
	}
	history.SortByCall(h.Ops)
}

// err reports what went wrong injecting the faults: a run whose faults
// were not injected proves nothing.
func (e *faultEnv) err() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend faults: %w", errors.Join(e.errs...))
}

// close closes the proxy.
func (e *faultEnv) close() {
	if e != nil && e.proxy != nil {
		_ = e.proxy.Close()
	}
}
