package sim

import (
	"fmt"
	"io"
	"strings"

	"github.com/idembench/idembench/checker"
)

// Summary returns the result in a few lines, as run prints its run: the
// configuration, the figures, the verdict with every violated invariant,
// the seed and replay, the command that replays it.
func (r *Result) Summary(replay string) string {
	var b strings.Builder
	c := &r.Config
	fmt.Fprintf(&b, "sim %s: seed %d · %d clients · %d app servers · %s of traffic · lease %s · retention %s · grace %s\n",
		c.Name, c.Seed, c.Clients, c.AppServers, c.Duration, c.LeaseTTL, c.Retention, c.TakeoverGrace)
	fmt.Fprintf(&b, "simulated %s in %s wall · %d calls · %d effects · %d faults injected · %d scheduled steps\n",
		r.Virtual.Round(1e6), r.Wall.Round(1e6), r.Calls, r.Effects, r.Faults, r.Steps)
	WriteVerdict(&b, &r.Report)
	fmt.Fprintf(&b, "seed: %d\n", c.Seed)
	if replay != "" {
		fmt.Fprintf(&b, "replay: %s\n", replay)
	}
	return b.String()
}

// WriteVerdict writes the verdict line of rep and one line per listed
// violation (at most 10).
func WriteVerdict(w io.Writer, rep *checker.Report) {
	var inv []string
	for _, ir := range rep.Invariants {
		s := "ok"
		if ir.Violations > 0 {
			s = fmt.Sprintf("%d violation(s)", ir.Violations)
		}
		inv = append(inv, string(ir.Invariant)+" "+s)
	}
	fmt.Fprintf(w, "verdict: %s (%s)\n", strings.ToUpper(string(rep.Verdict)), strings.Join(inv, " · "))
	for i, v := range rep.Violations {
		if i == 10 {
			fmt.Fprintf(w, "  … %d more\n", len(rep.Violations)-i)
			break
		}
		fmt.Fprintf(w, "  %s %s: %s\n", v.Invariant, v.Key, v.Message)
	}
	for _, n := range rep.Notes {
		if !strings.HasPrefix(n, "no liveness probes") {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
}
