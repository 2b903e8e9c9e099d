package chaos_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

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
