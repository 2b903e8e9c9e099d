package blackbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/history"
)

// Fault kinds. The network faults act on an embedded fault proxy between
// the clients and the service; the process faults need Target.Start.
const (
	// FaultDropReplies: requests reach the service and are processed, the
	// replies are lost; clients time out with an unknown outcome.
	FaultDropReplies = "drop-replies"
	// FaultLatency delays every reply by Fault.Latency (beyond the client
	// timeout by default).
	FaultLatency = "latency"
	// FaultReset resets every connection as soon as a byte flows on it,
	// so answers are cut in the middle.
	FaultReset = "reset"
	// FaultPartition cuts the link both ways.
	FaultPartition = "partition"
	// FaultKill sends SIGKILL to the service and restarts it after
	// Fault.For.
	FaultKill = "kill"
	// FaultPause stops the service with SIGSTOP for Fault.For, then
	// SIGCONT.
	FaultPause = "pause"
)

// FaultKinds lists every fault kind.
var FaultKinds = []string{FaultDropReplies, FaultLatency, FaultReset, FaultPartition, FaultKill, FaultPause}

// Fault is one fault window of a run.
type Fault struct {
	// Kind is one of FaultKinds.
	Kind string
	// At is when the fault starts, after traffic starts. Zero means a
	// seeded random time in the first 70% of the traffic.
	At time.Duration
	// For is how long it lasts; zero means 300 ms, at most MaxWait. For
	// FaultKill it is the time the service stays down before it is
	// restarted.
	For time.Duration
	// Latency is the delay of FaultLatency; zero means twice the client
	// timeout (1 s without one), at most MaxWait.
	Latency time.Duration
}

func (f Fault) network() bool {
	switch f.Kind {
	case FaultDropReplies, FaultLatency, FaultReset, FaultPartition:
		return true
	}
	return false
}

// faultRunner applies a seeded schedule of faults and records the windows
// of the process faults (the proxy records its own).
type faultRunner struct {
	faults []Fault
	proxy  *netfault.Proxy
	svc    *service
	now    func() int64

	mu      sync.Mutex
	windows []history.Op
	errs    []error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// schedule fills in the zero At, For and Latency of faults from seed.
func schedule(faults []Fault, seed int64, traffic, timeout time.Duration) []Fault {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xfa17))
	out := make([]Fault, len(faults))
	for i, f := range faults {
		if f.At == 0 {
			f.At = time.Duration(rng.Int64N(int64(traffic)*7/10 + 1))
		}
		if f.For == 0 {
			f.For = 300 * time.Millisecond
		}
		if f.Kind == FaultLatency && f.Latency == 0 {
			f.Latency = 2 * timeout
			if timeout == 0 {
				f.Latency = time.Second
			}
		}
		out[i] = f
	}
	return out
}

// start runs every fault on its own goroutine, from now on.
func (r *faultRunner) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	for _, f := range r.faults {
		r.wg.Go(func() {
			select {
			case <-time.After(f.At):
			case <-ctx.Done():
				return
			}
			if err := r.apply(ctx, f); err != nil {
				r.mu.Lock()
				r.errs = append(r.errs, err)
				r.mu.Unlock()
			}
		})
	}
}

// stop cancels the faults still to come, waits for those running to end
// and heals everything: the proxy, a paused or a killed service.
func (r *faultRunner) stop(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.proxy != nil {
		_ = r.proxy.Heal()
	}
	if r.svc != nil {
		r.svc.signal(syscall.SIGCONT)
		// A service that exited on its own is not restarted: the run ends
		// with ErrServiceExited.
		if !r.svc.running() && ctx.Err() == nil && r.svc.unexpectedExit() == nil {
			if err := r.svc.run(ctx); err != nil {
				return err
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		return r.errs[0]
	}
	return nil
}

func (r *faultRunner) apply(ctx context.Context, f Fault) error {
	wait := func() {
		select {
		case <-time.After(f.For):
		case <-ctx.Done():
		}
	}
	switch f.Kind {
	case FaultDropReplies, FaultReset, FaultPartition, FaultLatency:
		nf := chaos.Fault{Kind: history.FaultKind(f.Kind), Duration: f.For}
		if f.Kind == FaultLatency {
			nf.Latency = f.Latency
		}
		err := r.proxy.Inject(ctx, nf)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("blackbox: fault %s: %w", f.Kind, err)
		}
		return nil
	case FaultPause:
		start := r.now()
		r.svc.signal(syscall.SIGSTOP)
		wait()
		r.svc.signal(syscall.SIGCONT)
		r.record(history.FaultPause, start, "pause service (SIGSTOP) "+f.For.String())
	case FaultKill:
		start := r.now()
		r.svc.kill()
		wait()
		if ctx.Err() != nil {
			r.record(history.FaultKill, start, "kill service (SIGKILL)")
			return nil
		}
		err := r.svc.run(ctx)
		r.record(history.FaultKill, start, "kill service (SIGKILL) and restart")
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func (r *faultRunner) record(kind history.FaultKind, start int64, label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows = append(r.windows, history.Fault(kind, label, start, max(r.now(), start)))
}

// ops returns every fault window as history ops.
func (r *faultRunner) ops() []history.Op {
	r.mu.Lock()
	out := append([]history.Op(nil), r.windows...)
	r.mu.Unlock()
	if r.proxy != nil {
		out = append(out, r.proxy.Windows()...)
	}
	return out
}
