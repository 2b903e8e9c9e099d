package multiproc

import (
	"github.com/idembench/idembench/chaos"
)

// inEngineFaults turns the process crashes and pauses of a joined run
// into faults each worker injects in its own engine, as a one-process run
// does: a crash abandons the execution at its point (its lease stays
// until it expires, its effect may be done, its completion never comes),
// a pause stalls the execution at its point with no heartbeat, as a
// stopped process would. A joined worker is on another host: the
// coordinator can neither SIGSTOP it nor start it again after a SIGKILL,
// so the process-level forms of a local --workers run are not used. A
// fault's Count is split among the workers (worker i gets Count/n, the
// first Count%n one more; a worker with none leaves it out); a fault with
// a Probability goes to every worker as it is. It leaves the coordinator
// no process crashes or pauses of its own.
func (co *coordinator) inEngineFaults(faults []chaos.Fault) {
	co.crashes, co.scheduled, co.pending = nil, nil, map[int]chaos.ProcessPause{}
	co.joinFaults = make([][]chaos.Fault, co.n)
	for _, f := range faults {
		if !f.InEngine() {
			continue
		}
		for i := range co.n {
			g := f
			if f.Count > 0 {
				g.Count = f.Count / co.n
				if i < f.Count%co.n {
					g.Count++
				}
				if g.Count == 0 {
					continue
				}
			}
			co.joinFaults[i] = append(co.joinFaults[i], g)
		}
	}
}
