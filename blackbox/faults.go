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

// FaultKinds lists the kinds of fault a black-box run injects (a
// Spec's Faults are chaos.Faults of these kinds). The network kinds act on
// an embedded fault proxy between the clients and the service; the
// process kinds need Target.Start:
//   - drop-replies: requests reach the service and are processed, the
//     replies are lost; clients time out with an unknown outcome;
//   - latency: every reply is delayed by the fault's Latency (beyond the
//     client timeout by default);
//   - reset: every connection is reset as soon as a byte flows on it,
//     so answers are cut in the middle;
//   - partition: the link is cut both ways;
//   - kill: the service gets SIGKILL and is started again after the
//     fault's Duration;
//   - pause: the service is stopped with SIGSTOP for the fault's
//     Duration, then gets SIGCONT.
//
// A fault fires once, at its Start after traffic starts (zero: a seeded
// time in the first 70% of the traffic), for its Duration (zero: 300 ms,
// at most MaxWait); a latency of zero is twice the client timeout (1 s
// without one), at most MaxWait.
var FaultKinds = []history.FaultKind{history.FaultDropReplies, history.FaultLatency, history.FaultReset,
	history.FaultPartition, history.FaultKill, history.FaultPause}

// faultRunner applies a seeded schedule of faults and records the windows
// of the process faults (the proxy records its own).
type faultRunner struct {
	faults []chaos.Fault
	proxy  *netfault.Proxy
	svc    *service
	now    func() int64

	mu      sync.Mutex
	windows []history.Op
	errs    []error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// schedule fills in the zero Start, Duration and Latency of faults from
// seed.
func schedule(faults []chaos.Fault, seed int64, traffic, timeout time.Duration) []chaos.Fault {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xfa17))
	out := make([]chaos.Fault, len(faults))
	for i, f := range faults {
		if f.Start == 0 {
			f.Start = time.Duration(rng.Int64N(int64(traffic)*7/10 + 1))
		}
		if f.Duration == 0 {
			f.Duration = 300 * time.Millisecond
		}
		if f.Kind == history.FaultLatency && f.Latency == 0 {
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
			case <-time.After(f.Start):
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

func (r *faultRunner) apply(ctx context.Context, f chaos.Fault) error {
	wait := func() {
		select {
		case <-time.After(f.Duration):
		case <-ctx.Done():
		}
	}
	switch {
	case f.Kind.Network():
		err := r.proxy.Inject(ctx, f)
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("blackbox: fault %s: %w", f.Kind, err)
		}
		return nil
	case f.Kind == history.FaultPause:
		start := r.now()
		r.svc.signal(syscall.SIGSTOP)
		wait()
		r.svc.signal(syscall.SIGCONT)
		r.record(history.FaultPause, start, "pause service (SIGSTOP) "+f.Duration.String())
	case f.Kind == history.FaultKill:
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
