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

	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// defaultPorts are the ports of URLs that name none, by scheme.
var defaultPorts = map[string]string{"redis": "6379", "rediss": "6379", "postgres": "5432", "postgresql": "5432"}

// Open prepares the faults of p for a store at url: it returns the URL the
// store must use instead (the private server's, with a proxy in front when
// p has network faults) and the Env to start with the traffic. Restarts
// without a Server, or network faults on a URL without host:port, wrap
// ErrPlan; a proxy that does not start is an environment error. An
// inactive plan returns url and None. seed seeds the proxy's jitter.
func Open(ctx context.Context, p *Plan, url string, seed int64) (Env, string, error) {
	if !p.Active() {
		return None{}, url, nil
	}
	if p.Server != nil {
		url = p.Server.URL()
	} else if len(p.Restarts) > 0 {
		return nil, url, fmt.Errorf("%w: backend restarts need a private server", ErrPlan)
	}
	e := &env{plan: p}
	if p.Failover != nil {
		if p.Server != nil || len(p.Net) > 0 {
			return nil, url, fmt.Errorf("%w: a failover goes with no other backend fault", ErrPlan)
		}
		url, e.hook = p.Failover.URL, e.failoverHook()
		if st, ok := p.Failover.afterEffect(); ok {
			e.hook = e.afterEffectHook(st)
		}
	}
	if p.AimRestart > 0 {
		k, ok := p.Server.(killer)
		if !ok || p.Aim != nil || p.Failover != nil {
			return nil, url, fmt.Errorf("%w: an aimed restart needs a private server that can be killed, and no other aim", ErrPlan)
		}
		e.hook = e.restartHook(k)
	}
	if p.Aim != nil {
		if p.Failover != nil || len(p.Net) == 0 {
			return nil, url, fmt.Errorf("%w: an aimed network fault needs network faults and no failover", ErrPlan)
		}
		e.hook = e.aimHook()
	}
	if len(p.Net) == 0 {
		return e, url, nil
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
	e.proxy, err = netfault.New(ctx, upstream, netfault.Options{Clock: history.Now, Seed: uint64(seed)})
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
	proxy *netfault.Proxy
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
	for _, at := range e.plan.Restarts {
		evs = append(evs, event{at, e.restart})
	}
	for _, w := range e.plan.Net {
		evs = append(evs, event{w.At, func(context.Context) error { return e.proxy.On(w.Fault) }})
		evs = append(evs, event{w.At + w.For, func(context.Context) error { return e.proxy.Off(w.Fault.Kind) }})
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
	label := e.plan.RestartLabel
	if label == "" {
		label = "restart backend"
	}
	start := history.Now()
	err := e.plan.Server.Restart(ctx)
	e.mu.Lock()
	e.windows = append(e.windows, history.Fault(label, start, history.Now()))
	e.mu.Unlock()
	return err
}

func (e *env) Windows() []history.Op {
	e.mu.Lock()
	out := slices.Clone(e.windows)
	e.mu.Unlock()
	if e.proxy != nil {
		for _, w := range e.proxy.Windows() {
			end := w.End
			if w.Open {
				end = history.Now()
			}
			out = append(out, history.Fault("net "+w.Label, w.Start, end))
		}
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
