package blackbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

// Defaults of Spec.
const (
	DefaultClients    = 8
	DefaultTimeout    = 2 * time.Second
	DefaultAttempts   = 4
	DefaultProbeAfter = 500 * time.Millisecond
)

// Spec is one black-box run. Target and Duration are required; every other
// zero field has a default.
type Spec struct {
	// Target is the service under test (see ParseTarget).
	Target *Target
	// Seed fixes every random choice: keys, amounts, copies, fault times.
	Seed int64
	// Dir is the run directory to write (history.jsonl, summary.json,
	// report.md, report.html, plots, conformance.json, porcupine/); empty
	// writes nothing.
	Dir string
	// Duration is how long new requests are sent; required, > 0.
	Duration time.Duration
	// Clients is the number of concurrent clients (closed loop) or of
	// senders (open loop); zero means DefaultClients.
	Clients int
	// Rate, when > 0, makes the run open-loop at Rate requests per second,
	// latency measured from each request's intended send time.
	Rate float64
	// Keys shapes keys and duplicates (unique or zipf keys, concurrent and
	// delayed copies, mismatching bodies), as in package workload.
	Keys workload.Keys
	// Retry is the client's policy. Zero MaxAttempts means
	// DefaultAttempts, zero Timeout DefaultTimeout.
	Retry workload.Retry
	// Faults are injected during the traffic, on one seeded schedule: at
	// most MaxFaults, of the kinds of FaultKinds, each at its Start for
	// its Duration (FaultKinds says what zero means).
	Faults []chaos.Fault
	// ProbeAfter is the wait between the end of traffic (faults healed)
	// and the liveness probe; zero means DefaultProbeAfter, at most
	// MaxWait. Set it above the service's lease or lock timeout when it
	// has one.
	ProbeAfter time.Duration
	// CheckTimeout is the checker's linearizability budget; zero means
	// checker.DefaultTimeout, at most MaxCheckTimeout.
	CheckTimeout time.Duration
	// Thresholds, when set, are checked against the run's figures.
	Thresholds *reports.Thresholds
	// ReplayCommand is printed in the reports as the way to reproduce the
	// run.
	ReplayCommand string
	// Strict fails a run with a protocol deviation (a failed MUST probe)
	// as a violation (ErrViolation, exit 1) instead of ErrDeviation (exit
	// 6).
	Strict bool
	// FuzzFingerprint, when above 0, runs the fingerprint fuzzer after the
	// conformance probes: that many variants of the operation, each on a
	// key of its own (see fuzz.go); at most MaxFuzzCases.
	FuzzFingerprint int
}

// Outcome is the result of a run.
type Outcome struct {
	// Verdict is the run's one verdict, the checker's and the probes'
	// together, as summary.json, --json and report.md give it: violation
	// (a double execution, a broken replay or another invariant broken,
	// or under Spec.Strict a protocol deviation), VerdictDeviation (only a
	// MUST probe failed), inconclusive or ok. SHOULD and MAY failures are
	// warnings in the conformance table and do not change it.
	Verdict checker.Verdict
	// Classes lists the verdict classes that failed, most serious first
	// (ClassDoubleExecution, ClassBrokenReplay, ClassInvariant,
	// ClassDeviation); Headline says them in one line.
	Classes []string
	// Check is the checker's report on the history, with the probes that
	// found a double execution (I1) or a broken replay (I3) added as
	// violations and the verdict set to Verdict.
	Check checker.Report
	// Conformance is the conformance table; empty when skipped.
	Conformance []ProbeResult
	// Oracle is the oracle kind used, OracleLimits what it cannot see.
	Oracle, OracleLimits string
	// Profile is the policy profile the conformance table grades against.
	Profile string
	// History is the recorded run.
	History *history.History
	// Summary holds the run's figures.
	Summary *reports.Summary
	// Card is the run's report card (ReportCardFile); nil when the run
	// was not checked.
	Card *Card
	// Misses lists the thresholds missed.
	Misses []reports.Miss
	// Notes are remarks for the reader (effects outside the run's keys,
	// fault errors).
	Notes []string
	// Dir is the run directory written, "" when none.
	Dir string
	// Fingerprint lists the fingerprint fuzzer's cases; empty unless
	// Spec.FuzzFingerprint is above 0.
	Fingerprint []FuzzCase
}

