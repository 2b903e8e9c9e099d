package backendfault

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// defaultPorts are the ports of URLs that name none, by scheme.
var defaultPorts = map[string]string{"redis": "6379", "rediss": "6379", "postgres": "5432", "postgresql": "5432"}

// Open prepares the faults of p for a store at url: it returns the URL the
// store must use instead (the private server's, with a proxy in front when
// p has network faults) and the Env to start with the traffic. Restarts
// without a Server, or network faults on a URL without host:port, wrap
// ErrPlan, and so do network faults in a program that links no proxy
// (ErrNoProxy, see RegisterProxy); a proxy that does not start is an
// environment error. An inactive plan returns url and None. seed seeds
// the proxy's jitter.
func Open(ctx context.Context, p *Plan, url string, seed int64) (Env, string, error) {
	if !p.Active() {
		return None{}, url, nil
	}
	if err := p.validate(); err != nil {
		return nil, url, err
	}
	restarts := len(p.Restarts()) > 0 || p.aimed(history.FaultRestart)
	if p.Server != nil {
		url = p.Server.URL()
	} else if restarts {
		return nil, url, fmt.Errorf("%w: backend restarts need a private server", ErrPlan)
	}
	e := &env{plan: p}
	hasNet := len(p.Network()) > 0
	if p.Failover != nil {
		if p.Server != nil || hasNet || p.Aim != nil {
			return nil, url, fmt.Errorf("%w: a failover goes with no other backend fault", ErrPlan)
		}
		url, e.hook = p.Failover.URL, e.failoverHook()
		if st, ok := p.Failover.afterEffect(); ok {
			e.hook = e.afterEffectHook(st)
		}
	}
	if p.aimed(history.FaultRestart) {
		k, ok := p.Server.(killer)
		if !ok {
			return nil, url, fmt.Errorf("%w: an aimed restart needs a private server that can be killed", ErrPlan)
		}
		e.hook = e.restartHook(k)
	}
	if p.Aim != nil && p.Aim.Kind.Network() {
		if !hasNet {
			return nil, url, fmt.Errorf("%w: an aimed network fault needs network faults (the proxy it switches)", ErrPlan)
		}
		e.hook = e.aimHook()
	}
	if !hasNet {
		return e, url, nil
	}
	start := RegisteredProxy()
	if start == nil {
		return nil, url, fmt.Errorf("%w: %w", ErrPlan, ErrNoProxy)
	}
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" {
		return nil, url, fmt.Errorf("%w: network faults: the backend URL has no host:port", ErrPlan)
	}
	upstream := u.Host
	if u.Port() == "" {
		port, ok := defaultPorts[u.Scheme]
		if !ok {
			return nil, url, fmt.Errorf("%w: network faults: no default port for %q URLs", ErrPlan, u.Scheme)
		}
		upstream = net.JoinHostPort(u.Hostname(), port)
	}
	e.proxy, err = start(ctx, upstream, uint64(seed))
	if err != nil {
		return nil, url, err
	}
	u.Host = e.proxy.Addr()
	return e, u.String(), nil
}

// env is the Env of a Plan: the proxy, the schedule and the windows it
// recorded.
type env struct {
	plan  *Plan
	proxy Proxy
	// hook is the failover hook (nil without a failover); it fires only
	// while running.
	hook    idem.Hook
	running atomic.Bool
	aimWG   sync.WaitGroup

	// runCtx ends when Stop is called; set by Start before running.
	runCtx context.Context

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	windows []history.Op
	errs    []error
}

type event struct {
	at  time.Duration
	run func(ctx context.Context) error
}

func (e *env) events() []event {
	var evs []event
	for _, f := range e.plan.Faults {
		if f.Kind == history.FaultRestart {
			evs = append(evs, event{f.Start, e.restart})
			continue
		}
		evs = append(evs, event{f.Start, func(context.Context) error { return e.proxy.On(f) }})
		evs = append(evs, event{f.Start + f.Duration, func(context.Context) error { return e.proxy.Off(f.Kind) }})
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })
	return evs
}

func (e *env) Start() {
	evs := e.events()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done, e.runCtx = cancel, make(chan struct{}), ctx
	if f := e.plan.Failover; f != nil {
		if err := f.caughtUp(context.Background()); err != nil {
			e.fail(fmt.Errorf("failover %s: replica not caught up: %w", f.Kind, err))
		}
	}
	t0 := time.Now()
	e.running.Store(true)
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

func (e *env) Stop() {
	if e.cancel == nil {
		return
	}
	e.running.Store(false)
	e.cancel()
	<-e.done
	e.aimWG.Wait()
	if e.proxy != nil {
		if err := e.proxy.Heal(); err != nil {
			e.fail(err)
		}
	}
}

func (e *env) fail(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

// restart crashes the private server and starts it again, recording the
// window it was down.
func (e *env) restart(ctx context.Context) error {
	start := history.Now()
	err := e.plan.Server.Restart(ctx)
	e.record(history.Fault(history.FaultRestart, e.plan.restartLabel(), start, history.Now()))
	return err
}

// restartLabel is RestartLabel, or "restart backend".
func (p *Plan) restartLabel() string {
	if p.RestartLabel == "" {
		return "restart backend"
	}
	return p.RestartLabel
}

// record keeps one fault window.
func (e *env) record(op history.Op) {
	e.mu.Lock()
	e.windows = append(e.windows, op)
	e.mu.Unlock()
}

func (e *env) Windows() []history.Op {
	e.mu.Lock()
	out := slices.Clone(e.windows)
	e.mu.Unlock()
	if e.proxy != nil {
		out = append(out, e.proxy.Windows()...)
	}
	return out
}

func (e *env) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend faults: %w", errors.Join(e.errs...))
}

func (e *env) Close() error {
	if e.proxy != nil {
		return e.proxy.Close()
	}
	return nil
}
