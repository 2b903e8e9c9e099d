package naive

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestNewBuildsEachDesign(t *testing.T) {
	want := map[string]string{
		"check-then-act":     "*naive.CheckThenAct",
		"cache-on-success":   "*naive.CacheOnSuccess",
		"unfenced-takeover":  "*naive.UnfencedTakeover",
		"delete-on-error":    "*naive.DeleteOnError",
		"no-expiry":          "*naive.NoExpiry",
		"no-heartbeat":       "*naive.NoHeartbeat",
		"token-restart":      "*naive.TokenRestart",
		"racy-takeover":      "*naive.RacyTakeover",
		"unfenced-heartbeat": "*naive.UnfencedHeartbeat",
		"fail-open":          "*naive.FailOpen",
		"keeps-pending":      "*naive.KeepsPending",
		"unscoped-key":       "*naive.UnscopedKey",
		"two-step-takeover":  "*naive.TwoStepTakeover",
		"fail-on-expiry":     "*naive.FailOnExpiry",
		"retries-uncertain":  "*naive.RetriesUncertain",
		"touch-on-read":      "*naive.TouchOnRead",
		"lean-record":        "*naive.LeanRecord",
		"skewed-leases":      "*naive.SkewedLeases",
	}
	names := Names()
	if len(names) != len(want) {
		t.Fatalf("Names() = %v, want the %d designs", names, len(want))
	}
	for _, name := range names {
		st, err := New(name, nil)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if got := fmt.Sprintf("%T", st); got != want[name] {
			t.Errorf("New(%q) is a %s, want %s", name, got, want[name])
		}
		if st2, _ := New(name, nil); st2 == st {
			t.Errorf("New(%q) returned the same store twice", name)
		}
	}
	names[0] = "changed"
	if Names()[0] != "check-then-act" {
		t.Error("Names() shares its slice with the caller")
	}
}

func TestNewRejectsUnknownName(t *testing.T) {
	for _, name := range []string{"", "memstore", "Check-Then-Act", "check-then-act "} {
		st, err := New(name, nil)
		if st != nil || !errors.Is(err, ErrUnknownDesign) {
			t.Errorf("New(%q) = %v, %v; want nil and ErrUnknownDesign", name, st, err)
			continue
		}
		for _, valid := range Names() {
			if !strings.Contains(err.Error(), valid) {
				t.Errorf("New(%q) error %q does not list %q", name, err, valid)
			}
		}
	}
}

// TestDesignsAreSweepers checks that every design can be swept, like
// memstore, so a harness that sweeps treats them alike.
func TestDesignsAreSweepers(t *testing.T) {
	for _, name := range Names() {
		st, _ := New(name, nil)
		if _, ok := st.(idem.Sweeper); !ok {
			t.Errorf("%s is not an idem.Sweeper", name)
		}
	}
}
