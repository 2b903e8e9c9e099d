// Package simtest runs a store through the deterministic simulation (package
// sim) from a Go test, in one line:
//
//	func TestMyStoreSimulated(t *testing.T) {
//		simtest.Run(t, sim.Shared(func(clock idem.Clock) (idem.Store, error) {
//			return mystore.New(mystore.Options{Clock: clock}), nil
//		}))
//	}
//
// Each seed is a subtest named seed=N that simulates 20 minutes of
// production timings (sim.Quick) with every fault kind in well under a
// second of wall time. A seed whose history breaks an invariant fails with
// the violations, the seed, and the one command that replays it
// identically; its history.jsonl is written to the subtest's artifact
// directory (go test -artifacts keeps it).
package simtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/sim"
)

// DefaultSeeds is how many seeds Run simulates; ShortSeeds under -short.
const (
	DefaultSeeds = 20
	ShortSeeds   = 5
)

type config struct {
	seeds  []int64
	config func(seed int64) sim.Config
}

// Option changes what Run simulates.
type Option func(*config)

// Seeds replaces the seeds (default 1 to DefaultSeeds, ShortSeeds under
// -short).
func Seeds(seeds ...int64) Option { return func(c *config) { c.seeds = seeds } }

// WithConfig replaces the configuration of each seed (default sim.Quick).
func WithConfig(f func(seed int64) sim.Config) Option { return func(c *config) { c.config = f } }

// QuickForm reports whether a simulation test runs its quick form: under
// -short, or under the race detector, which slows the simulation about
// eightfold.
func QuickForm() bool { return raceEnabled || testing.Short() }

// SeedCount returns how many seeds a simulation test runs: n when it is
// positive (the count its package's seeds flag gives), else quick in the
// quick form (QuickForm), else def.
func SeedCount(n, def, quick int) int {
	switch {
	case n > 0:
		return n
	case QuickForm():
		return quick
	}
	return def
}

// Run simulates the store open opens once per seed, each in a subtest
// seed=N, and fails the subtests whose history the checker finds in
// violation or cannot decide. open must give app server 0 of every run a
// fresh store (sim.Shared does).
func Run(t *testing.T, open sim.Opener, opts ...Option) {
	t.Helper()
	c := config{config: sim.Quick}
	n := DefaultSeeds
	if testing.Short() {
		n = ShortSeeds
	}
	for s := range n {
		c.seeds = append(c.seeds, int64(s+1))
	}
	for _, o := range opts {
		o(&c)
	}
	for _, seed := range c.seeds {
		name := fmt.Sprintf("seed=%d", seed)
		t.Run(name, func(t *testing.T) {
			res := sim.Run(t, open, c.config(seed))
			if res.Report.Verdict == checker.VerdictOK {
				return
			}
			path := filepath.Join(t.ArtifactDir(), "history.jsonl")
			if err := os.WriteFile(path, res.HistoryJSONL, 0o644); err != nil {
				t.Logf("simtest: write the history: %v", err)
				path = ""
			}
			msg := res.Summary(ReplayCommand(t.Name()))
			if path != "" {
				msg += "history: " + path + " (go test -artifacts keeps it)\n"
			}
			t.Error("\n" + msg)
		})
	}
}

// SameHistory fails t when a and b, the history.jsonl of two runs of
// seed, differ, naming the first line that does (or that one is a prefix
// of the other). A store is fit for the simulation when every seed run
// twice writes the same history.
func SameHistory(t testing.TB, seed int64, a, b []byte) {
	t.Helper()
	if bytes.Equal(a, b) {
		return
	}
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			t.Fatalf("seed %d: the histories differ at line %d (%d and %d lines):\n%s\n%s", seed, i+1, len(la), len(lb), la[i], lb[i])
		}
	}
	t.Fatalf("seed %d: one history is a prefix of the other (%d and %d lines)", seed, len(la), len(lb))
}

// ReplayCommand is the go test command that runs the (sub)test named name
// of the package in the working directory (where go test runs a package's
// tests) again, alone, from the module root.
func ReplayCommand(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test -count=1 -run '%s' %s", strings.Join(parts, "/"), packageDir())
}

// packageDir is the working directory relative to the module root, as go
// test names a package directory ("./sim"); "." when it cannot tell.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}
