package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/idem"
)

// Bounds of the backend check at the end of a run: how long the store has
// to answer one read, and in all (a pooled connection that died with a
// restarted server fails one read before the pool dials again).
const (
	backendReadTimeout = time.Second
	backendHealthWait  = 3 * time.Second
)

// CheckBackend tells a run whose backend died or froze outside its fault
// plan, once the traffic (and its liveness probes) are over. A fault the
// plan injected is a fault, and what the engine makes of it is the verdict's;
// a server that died on its own, or that someone killed or stopped, is the
// environment: the probes it failed say nothing of the engine, and a
// verdict would blame the engine (invariant I6, a key left stuck) for it.
//
// It returns an error wrapping ErrEnvironment and ErrBackendDied that names
// what died:
//   - the plan's private server (backendfault.Plan.Server) when it exited
//     without the plan crashing it, or is stopped (SIGSTOP);
//   - otherwise, on a run whose plan does not crash or fail over the
//     server (then a store that does not answer is the engine's affair),
//     the backend at the spec's URL when the store does not answer a read
//     within backendHealthWait.
//
// It returns nil on the memory backend, whose store cannot die apart from
// the run, and when ctx has ended.
func (p *Prepared) CheckBackend(ctx context.Context) error {
	sp := p.Spec
	if !sp.Backend.Persistent() || ctx.Err() != nil {
		return nil
	}
	if err := sp.Faults.ServerHealth(); err != nil {
		return p.serverDied(err)
	}
	if sp.Faults.KillsServer() {
		return nil
	}
	err := p.readBackend(ctx)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return EnvironmentError(fmt.Errorf("%w: the %s server at %s stopped answering during the run, and no fault of the run's plan explains it "+
		"(killed, crashed or stopped with SIGSTOP?): %w; the run was not checked (a probe of a dead server says nothing of the engine)",
		ErrBackendDied, sp.Backend, RedactURL(sp.URL), err))
}

// readBackend reads a key of the run that was never written through the
// run's store until the store answers (a record, or none), within
// backendHealthWait. It returns the last backend error, or nil.
func (p *Prepared) readBackend(ctx context.Context) error {
	key, err := idem.StorageKey(p.Config.Keys.Prefix + "-backend-check")
	if err != nil {
		return nil // a prefix the store does not take: nothing to read with
	}
	deadline := time.Now().Add(backendHealthWait)
	for {
		rctx, cancel := context.WithTimeout(ctx, backendReadTimeout)
		_, err = p.Config.Store.Get(rctx, key)
		cancel()
		if err == nil || !errors.Is(err, idem.ErrBackend) && !errors.Is(err, context.DeadlineExceeded) {
			return nil // it answered
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// serverDied is the error of a run whose private server died outside the
// plan (err: its Health error).
func (p *Prepared) serverDied(err error) error {
	return EnvironmentError(fmt.Errorf("%w: the run's private %s server, and not by the fault plan: %w; "+
		"the run was not checked (a probe of a dead server says nothing of the engine)", ErrBackendDied, p.Spec.Backend, err))
}

// How the backend is watched while the traffic runs: every
// backendWatchEvery; a server that refused every read for
// backendRefusedFor is dead.
const (
	backendWatchEvery = 100 * time.Millisecond
	backendRefusedFor = 2 * time.Second
)

// WatchBackend watches the run's backend while the traffic runs, so that a
// run whose server dies outside the plan ends at once instead of driving a
// dead server to the end. The returned context is ctx, cancelled when the
// backend dies; stop ends the watch and returns the error CheckBackend
// would (wrapping ErrEnvironment and ErrBackendDied, naming the server),
// or nil.
//
// It watches the plan's private server (backendfault.Plan.Server) when it
// can tell a death nobody planned (backendfault.HealthChecker); else, on a
// run with no backend fault at all, the store: a read refused at once (not
// a slow one: load is no death) for backendRefusedFor. A frozen server is
// found only at the end (CheckBackend). Otherwise it returns ctx and a
// stop that returns nil.
func (p *Prepared) WatchBackend(ctx context.Context) (context.Context, func() error) {
	check := p.deathCheck()
	if check == nil {
		return ctx, func() error { return nil }
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var died error
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(backendWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if err := check(wctx); err != nil && wctx.Err() == nil {
				died = err
				cancel()
				return
			}
		}
	})
	return wctx, func() error {
		close(done)
		wg.Wait()
		cancel()
		return died
	}
}

// deathCheck returns what WatchBackend calls to find the backend dead, or
// nil when there is nothing to watch.
func (p *Prepared) deathCheck() func(ctx context.Context) error {
	sp := p.Spec
	if !sp.Backend.Persistent() {
		return nil
	}
	if sp.Faults != nil && sp.Faults.Server != nil {
		if _, ok := sp.Faults.Server.(backendfault.HealthChecker); !ok {
			return nil
		}
		return func(context.Context) error {
			if err := sp.Faults.ServerHealth(); err != nil {
				return p.serverDied(err)
			}
			return nil
		}
	}
	key, err := idem.StorageKey(p.Config.Keys.Prefix + "-backend-check")
	if sp.Faults.Active() || err != nil {
		return nil
	}
	lastOK := time.Now()
	return func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, backendReadTimeout)
		_, err := p.Config.Store.Get(rctx, key)
		cancel()
		refused := err != nil && errors.Is(err, idem.ErrBackend) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
		if !refused {
			lastOK = time.Now()
			return nil
		}
		if time.Since(lastOK) < backendRefusedFor {
			return nil
		}
		return EnvironmentError(fmt.Errorf("%w: the %s server at %s refused every read for %s, and the run plans no backend fault "+
			"(killed or crashed?): %w; the run was stopped and not checked", ErrBackendDied, sp.Backend, RedactURL(sp.URL), backendRefusedFor, err))
	}
}
