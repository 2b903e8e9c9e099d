package sim_test

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/sim"
	"github.com/idembench/idembench/sim/simtest"
)

var flagDesigns = flag.Bool("sim.designs", false, "run TestRegisteredDesignsFigures")

// TestRegisteredDesignsFigures simulates every design of naive.Names() on
// 20 seeds (-sim.seeds) and prints, for each, on how many seeds the check
// caught it, by which invariants, and the wall time per seed:
//
//	go test ./sim -count=1 -v -run TestRegisteredDesignsFigures -sim.designs
func TestRegisteredDesignsFigures(t *testing.T) {
	if !*flagDesigns {
		t.Skip("-sim.designs runs the table of the registered designs (about a minute)")
	}
	n := simtest.SeedCount(*flagSeeds, 20, 20)
	for _, name := range naive.Names() {
		caught := 0
		var invs []string
		start := time.Now()
		for seed := int64(1); seed <= int64(n); seed++ {
			cfg := sim.Quick(seed)
			res := sim.Run(t, opener(t, "naive/"+name, cfg), cfg)
			if res.Report.Verdict == checker.VerdictViolation {
				caught++
			}
			for _, inv := range res.Report.Violated() {
				if !slices.Contains(invs, string(inv)) {
					invs = append(invs, string(inv))
				}
			}
		}
		slices.Sort(invs)
		t.Logf("| `naive/%s` | %d/%d | %s | %s |", name, caught, n, strings.Join(invs, " "), (time.Since(start) / time.Duration(n)).Round(time.Millisecond))
	}
}
