package storetest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestCasesAreGroupedOnce(t *testing.T) {
	cases := storetest.Cases()
	if len(cases) != 38 {
		t.Fatalf("%d cases, want the 38 of the suite", len(cases))
	}
	seen := map[string]bool{}
	count := map[storetest.Group]int{}
	var order []storetest.Group
	for _, c := range cases {
		if seen[c.Name] {
			t.Errorf("case %s listed twice", c.Name)
		}
		seen[c.Name] = true
		count[c.Group]++
		if len(order) == 0 || order[len(order)-1] != c.Group {
			order = append(order, c.Group)
		}
	}
	want := []storetest.Group{storetest.Safety, storetest.Contract, storetest.Liveness, storetest.Uncertain, storetest.Policy}
	if !slices.Equal(order, want) {
		t.Errorf("groups run in order %v, want %v, each contiguous", order, want)
	}
	for _, g := range want {
		if count[g] == 0 {
			t.Errorf("group %s has no case", g)
		}
	}
	// The cases that show the known-bad designs' flaws are safety cases.
	for _, name := range []string{"ConcurrentAcquireGrantsExactlyOneLease", "ConcurrentTakeOverGrantsExactlyOneLease", "StaleTokenWritesAreFencedOff", "TokensIncreaseAcrossReleaseAndRetention"} {
		i := slices.IndexFunc(cases, func(c storetest.Case) bool { return c.Name == name })
		if i < 0 || cases[i].Group != storetest.Safety {
			t.Errorf("%s: want a safety case, got %+v", name, cases)
		}
	}
}

// strictStore is memstore made stricter than the contract and still safe:
// it refuses a heartbeat or a completion once the caller's lease has
// expired, even when nobody took it over.
type strictStore struct {
	*memstore.Store
	clock idem.Clock
}

func (s strictStore) expired(l *idem.Lease) bool { return !s.clock.Now().Before(l.Expiry) }

func (s strictStore) Heartbeat(ctx context.Context, l *idem.Lease, ttl time.Duration) error {
	if s.expired(l) {
		return idem.ErrLeaseLost
	}
	return s.Store.Heartbeat(ctx, l, ttl)
}

func (s strictStore) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	if s.expired(l) {
		return idem.ErrLeaseLost
	}
	return s.Store.Complete(ctx, l, resp, retention)
}

// keepOnRelease wraps memstore, a batch store, and overrides Release with
// a policy of its own (a key, once claimed, is never given back: Release
// is refused). Its embedded FinishBatch still releases: the two paths
// disagree.
type keepOnRelease struct {
	*memstore.Store
}

func (keepOnRelease) Release(context.Context, *idem.Lease) error { return idem.ErrLeaseLost }

const (
	childEnv      = "STORETEST_CHILD"
	strictReason  = "refuses writes once the lease has expired"
	deviatingCase = "ExpiredLeaseNotTakenOverIsStillOwned"
)

// TestChild runs the suite in the configuration named by STORETEST_CHILD;
// without it, it skips. The tests below run it in a child process, since a
// suite that fails fails its *testing.T.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skipf("runs only as a child process with %s set", childEnv)
	}
	clock := memstore.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	strict := strings.HasPrefix(mode, "strict")
	cfg := storetest.Config{
		New: func(t *testing.T) idem.Store {
			s := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
			t.Cleanup(func() { s.Close() })
			if strict {
				return strictStore{Store: s, clock: clock}
			}
			if mode == "release-override" {
				return keepOnRelease{s}
			}
			return s
		},
		Advance: clock.Advance,
	}
	switch mode {
	case "strict-declared", "correct-declared":
		cfg.Deviations = map[string]string{deviatingCase: strictReason}
	case "correct-safety-declared":
		cfg.Deviations = map[string]string{"StaleTokenWritesAreFencedOff": "trust me"}
	case "correct-unknown-declared":
		cfg.Deviations = map[string]string{"NoSuchCase": "typo"}
	}
	storetest.Run(t, cfg)
}

func TestDeviations(t *testing.T) {
	tests := []struct {
		mode     string
		wantExit bool // the child fails
		want     []string
		notWant  []string
	}{
		{mode: "correct", want: []string{"--- PASS: TestChild/contract/" + deviatingCase, "--- PASS: TestChild/safety/StaleTokenWritesAreFencedOff", "--- PASS: TestChild/safety/BatchPathAgreesWithSinglePath"}, notWant: []string{"DEVIATION"}},
		// A wrapper that embeds a real batch store and overrides Release:
		// the batch path still releases through the embedded store.
		{mode: "release-override", wantExit: true, want: []string{"--- FAIL: TestChild/safety/BatchPathAgreesWithSinglePath",
			"disagree on release: single refused (ErrLeaseLost), batch accepted"}},
		{mode: "strict", wantExit: true, want: []string{"--- FAIL: TestChild/contract/" + deviatingCase}},
		{mode: "strict-declared", want: []string{"--- PASS: TestChild/contract/" + deviatingCase, "DOCUMENTED DEVIATION: " + deviatingCase + " (contract): " + strictReason}},
		{mode: "correct-declared", wantExit: true, want: []string{"--- FAIL: TestChild/contract/" + deviatingCase, "DEVIATION DECLARED BUT NOT SEEN"}},
		{mode: "correct-safety-declared", wantExit: true, want: []string{"safety cases admit no deviation"}},
		{mode: "correct-unknown-declared", wantExit: true, want: []string{`"NoSuchCase", which is no case`}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.mode)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("child: %v", err)
			}
			if failed := err != nil; failed != tc.wantExit {
				t.Errorf("child failed = %v, want %v", failed, tc.wantExit)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("child output lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("child output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("child output:\n%s", out.String())
			}
		})
	}
}