// Validate checks spec as Run does before it starts anything, and starts
// nothing: the target (see Target.Validate, which fills in its defaults),
// the workload fields against the limits of package workload, and the
// limits of this package (MaxWait, MaxFaults, MaxCheckTimeout). Every
// error wraps ErrUsage and names the field.
func (s Spec) Validate() error { return s.validate() }

func (s *Spec) validate() error {
	if s.Target == nil {
		return usagef("no target")
	}
	if err := s.Target.Validate(); err != nil {
		return err
	}
	if err := waitLimit("probe_after", s.ProbeAfter); err != nil {
		return usagef("%v", err)
	}
	if s.CheckTimeout < 0 || s.CheckTimeout > MaxCheckTimeout {
		return usagef("check_timeout: %s is not between 0 and %s", s.CheckTimeout, MaxCheckTimeout)
	}
	if s.FuzzFingerprint < 0 || s.FuzzFingerprint > MaxFuzzCases {
		return usagef("fuzz_fingerprint: %d is not between 0 and %d", s.FuzzFingerprint, MaxFuzzCases)
	}
	if len(s.Faults) > MaxFaults {
		return usagef("faults: %d entries, above the limit of %d", len(s.Faults), MaxFaults)
	}
	if s.Clients == 0 {
		s.Clients = DefaultClients
	}
	if s.Retry.MaxAttempts == 0 {
		s.Retry.MaxAttempts = DefaultAttempts
	}
	if s.Retry.Timeout == 0 {
		s.Retry.Timeout = DefaultTimeout
	}
	if s.ProbeAfter == 0 {
		s.ProbeAfter = DefaultProbeAfter
	}
	cfg, err := workload.Check(workload.Config{
		Seed: s.Seed, Duration: s.Duration, Clients: s.Clients, Rate: s.Rate, Keys: s.Keys, Retry: s.Retry,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	s.Keys, s.Retry = cfg.Keys, cfg.Retry
	for i, f := range s.Faults {
		if !slices.Contains(FaultKinds, f.Kind) {
			return usagef("faults[%d]: unknown kind %q (want one of %s)", i, f.Kind, history.JoinFaultKinds(FaultKinds))
		}
		if !f.Kind.Network() && s.Target.Start == nil {
			return usagef("faults[%d]: %s needs a target with a start command", i, f.Kind)
		}
		if f.Start < 0 || f.Start >= s.Duration || f.Duration < 0 || f.Latency < 0 {
			return usagef("faults[%d]: start must be within the duration, duration and latency not negative", i)
		}
		if f.Duration > MaxWait || f.Latency > MaxWait {
			return usagef("faults[%d]: duration and latency at most %s", i, MaxWait)
		}
		if f.Count != 0 || f.Probability != 0 || f.End != 0 || f.Point != 0 || f.Jitter != 0 || f.ThenFail {
			return usagef("faults[%d]: a black-box fault has a kind, a start, a duration and a latency only", i)
		}
	}
	return nil
}

// Run drives the target as spec says and checks what happened: it starts
// the mock downstream and the service when the target says so, runs the
// conformance probes, sends the workload through the fault proxy while
// the faults run, heals everything, probes liveness, reads the effects
// oracle, checks the history and writes the run directory.
//
// The error is nil on a pass. Otherwise it wraps one sentinel: ErrUsage
// (nothing was started, or ErrNoSuccess: every answer refused the
// request), ErrEnvironment (the run could not be carried out: ErrOracle,
// ErrServiceExited, ErrNoSuccess), ErrViolation, ErrDeviation,
// ErrInconclusive, ErrThreshold, in that order of precedence; Outcome is
// filled in as far as the run got. A run whose ctx ends after the
// conformance probes writes what it has to Spec.Dir, when set: the history
// recorded so far (unchecked, with the effects of the downstream and
// response oracles; the query oracles are not read) and conformance.json,
// and returns an error that wraps ctx's cause. Everything Run started
// (service, proxy, downstream) is stopped before it returns, also when ctx
// is cancelled.
func Run(ctx context.Context, spec Spec) (Outcome, error) {
	if err := spec.validate(); err != nil {
		return Outcome{}, err
	}
	r := &runner{spec: &spec, t: spec.Target, now: history.Now}
	defer r.close()
	return r.run(ctx)
}

// runner holds what one Run started, so close can stop it all.
type runner struct {
	spec      *Spec
	t         *Target
	now       func() int64
	fields    Fields
	prefix    string // the run's key prefix
	ds        *Downstream
	svc       *service
	proxy     *netfault.Proxy
	transport *http.Transport
	svcLog    *cappedFile // the run directory's ServiceLogFile
}

func (r *runner) close() {
	if r.transport != nil {
		r.transport.CloseIdleConnections()
	}
	if r.proxy != nil {
		_ = r.proxy.Close()
	}
	if r.svc != nil {
		r.svc.stop()
	}
	if r.ds != nil {
		_ = r.ds.Close()
	}
	if r.svcLog != nil {
		_ = r.svcLog.Close()
	}
}

// setup starts the downstream, the service and the proxy, and returns the
// service's base URL.
func (r *runner) setup(ctx context.Context) (string, error) {
	t := r.t
	if t.Oracle.Kind == OracleDownstream {
		ds, err := NewDownstream(t.Oracle.KeyHeader, t.Oracle.Latency, r.now)
		if err != nil {
			return "", err
		}
		r.ds = ds
		r.fields.DownstreamURL = ds.URL()
	}
	var base string
	if t.Start != nil {
		addr, err := freeAddr()
		if err != nil {
			return "", envf("pick a port: %v", err)
		}
		r.fields.Addr = addr
		_, r.fields.Port, _ = net.SplitHostPort(addr)
		r.svc = newService(t, &r.fields)
		if dir := r.spec.Dir; dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", envf("write the run directory: %v", err)
			}
			f, err := os.Create(filepath.Join(dir, ServiceLogFile))
			if err != nil {
				return "", envf("write the run directory: %v", err)
			}
			r.svcLog = &cappedFile{f: f, max: MaxServiceLog}
			r.svc.log = io.MultiWriter(r.svc.logBuf, r.svcLog)
		}
		if err := r.svc.run(ctx); err != nil {
			return "", err
		}
		base = r.svc.base
	} else {
		base = expand(t.BaseURL, &r.fields)
		if err := reachable(ctx, base); err != nil {
			return "", err
		}
	}
	r.transport = &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        4 * r.spec.Clients,
		MaxIdleConnsPerHost: 4 * r.spec.Clients,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	for _, f := range r.spec.Faults {
		if !f.Kind.Network() {
			continue
		}
		u, err := url.Parse(base)
		if err != nil {
			return "", usagef("base_url: %v", err)
		}
		p, err := netfault.New(ctx, u.Host, netfault.Options{Clock: r.now, Seed: uint64(r.spec.Seed)})
		if errors.Is(err, netfault.ErrNotLoopback) {
			return "", usagef("network faults need a loopback base_url: %v", err)
		} else if err != nil {
			return "", envf("fault proxy: %v", err)
		}
		r.proxy = p
		break
	}
	return base, nil
}

