package checker

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
)

// DefaultTimeout is the linearizability budget used when Options.Timeout is
// zero.
const DefaultTimeout = 10 * time.Second

// Options tunes Check. The zero value is ready to use.
type Options struct {
	// Timeout is the wall-clock budget of the linearizability search (I4)
	// over the whole history, counted from the start of Check. Keys whose
	// search has not finished when it runs out are inconclusive, and so is
	// the verdict if nothing else is violated. Keys the decision procedure
	// decides, and keys with a single possible order, are checked even
	// after the budget is spent. Zero means
	// DefaultTimeout; a negative value means no limit (a pathological key
	// can then take exponential time).
	Timeout time.Duration
	// VisualizeDir, when not empty, receives one Porcupine HTML file per
	// key that fails I4 (at most MaxVisualizations), named after the
	// sanitized key, with the fault windows that overlap the key's ops as
	// annotations. The directory is created if needed. Each visualization
	// search is bounded by VisualizeTimeout on top of Timeout.
	VisualizeDir string
	// MaxVisualizations caps the HTML files written; zero means 10.
	MaxVisualizations int
	// VisualizeTimeout bounds the verbose search behind each visualization;
	// zero means 5 s. A search that times out still yields a (partial)
	// visualization.
	VisualizeTimeout time.Duration
	// MaxViolations caps Report.Violations per invariant (and
	// Report.InconclusiveKeys); the counts in Report.Invariants are always
	// complete. Zero means 100.
	MaxViolations int
	// Workers is the number of keys checked in parallel; zero means
	// GOMAXPROCS.
	Workers int
	// SearchMemory bounds, in bytes, the memory one key's Porcupine search
	// may use for its cache; a search that reaches it is inconclusive, like
	// a timeout. The use is estimated from the number of legal steps, an
	// upper bound that is typically several times the real use. Zero means
	// DefaultSearchMemory; a negative value means no bound. Up to Workers
	// searches run at once.
	SearchMemory int64
}

// DefaultSearchMemory is the per-key search memory bound used when
// Options.SearchMemory is zero.
const DefaultSearchMemory = 512 << 20

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxVisualizations <= 0 {
		o.MaxVisualizations = 10
	}
	if o.VisualizeTimeout <= 0 {
		o.VisualizeTimeout = 5 * time.Second
	}
	if o.MaxViolations <= 0 {
		o.MaxViolations = 100
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.SearchMemory == 0 {
		o.SearchMemory = DefaultSearchMemory
	}
	return o
}

// Check proves or refutes "no double execution" for h: it partitions the
// ops by key, checks the ledger invariants I1, I2, I3, I5 and I6 and the
// lease invariants I7 and I8 on every key in near-linear time, then I4
// with the key model (see the package doc): with the decision procedure
// for every key in its domain, else directly for keys whose ops are
// totally ordered in time and with Porcupine under the Timeout budget for
// the others. With Header.Retention set, I1 to I4 hold per life of a key's
// record. h is not modified.
//
// Check never returns VerdictOK unless every key was fully checked: a
// timeout, an invalid history (Report.Notes says why) or a history without
// calls gives VerdictInconclusive. Unresolved effects (Outcome Unknown) are
// treated as maybe applied; resolve them with History.ResolveEffects first
// for the strongest check.
func Check(h *history.History, opts Options) Report {
	start := time.Now()
	opts = opts.withDefaults()
	rep := Report{Verdict: VerdictInconclusive}
	if h != nil {
		rep.Header = h.Header
	}
	for _, inv := range Invariants {
		rep.Invariants = append(rep.Invariants, InvariantResult{Invariant: inv})
	}
	if err := h.Validate(); err != nil {
		rep.Notes = append(rep.Notes, "history is invalid, nothing was checked: "+err.Error())
		rep.Stats.Duration = time.Since(start)
		return rep
	}
	// Ops timed by hosts with a clock error are checked on intervals
	// widened by it: no false violation from the clocks, at the price of
	// races shorter than the bound.
	ops := h.WidenedOps()
	if b := h.Header.MaxClockBound(); b > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("ops of %d hosts were timed by their own clocks: their intervals are widened by each host's measured clock bound (at most %s), so real-time order shorter than that is not checked", len(h.Header.Clocks), b))
	}
	countOps(ops, &rep.Stats)
	p := partitionByKey(ops)
	rep.Stats.Keys = len(p.keys)

	var deadline time.Time
	if opts.Timeout > 0 {
		deadline = start.Add(opts.Timeout)
	}
	retention := int64(h.Header.Retention)
	results := make([]keyResult, len(p.keys))
	var linTime atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(opts.Workers, max(len(p.keys), 1)) {
		wg.Go(func() {
			var sc scratch
			for {
				k := int(next.Add(1) - 1)
				if k >= len(p.keys) {
					return
				}
				t := checkKey(ops, p.keys[k], p.group(k), &results[k], keyEnv{deadline, opts.SearchMemory, retention}, &sc)
				linTime.Add(int64(t))
			}
		})
	}
	wg.Wait()
	rep.Stats.LinearizabilityDuration = time.Duration(linTime.Load())

	collect(&rep, p, results, opts)
	if opts.VisualizeDir != "" {
		visualizeFailures(&rep, ops, p, opts)
	}
	rep.Verdict = verdict(&rep)
	rep.Stats.Duration = time.Since(start)
	return rep
}

