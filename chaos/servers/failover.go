//go:build unix

package servers

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idembench/idembench/history"
)

// ErrNoReplica is returned by Failover when the topology has no live replica
// left to promote (every one was promoted by an earlier Failover).
var ErrNoReplica = errors.New("servers: no replica left to promote")

// Topology is a replicated set of servers whose primary can be failed over:
// RedisSentinel, RedisCluster and PostgresReplicated.
type Topology interface {
	// Failover kills the primary with SIGKILL (for a Cluster, the primary
	// owning key's slot; key may be empty elsewhere), waits until a replica
	// was promoted and accepts writes, and returns the fault window: a
	// history.Fault of kind FaultFailover from just before the kill to the
	// promotion, on history.Now's timeline, Key set to key. Call it right
	// after the primary acknowledged a write to aim at the window where
	// the write may exist on the primary only. On error after the kill the
	// window's Return is history.NoReturn.
	Failover(ctx context.Context, key string) (history.Op, error)
	// Stop stops every process of the topology and removes its
	// directories; it is idempotent.
	Stop() error
}

// StepFailover is a Topology whose failover can also be taken in two
// steps, so that writes sent between them meet the dead primary and fail
// instead of waiting for the promotion: the window of a crash after an
// effect, on a replicated store.
type StepFailover interface {
	Topology
	// KillPrimary kills the primary with SIGKILL and returns at once
	// with a label for the fault window; no replica is promoted before
	// Promote.
	KillPrimary() (string, error)
	// Promote promotes a replica after KillPrimary and waits until it
	// accepts writes; it returns a label for the fault window.
	Promote(ctx context.Context) (string, error)
}

// faultWindow is the history record of one failover.
func faultWindow(start int64, key, label string, err error) history.Op {
	op := history.Fault(history.FaultFailover, label, start, history.Now()).OnKey(key, 0)
	if err != nil {
		op.Return = history.NoReturn
		op.Err = err.Error()
	}
	return op
}

// failover is the Failover of a primary/replica topology (kind names it in
// the window's label) under its lock: kill takes the primary down (nil:
// nothing was done), then promote, within failoverTimeout when ctx has no
// deadline, waits for a replica to take over and returns its address. The
// window spans both steps; a failed step ends it with its error.
func failover[S any, P interface {
	*S
	Addr() string
}](ctx context.Context, key, kind string, kill func() (P, error), promote func(ctx context.Context, old P) (string, error)) (history.Op, error) {
	start := history.Now()
	ctx, cancel := withStartTimeout(ctx, failoverTimeout)
	defer cancel()
	old, err := kill()
	if old == nil {
		return history.Op{}, err
	}
	label := "failover " + kind + ": kill primary " + old.Addr()
	if err != nil {
		return faultWindow(start, key, label, err), err
	}
	next, err := promote(ctx, old)
	if err != nil {
		return faultWindow(start, key, label, err), err
	}
	return faultWindow(start, key, label+", promoted "+next, nil), nil
}

// failoverTimeout bounds a Failover whose context has no deadline.
const failoverTimeout = 60 * time.Second

// poll calls f every interval until it returns true or an error, or ctx
// ends.
func poll(ctx context.Context, interval time.Duration, f func(ctx context.Context) (bool, error)) error {
	for {
		done, err := f(ctx)
		if err != nil || done {
			return err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// stopAll stops every server concurrently and returns the errors joined.
func stopAll[S interface{ Stop() error }](ss []S) error {
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { errs[i] = s.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