// reachable checks that base answers HTTP at all.
func reachable(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base, nil)
	if err != nil {
		return usagef("base_url: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return envf("service unreachable at %s: %v", base, err)
	}
	resp.Body.Close()
	return nil
}

func (r *runner) run(ctx context.Context) (Outcome, error) {
	spec, t := r.spec, r.t
	out := Outcome{Oracle: t.Oracle.Kind, OracleLimits: oracleLimits[t.Oracle.Kind], Profile: t.Conformance.Profile}
	base, err := r.setup(ctx)
	if err != nil {
		return out, err
	}
	// From here on every step runs on tctx, which a service that exits on
	// its own cancels: the run ends with ErrServiceExited.
	tctx, unwatch := r.watchService(ctx)
	defer unwatch()
	client := &http.Client{Transport: r.transport}
	nonce := "r" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	prefix := spec.Keys.Prefix + "-" + nonce
	r.prefix = prefix
	if !t.Conformance.Skip {
		p := &prober{t: t, client: client, base: base, ds: r.ds, svc: &r.fields, seed: spec.Seed, prefix: "c" + nonce}
		out.Conformance = p.run(tctx)
	}
	if err := r.fuzz(tctx, client, base, nonce, &out); err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("blackbox: %w (during the conformance probes; nothing written)", context.Cause(ctx))
	}
	if err := r.serviceExit(); err != nil {
		return out, err
	}

	clientBase := base
	if r.proxy != nil {
		clientBase = "http://" + r.proxy.Addr()
	}
	tg := &httpTarget{
		spec: spec, op: &t.Operation, client: client, base: clientBase, svc: &r.fields,
		rec: history.NewRecorder(), now: r.now, keys: newKeyTable(), tally: newAnswerTally(),
	}
	fr := &faultRunner{faults: schedule(spec.Faults, spec.Seed, spec.Duration, spec.Retry.Timeout), proxy: r.proxy, svc: r.svc, now: r.now}
	tg.faults = &runFaults{fr: fr, ctx: tctx}
	wall := time.Now().UTC()
	// The driver of `idembench run`: traffic, drain, faults healed, then
	// the liveness probe after Spec.ProbeAfter.
	_, werr := workload.Run(tctx, tg.config(prefix, tg.faults))
	if ctx.Err() != nil {
		return out, r.savePartial(ctx, tg, fr, wall, base, &out)
	}
	if err := r.serviceExit(); err != nil {
		return out, err
	}
	if ferr := tg.faults.err; ferr != nil {
		out.Notes = append(out.Notes, "fault: "+ferr.Error())
		if errors.Is(ferr, ErrEnvironment) {
			return out, ferr
		}
	}
	if werr != nil {
		return out, envf("load driver: %v", werr)
	}

	h := tg.rec.History(r.header(wall, base))
	if err := r.addEffects(tctx, h, tg, prefix, &out); err != nil {
		if ctx.Err() != nil {
			return out, r.savePartial(ctx, tg, fr, wall, base, &out)
		}
		if serr := r.serviceExit(); serr != nil {
			return out, serr
		}
		return out, err
	}
	r.addFaults(h, fr)
	out.History = h
	if n := tg.tally.undeclaredNote(); n != "" {
		out.Notes = append(out.Notes, n)
	}
	if nothingHappened(h) {
		return out, tg.tally.noSuccess(base)
	}
	return r.finish(h, &out)
}

