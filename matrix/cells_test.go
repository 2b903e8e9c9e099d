package matrix

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
)

// TestFaultCellsReplayTheirFaults: the replay line of a cell with backend
// faults repeats all of them, the aimed one included: without its fault
// flags the line would rerun a run that cannot fail the same way.
func TestFaultCellsReplayTheirFaults(t *testing.T) {
	want := map[Fault][]string{
		Net:     {"--net-fault latency:20ms~10ms@200ms+200ms", "--net-fault drop-replies@600ms+400ms", "--net-fault partition@1.4s+300ms", "--aim-net partition+1s", "--client-timeout 300ms"},
		Restart: {"--restart-at 700ms,1.4s", "--aim-restart 1s"},
	}
	seen := 0
	for _, c := range Cells(false, []harness.Backend{harness.Redis, harness.Postgres}, Servers{}) {
		if c.faults == nil {
			continue
		}
		seen++
		args := strings.Join(c.faults(2*time.Second).ReplayArgs, " ")
		for _, w := range want[c.Fault] {
			if !strings.Contains(args, w) {
				t.Errorf("%s %s %s: replay flags %q lack %q", c.Config, c.Backend, c.Fault, args, w)
			}
		}
		if aof := strings.Contains(args, "--redis-persistence aof-always"); aof != (c.Variant == RedisAOF) {
			t.Errorf("%s %s %s (%s): replay flags %q, AOF flag %t", c.Config, c.Backend, c.Fault, c.Variant, args, aof)
		}
	}
	if seen == 0 || !slices.ContainsFunc(Cells(true, []harness.Backend{harness.Redis}, Servers{}), func(c *Cell) bool { return c.faults != nil }) {
		t.Fatalf("no cell with backend faults (%d)", seen)
	}
}
