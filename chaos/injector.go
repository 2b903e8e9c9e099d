package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Config configures an Injector.
type Config struct {
	// Seed fixes the arming times and the probability draws.
	Seed int64
	// Faults is the schedule. An empty schedule gives a nil Hook.
	Faults []Fault
	// RunFor is the length of the run's traffic: the default end of every
	// fault window. It must be positive when a fault leaves End zero.
	RunFor time.Duration
	// Now reads the run's timeline (nanoseconds) for the fault windows.
	// Nil means a process-local monotonic clock.
	Now func() int64
	// Clock measures the time since Start against the fault windows and
	// arming offsets. Nil means the system clock. Pauses always sleep in
	// real time.
	Clock idem.Clock
}

// Limits on a schedule, checked by New. A Count fault draws its arming
// offsets up front, so its count is bounded both absolutely and by the
// length of its window.
const (
	// MaxCount is the largest Count of one fault.
	MaxCount = 10_000
	// MaxCountPerSecond is the largest Count of one fault per second of
	// its window (at least one arming is always allowed).
	MaxCountPerSecond = 1_000
)

// ErrLimit wraps every error of New about a schedule beyond the limits
// above.
var ErrLimit = checker.Classed("chaos: fault schedule beyond limits", checker.ErrUsage)

// ErrPauseCut is returned by the hook when the caller's context ended
// during a pause: the execution is abandoned like a crash (its lease stays).
var ErrPauseCut = errors.New("chaos: pause cut short by the end of the run")

// Injector runs a fault schedule through the engine's fault hook. It is
// safe for concurrent use. The zero Injector is not usable: call New.
type Injector struct {
	faults []armedFault
	now    func() int64
	clock  idem.Clock
	salt   uint64

	started atomic.Bool
	stopped atomic.Bool
	t0      time.Time // set by Start, read after started is observed

	failNext sync.Map // idem.Token -> struct{}: resumed pauses that must fail

	mu      sync.Mutex
	windows []history.Op
}

type armedFault struct {
	Fault
	point idem.Point
	end   time.Duration
	at    []time.Duration // Count mode: sorted arming offsets
	next  atomic.Int64    // Count mode: index of the next arming
	thres uint64          // Probability mode: hit when hash < thres
}

// New validates cfg and returns an Injector. The arming offsets of Count
// faults are drawn here from cfg.Seed, so the same seed and schedule always
// give the same offsets.
func New(cfg Config) (*Injector, error) {
	in := &Injector{now: cfg.Now, clock: cfg.Clock, salt: uint64(cfg.Seed)}
	if in.clock == nil {
		in.clock = idem.SystemClock{}
	}
	if in.now == nil {
		base := time.Now()
		in.now = func() int64 { return int64(time.Since(base)) + 1 }
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6368616f73)) // "chaos"
	in.faults = make([]armedFault, len(cfg.Faults))
	for i, f := range cfg.Faults {
		if !f.InEngine() {
			return nil, fmt.Errorf("fault %d: chaos: the engine hook injects crash and pause, not %q", i+1, f.Kind)
		}
		if err := f.Validate(cfg.RunFor); err != nil {
			return nil, fmt.Errorf("fault %d: %w", i+1, err)
		}
		a := &in.faults[i]
		a.Fault = f
		a.point = f.point()
		a.end = f.End
		if a.end == 0 {
			if cfg.RunFor <= 0 {
				return nil, fmt.Errorf("fault %d: window has no end and the run length is unknown", i+1)
			}
			a.end = cfg.RunFor
		}
		if err := checkCount(f.Count, a.end-f.Start); err != nil {
			return nil, fmt.Errorf("fault %d: %w", i+1, err)
		}
		if f.Count > 0 {
			a.at = make([]time.Duration, f.Count)
			span := int64(a.end - f.Start)
			for j := range a.at {
				a.at[j] = f.Start + time.Duration(rng.Int64N(span))
			}
			slices.Sort(a.at)
		} else {
			a.thres = uint64(f.Probability * float64(^uint64(0)))
			if f.Probability >= 1 {
				a.thres = ^uint64(0)
			}
		}
	}
	return in, nil
}

// Start marks the start of the run: fault windows are measured from here.
// Before Start no fault fires. Calling it again has no effect.
func (in *Injector) Start() {
	if in.started.Load() {
		return
	}
	in.t0 = in.clock.Now()
	in.started.Store(true)
}

// Stop disarms every fault: no injection starts after Stop returns (a pause
// already stalling runs to its end). The workload calls it before the
// end-of-run probe.
func (in *Injector) Stop() { in.stopped.Store(true) }