// addFaults appends the fault windows of fr to h, marks the executions of
// a service without a replay marker and sorts the history.
func (r *runner) addFaults(h *history.History, fr *faultRunner) {
	h.Ops = append(h.Ops, fr.ops()...)
	if r.t.Operation.replayName == "" {
		markExecutions(h.Ops)
	}
	history.SortByCall(h.Ops)
}

// nothingHappened reports whether h has calls but neither a successful
// answer nor an effect: the service never performed the operation.
func nothingHappened(h *history.History) bool {
	calls := 0
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case op.Kind == history.KindEffect:
			return false
		case op.Kind == history.KindCall && op.Outcome.Success():
			return false
		case op.Kind == history.KindCall:
			calls++
		}
	}
	return calls > 0
}

// watchService returns ctx, cancelled also when the started service exits
// on its own, and the function that stops watching.
func (r *runner) watchService(ctx context.Context) (context.Context, func()) {
	if r.svc == nil {
		return ctx, func() {}
	}
	tctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-r.svc.exited:
			cancel(r.svc.unexpectedExit())
		case <-done:
		}
	})
	return tctx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// serviceExit returns the ErrServiceExited error of a started service that
// exited on its own, or nil.
func (r *runner) serviceExit() error {
	if r.svc == nil {
		return nil
	}
	return r.svc.unexpectedExit()
}

