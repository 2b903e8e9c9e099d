package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

func TestFaultValidate(t *testing.T) {
	cases := []struct {
		name string
		f    chaos.Fault
		want string // "" = valid
	}{
		{"crash count", chaos.Fault{Kind: history.FaultCrash, Point: idem.PointAfterFn, Count: 2}, ""},
		{"crash default point", chaos.Fault{Kind: history.FaultCrash, Probability: 0.1}, ""},
		{"pause", chaos.Fault{Kind: history.FaultPause, Duration: time.Second, Count: 1, ThenFail: true}, ""},
		{"no kind", chaos.Fault{Count: 1}, "unknown fault kind"},
		{"crash with duration", chaos.Fault{Kind: history.FaultCrash, Count: 1, Duration: time.Second}, "no duration"},
		{"pause without duration", chaos.Fault{Kind: history.FaultPause, Count: 1}, "positive duration"},
		{"pause after fn", chaos.Fault{Kind: history.FaultPause, Point: idem.PointAfterFn, Duration: time.Second, Count: 1}, "no heartbeat"},
		{"neither count nor probability", chaos.Fault{Kind: history.FaultCrash}, "exactly one"},
		{"both", chaos.Fault{Kind: history.FaultCrash, Count: 1, Probability: 0.5}, "exactly one"},
		{"probability above one", chaos.Fault{Kind: history.FaultCrash, Probability: 1.5}, "outside"},
		{"window reversed", chaos.Fault{Kind: history.FaultCrash, Count: 1, Start: 2 * time.Second, End: time.Second}, "not after start"},
		{"window past run", chaos.Fault{Kind: history.FaultCrash, Count: 1, Start: 20 * time.Second}, "not before the end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.f.Validate(10 * time.Second)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestParsePoint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want idem.Point
	}{
		{"after-acquire", idem.PointAfterAcquire},
		{"before-fn", idem.PointBeforeFn}, {"before-effect", idem.PointBeforeFn},
		{"after-fn", idem.PointAfterFn}, {"after-effect", idem.PointAfterFn},
		{"after-complete", idem.PointAfterComplete}, {"before-reply", idem.PointAfterComplete},
	} {
		if got, err := chaos.ParsePoint(c.in); err != nil || got != c.want {
			t.Errorf("ParsePoint(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := chaos.ParsePoint("midway"); err == nil {
		t.Error("ParsePoint accepted an unknown point")
	}
}

func lease(key string, token idem.Token) idem.Lease { return idem.Lease{Key: key, Token: token} }

// startPause returns a started injector that pauses every execution for d
// before its function (then fails it: ThenFail).
func startPause(t *testing.T, d time.Duration) *chaos.Injector {
	t.Helper()
	in, err := chaos.New(chaos.Config{Seed: 1, RunFor: time.Minute, Faults: []chaos.Fault{
		{Kind: history.FaultPause, Duration: d, Probability: 1, ThenFail: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in.Start()
	return in
}

func TestEmptyScheduleHasNoHook(t *testing.T) {
	in, err := chaos.New(chaos.Config{RunFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if in.Hook() != nil {
		t.Fatal("empty schedule returned a hook")
	}
}

// fakeClock is a manual idem.Clock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// TestCountFiresExactly: a Count fault fires exactly Count times within its
// window, only at its point, never before Start or after the window.
func TestCountFiresExactly(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	in, err := chaos.New(chaos.Config{Seed: 3, RunFor: time.Minute, Clock: clock, Faults: []chaos.Fault{
		{Kind: history.FaultCrash, Point: idem.PointAfterFn, Count: 3, Start: 10 * time.Second, End: 20 * time.Second},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := in.Hook()
	ctx := context.Background()
	fire := func(p idem.Point, n int) int {
		got := 0
		for i := range n {
			if err := h(ctx, p, lease("k", idem.Token(i+1))); err != nil {
				if !errors.Is(err, chaos.ErrCrash) || !chaos.IsCrash(err) {
					t.Fatalf("crash error %v", err)
				}
				got++
			}
		}
		return got
	}
	clock.now = clock.now.Add(15 * time.Second)
	if fire(idem.PointAfterFn, 10) != 0 {
		t.Fatal("fired before Start")
	}
	in.Start()
	if fire(idem.PointAfterFn, 10) != 0 {
		t.Fatal("fired before the window")
	}
	clock.now = clock.now.Add(19*time.Second + 999*time.Millisecond)
	if fire(idem.PointBeforeFn, 10) != 0 {
		t.Fatal("fired at the wrong point")
	}
	if got := fire(idem.PointAfterFn, 10); got != 3 {
		t.Fatalf("%d crashes, want 3", got)
	}
	w := in.Windows()
	if len(w) != 3 || w[0].Label != "crash at after-fn" || w[0].Call != w[0].Return || w[0].Fault != history.FaultCrash {
		t.Fatalf("windows %+v", w)
	}
	clock.now = clock.now.Add(time.Second)
	if fire(idem.PointAfterFn, 10) != 0 {
		t.Fatal("fired after the window")
	}
}

// TestProbabilityIsDeterministic: the same seed, key and token get the same
// decision; probability 1 always fires.
func TestProbabilityIsDeterministic(t *testing.T) {
	mk := func(seed int64, p float64) idem.Hook {
		in, err := chaos.New(chaos.Config{Seed: seed, RunFor: time.Minute, Faults: []chaos.Fault{
			{Kind: history.FaultCrash, Point: idem.PointBeforeFn, Probability: p},
		}})
		if err != nil {
			t.Fatal(err)
		}
		in.Start()
		return in.Hook()
	}
	ctx := context.Background()
	a, b := mk(7, 0.3), mk(7, 0.3)
	hits := 0
	for i := range 1000 {
		l := lease("key", idem.Token(i+1))
		ea, eb := a(ctx, idem.PointBeforeFn, l), b(ctx, idem.PointBeforeFn, l)
		if (ea == nil) != (eb == nil) {
			t.Fatalf("token %d: decisions differ for the same seed", i+1)
		}
		if ea != nil {
			hits++
		}
	}
	if hits < 200 || hits > 400 {
		t.Fatalf("%d hits of 1000 at p=0.3", hits)
	}
	all := mk(1, 1)
	for i := range 100 {
		if all(ctx, idem.PointBeforeFn, lease("k", idem.Token(i+1))) == nil {
			t.Fatal("p=1 did not fire")
		}
	}
}

// TestPauseThenFail: a pause blocks for its duration, is recorded as a
// window, and makes the resumed execution's ForcedFailure return
// ErrInjected exactly once. Stop disarms the schedule.
func TestPauseThenFail(t *testing.T) {
	in := startPause(t, 30*time.Millisecond)
	l := lease("k", 9)
	start := time.Now()
	if err := in.Hook()(context.Background(), idem.PointBeforeFn, l); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("pause lasted %s", d)
	}
	if in.ForcedFailure(lease("k", 8)) != nil {
		t.Fatal("another execution forced to fail")
	}
	if !errors.Is(in.ForcedFailure(l), chaos.ErrInjected) {
		t.Fatal("resumed execution not forced to fail")
	}
	if in.ForcedFailure(l) != nil {
		t.Fatal("forced failure returned twice")
	}
	w := in.Windows()
	if len(w) != 1 || w[0].Return-w[0].Call < int64(30*time.Millisecond) || w[0].Key != "k" || w[0].Token != 9 {
		t.Fatalf("windows %+v", w)
	}
	in.Stop()
	start = time.Now()
	if err := in.Hook()(context.Background(), idem.PointBeforeFn, l); err != nil || time.Since(start) > 20*time.Millisecond {
		t.Fatal("fault fired after Stop")
	}
}

func TestSameSeedSameArming(t *testing.T) {
	// Arming offsets are not exported: count how many are due at several
	// points of the run for two injectors with the same seed, and one with
	// another seed.
	due := func(seed int64) []int {
		clock := &fakeClock{now: time.Unix(0, 0)}
		in, err := chaos.New(chaos.Config{Seed: seed, RunFor: time.Hour, Clock: clock, Faults: []chaos.Fault{
			{Kind: history.FaultCrash, Count: 20},
		}})
		if err != nil {
			t.Fatal(err)
		}
		in.Start()
		var out []int
		for range 6 {
			clock.now = clock.now.Add(10*time.Minute - time.Second)
			n := 0
			for in.Hook()(context.Background(), idem.PointBeforeFn, lease("k", 1)) != nil {
				n++
			}
			out = append(out, n)
		}
		return out
	}
	a, b, c := due(11), due(11), due(12)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed armed differently: %v vs %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Logf("seeds 11 and 12 happen to arm alike: %v", a)
	}
	total := 0
	for _, n := range a {
		total += n
	}
	if total != 19 && total != 20 { // an offset may fall in the last instant
		t.Fatalf("%d armings fired over the run, want 20", total)
	}
}

// TestPauseEndsWithContext: a pause of 100,000 hours returns within 2 s of
// its caller's context being cancelled, as an abandoned execution
// (ErrPauseCut with the cancellation cause), and is recorded as a window
// cut short; a pause whose context never ends runs its full length.
func TestPauseEndsWithContext(t *testing.T) {
	in := startPause(t, 100_000*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Hook()(ctx, idem.PointBeforeFn, lease("k", 1)) }()
	select {
	case err := <-done:
		t.Fatalf("pause returned before cancellation: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if d := time.Since(cancelled); d > 2*time.Second {
			t.Fatalf("pause ended %s after cancel", d)
		}
		if !errors.Is(err, chaos.ErrPauseCut) || !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want ErrPauseCut wrapping context.Canceled", err)
		}
		if chaos.IsCrash(err) {
			t.Fatalf("a cut pause reported as an injected crash: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a 100000h pause did not end within 2 s of ctx cancel")
	}
	w := in.Windows()
	if len(w) != 1 || !strings.Contains(w[0].Label, "cut short") || w[0].Return < w[0].Call {
		t.Fatalf("windows %+v, want one cut-short pause", w)
	}
	if in.ForcedFailure(lease("k", 1)) != nil {
		t.Fatal("a cut pause armed ThenFail for an execution that was abandoned")
	}
}

// TestCountLimits: counts above MaxCount, or above MaxCountPerSecond per
// second of the window, are rejected with ErrLimit before any offset is
// drawn; counts at the limits are accepted.
func TestCountLimits(t *testing.T) {
	cases := []struct {
		name   string
		count  int
		window time.Duration
		ok     bool
	}{
		{"one in a tiny window", 1, time.Microsecond, true},
		{"at the rate limit", 1000, time.Second, true},
		{"above the rate limit", 1001, time.Second, false},
		{"at the absolute limit", chaos.MaxCount, time.Hour, true},
		{"above the absolute limit", chaos.MaxCount + 1, time.Hour, false},
		{"a billion", 1_000_000_000, time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := chaos.New(chaos.Config{RunFor: c.window, Faults: []chaos.Fault{
				{Kind: history.FaultPause, Duration: time.Second, Count: c.count},
			}})
			if c.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !c.ok && (!errors.Is(err, chaos.ErrLimit) || !strings.Contains(err.Error(), "count")) {
				t.Fatalf("error %v, want ErrLimit naming the count", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("New took %s", d)
			}
		})
	}
}