// Hook returns the idem.Hook that injects the schedule, or nil when the
// schedule is empty (so the engine's fault points cost a nil check).
func (in *Injector) Hook() idem.Hook {
	if in == nil || len(in.faults) == 0 {
		return nil
	}
	return in.hook
}

func (in *Injector) hook(ctx context.Context, p idem.Point, l idem.Lease) error {
	if !in.started.Load() || in.stopped.Load() {
		return nil
	}
	elapsed := in.clock.Now().Sub(in.t0)
	for i := range in.faults {
		f := &in.faults[i]
		if f.point != p || elapsed < f.Start || elapsed >= f.end || !in.fire(i, f, elapsed, &l) {
			continue
		}
		return in.inject(ctx, f, p, &l)
	}
	return nil
}

// checkCount enforces MaxCount and MaxCountPerSecond for a window of
// length span.
func checkCount(count int, span time.Duration) error {
	if count > MaxCount {
		return fmt.Errorf("%w: count %d is above the limit of %d", ErrLimit, count, MaxCount)
	}
	perSpan := max(1, int(math.Ceil(span.Seconds()*MaxCountPerSecond)))
	if count > perSpan {
		return fmt.Errorf("%w: count %d in a window of %s is above the limit of %d per second (%d here)",
			ErrLimit, count, span, MaxCountPerSecond, perSpan)
	}
	return nil
}

// fire decides whether fault i hits the execution of l now.
func (in *Injector) fire(i int, f *armedFault, elapsed time.Duration, l *idem.Lease) bool {
	if f.at != nil {
		for {
			n := f.next.Load()
			if n >= int64(len(f.at)) || f.at[n] > elapsed {
				return false
			}
			if f.next.CompareAndSwap(n, n+1) {
				return true
			}
		}
	}
	// FNV-1a of the key, mixed with the run seed, the fault index and the
	// token: deterministic across processes, independent across faults.
	k := uint64(14695981039346656037)
	for j := 0; j < len(l.Key); j++ {
		k = (k ^ uint64(l.Key[j])) * 1099511628211
	}
	x := mix(k ^ mix(in.salt+uint64(i)*0x9e3779b97f4a7c15) ^ uint64(l.Token)*0xbf58476d1ce4e5b9)
	return x < f.thres
}

// inject performs fault f on the execution of l. A pause ignores the
// lease (it models a stopped process, whose heartbeat does not run) but not
// ctx, the caller's context: when the run ends, the pause ends at once and
// the execution is abandoned like a crash, so no pause can hold up a
// cancelled run.
func (in *Injector) inject(ctx context.Context, f *armedFault, p idem.Point, l *idem.Lease) error {
	label, start := f.Label(), in.now()
	if f.Kind == history.FaultCrash {
		in.record(history.Fault(f.Kind, label, start, start), l)
		return ErrCrash
	}
	t := time.NewTimer(f.Duration)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		in.record(history.Fault(f.Kind, label+" (cut short: run ended)", start, in.now()), l)
		return fmt.Errorf("%w: %w", ErrPauseCut, context.Cause(ctx))
	}
	if f.ThenFail {
		in.failNext.Store(l.Token, struct{}{})
	}
	in.record(history.Fault(f.Kind, label, start, in.now()), l)
	return nil
}

// record keeps the window of an injection into the execution of l.
func (in *Injector) record(op history.Op, l *idem.Lease) {
	op = op.OnKey(l.Key, uint64(l.Token))
	in.mu.Lock()
	in.windows = append(in.windows, op)
	in.mu.Unlock()
}

// ForcedFailure returns ErrInjected, once, for an execution that a pause
// with ThenFail has resumed, and nil for every other. The business function
// calls it before its side effect.
func (in *Injector) ForcedFailure(l idem.Lease) error {
	if in == nil {
		return nil
	}
	if _, ok := in.failNext.LoadAndDelete(l.Token); ok {
		return ErrInjected
	}
	return nil
}

// Windows returns the injections so far as fault windows of the history
// (a crash is an instant, a pause spans its stall), each on the key and
// token of the execution it hit, sorted by start.
func (in *Injector) Windows() []history.Op {
	in.mu.Lock()
	out := slices.Clone(in.windows)
	in.mu.Unlock()
	slices.SortStableFunc(out, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

// IsCrash reports whether err is (or wraps) an injected crash.
func IsCrash(err error) bool { return errors.Is(err, ErrCrash) }

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