// savePartial writes what a run cut short by ctx has to Spec.Dir, when
// set: the history so far, with the effects that need no query, and
// conformance.json. It returns ctx's cause, wrapped with what was written.
func (r *runner) savePartial(ctx context.Context, tg *httpTarget, fr *faultRunner, wall time.Time, base string, out *Outcome) error {
	cause := context.Cause(ctx)
	h := tg.rec.History(r.header(wall, base))
	if k := r.t.Oracle.Kind; k != OracleHTTP && k != OracleSQL {
		_ = r.addEffects(ctx, h, tg, r.prefix, out) // local: reads no service
	}
	r.addFaults(h, fr)
	out.History = h
	dir := r.spec.Dir
	if dir == "" {
		return fmt.Errorf("blackbox: %w (nothing written)", cause)
	}
	if err := writeHistory(filepath.Join(dir, reports.HistoryFile), h); err != nil {
		return fmt.Errorf("blackbox: %w (history so far not written: %v)", cause, err)
	}
	if len(out.Conformance) > 0 {
		out.Verdict = "" // not checked
		if err := writeConformanceJSON(dir, out); err != nil {
			return fmt.Errorf("blackbox: %w (history so far written to %s; conformance.json not written: %v)", cause, dir, err)
		}
	}
	return fmt.Errorf("blackbox: %w (history so far written to %s)", cause, dir)
}

func (r *runner) header(wall time.Time, base string) history.Header {
	spec, t := r.spec, r.t
	opts := map[string]string{
		"target":    t.Name,
		"base_url":  base,
		"operation": t.Operation.Method + " " + t.Operation.Path,
		"oracle":    t.Oracle.Kind,
		"clients":   strconv.Itoa(spec.Clients),
		"keys":      spec.Keys.Dist,
		"duration":  spec.Duration.String(),
		"timeout":   spec.Retry.Timeout.String(),
		"attempts":  strconv.Itoa(spec.Retry.MaxAttempts),
	}
	if spec.Rate > 0 {
		opts["rate"] = strconv.FormatFloat(spec.Rate, 'g', -1, 64)
	}
	for i, f := range spec.Faults {
		opts["fault."+strconv.Itoa(i)] = string(f.Kind)
	}
	return history.Header{
		Tool: "idembench blackbox", Scenario: "http:" + t.Name, Seed: spec.Seed,
		Backend: "http", Engine: "black-box (" + t.Oracle.Kind + " oracle)", Options: opts, Start: wall,
	}
}

// addEffects reads the oracle and appends its effect ops to h.
func (r *runner) addEffects(ctx context.Context, h *history.History, tg *httpTarget, prefix string, out *Outcome) error {
	switch r.t.Oracle.Kind {
	case OracleDownstream:
		ops, other := downstreamEffects(r.ds.Calls(), prefix+"-")
		h.Ops = append(h.Ops, ops...)
		if other > 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("the downstream received %d call(s) for keys outside the workload (conformance probes, calls without the key header)", other))
		}
	case OracleHTTP, OracleSQL:
		var counts map[string]int
		var err error
		if r.t.Oracle.Kind == OracleHTTP {
			counts, err = queryHTTP(ctx, expand(r.t.Oracle.URL, &r.fields))
		} else {
			counts, err = querySQL(ctx, expand(r.t.Oracle.PostgresURL, &r.fields), r.t.Oracle.Query)
		}
		if err != nil {
			return err
		}
		out.Notes = append(out.Notes, "oracle reported "+describeCounts(counts))
		h.Ops = append(h.Ops, countEffects(counts, firstCalls(h.Ops))...)
	default:
		h.Ops = append(h.Ops, responseEffects(tg.keys.ids())...)
	}
	return nil
}