// keyEnv is what checking one key needs besides its ops.
type keyEnv struct {
	deadline     time.Time
	searchMemory int64
	retention    int64 // nanoseconds; <= 0: records outlive the run
}

// checkKey checks every invariant on the ops of one key (g, sorted by
// Call) into r and returns the time spent on I4. I1 to I4 are checked per
// life of the key's record (see epochs), the others over the whole key.
func checkKey(ops []history.Op, key string, g []int32, r *keyResult, env keyEnv, sc *scratch) time.Duration {
	lives := epochs(ops, g, env.retention)
	whole := len(lives) == 1
	var linTime time.Duration
	for _, lg := range lives {
		f := checkLedger(ops, key, lg, r, whole)
		t0 := time.Now()
		lin, searched := linearize(ops, lg, f, env.deadline, env.searchMemory, sc)
		linTime += time.Since(t0)
		r.searched = r.searched || searched
		switch lin {
		case linImplied:
			r.add(ops, I4Linearizable, key, "not linearizable: "+f.impliedWhy, lg)
		case linIllegal:
			r.add(ops, I4Linearizable, key, "not linearizable against the key model", lg)
		}
		switch lin {
		case linOK, linIllegal, linImplied:
			r.checked[slot(I4Linearizable)]++
		}
		r.lin = worse(r.lin, lin)
	}
	if !whole {
		checkKeyWide(ops, key, g, r)
	}
	checkLeases(ops, key, g, r, &sc.leases)
	return linTime
}

// worse combines the I4 outcomes of two lives of a key: a violation beats
// an unfinished search, which beats a pass.
func worse(a, b linStatus) linStatus {
	rank := func(s linStatus) int {
		switch s {
		case linIllegal, linImplied:
			return 3
		case linUnknown, linSkipped:
			return 2
		case linOK:
			return 1
		}
		return 0 // linUnchecked
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func countOps(ops []history.Op, st *Stats) {
	st.Ops = len(ops)
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case history.KindCall:
			st.Calls++
			if op.Probe {
				st.Probes++
			}
			if op.Outcome == history.Unknown {
				st.UnknownCalls++
			}
		case history.KindEffect:
			st.Effects++
			if op.Outcome == history.Unknown {
				st.UnresolvedEffects++
			}
		case history.KindFault:
			st.Faults++
		case history.KindLease:
			st.Leases++
		}
	}
}

// collect folds the per-key results into rep, in invariant order then key
// order, capping the listed violations.
func collect(rep *Report, p *partition, results []keyResult, opts Options) {
	byInv := make([][]Violation, len(invIndex))
	for k := range results {
		r := &results[k]
		for s := range invIndex {
			rep.Invariants[s].Checked += r.checked[s]
		}
		if r.searched {
			rep.Stats.SearchedKeys++
		}
		if r.lin == linUnknown || r.lin == linSkipped {
			rep.Invariants[slot(I4Linearizable)].Inconclusive++
			if len(rep.InconclusiveKeys) < opts.MaxViolations {
				rep.InconclusiveKeys = append(rep.InconclusiveKeys, p.keys[k])
			}
		}
		for _, v := range r.violations {
			s := slot(v.Invariant)
			rep.Invariants[s].Violations++
			if len(byInv[s]) < opts.MaxViolations {
				byInv[s] = append(byInv[s], v)
			}
		}
	}
	for _, vs := range byInv {
		rep.Violations = append(rep.Violations, vs...)
	}
	if rep.Stats.Probes == 0 {
		rep.Notes = append(rep.Notes, "no liveness probes recorded: I6 was not checked")
	}
	if n := rep.Stats.UnresolvedEffects; n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d effect(s) still unknown (not resolved from the ledger): treated as maybe applied", n))
	}
	if n := rep.Invariants[slot(I4Linearizable)].Inconclusive; n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("linearizability check did not finish for %d key(s) within the %v budget or the %d MiB search memory bound",
			n, opts.Timeout, opts.SearchMemory>>20))
	}
}

func verdict(rep *Report) Verdict {
	if slices.ContainsFunc(rep.Invariants, func(ir InvariantResult) bool { return ir.Violations > 0 }) {
		return VerdictViolation
	}
	if rep.Invariants[slot(I4Linearizable)].Inconclusive > 0 {
		return VerdictInconclusive
	}
	if rep.Stats.Calls == 0 {
		rep.Notes = append(rep.Notes, "history holds no calls: nothing was proven")
		return VerdictInconclusive
	}
	return VerdictOK
}
