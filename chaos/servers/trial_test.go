//go:build linux

package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// trialsEnv sets how many trials the failover measurements run per
// configuration (TestFailoverTrials); unset, they are skipped.
const trialsEnv = "IDEM_FAILOVER_TRIALS"

// outcome is one trial: whether the acknowledged completion survived the
// failover, the fault window, and how long Do and the failover took.
type outcome struct {
	lost     bool
	status   string // the record on the promoted primary: completed, in_progress, absent, error: ...
	reran    bool   // a retry after the failover ran the function again
	sameTok  bool   // ... under the very token of the first execution
	retryErr error
	window   history.Op
	doTook   time.Duration
	doErr    error
	failover time.Duration
}

// runTrial completes key through an Engine on store, fails topo over right
// after Do returned (the completion acknowledged by the primary), then
// reads key through get, which must follow the promotion. A completion
// that is no longer there is lost.
func runTrial(ctx context.Context, store idem.Store, topo Topology, key string) outcome {
	e := idem.New(store, idem.WithLeaseTTL(10*time.Second))
	defer e.Close()
	fp := idem.FingerprintString("trial", key)
	var ran []idem.Token
	fn := func(ctx context.Context) (idem.Response, error) {
		l, _ := idem.LeaseFrom(ctx)
		ran = append(ran, l.Token)
		return idem.Response{Status: 200, Body: []byte("charged " + key)}, nil
	}
	start := time.Now()
	_, err := e.Do(ctx, key, fp, fn)
	o := outcome{doTook: time.Since(start), doErr: err}
	start = time.Now()
	o.window, err = topo.Failover(ctx, key)
	o.failover = time.Since(start)
	if err != nil {
		o.status = "failover error: " + err.Error()
		return o
	}
	o.status = readBack(ctx, store, key)
	o.lost = o.doErr == nil && o.status != "completed"
	// The client retries: does the request run a second time, and under
	// which token? (A lost claim also loses the fencing counter's step.)
	// Like a real client it tries again while the store is still settling
	// (a WAIT that no re-attached replica acknowledges yet, a claim left in
	// progress by that ambiguous attempt), for a bounded time.
	o.retryErr = retryUntilSettled(ctx, func() error {
		_, err := e.Do(ctx, key, fp, fn)
		return err
	})
	o.reran = len(ran) > 1
	o.sameTok = o.reran && ran[1] == ran[0]
	return o
}

// retryUntilSettled calls do until it succeeds, the request is refused
// for good (a fingerprint mismatch) or 30 s have passed; it returns the
// last error.
func retryUntilSettled(ctx context.Context, do func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := do()
		if err == nil || errors.Is(err, idem.ErrFingerprintMismatch) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readBack returns the status of key's record, retrying while the client
// still reaches for the dead primary.
func readBack(ctx context.Context, store idem.Store, key string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		rec, err := store.Get(ctx, key)
		switch {
		case err == nil:
			return rec.Status.String()
		case errors.Is(err, idem.ErrNotFound):
			return "absent"
		case ctx.Err() != nil:
			return "error: " + err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// trials returns how many trials to run (trialsEnv) or skips t.
func trials(t *testing.T) int {
	t.Helper()
	if testing.Short() {
		t.Skip("failover trials skipped with -short")
	}
	n, err := strconv.Atoi(os.Getenv(trialsEnv))
	if err != nil || n <= 0 {
		t.Skipf("set %s=N to run N failover trials per configuration", trialsEnv)
	}
	return n
}

// start starts a topology with startFn and opts, stopped at the end of
// t (a trial stops it earlier to check what is left).
func start[T interface{ Stop() error }, O any](ctx context.Context, t *testing.T, startFn func(context.Context, O) (T, error), opts O) T {
	t.Helper()
	topo, err := startFn(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topo.Stop() })
	return topo
}

// checkWindow fails t unless o's fault window is a whole fault on key.
func checkWindow(t *testing.T, o outcome, key string) {
	t.Helper()
	if w := o.window; w.Kind != history.KindFault || w.Return == history.NoReturn || w.Call >= w.Return || w.Key != key {
		t.Errorf("fault window %+v", w)
	}
}

// checkOutcome logs o (the record read back on promoted: "the promoted
// primary", …) and fails t when a retry ran the function again although
// the completion survived (or not although it was lost), or Do failed.
func checkOutcome(t *testing.T, o outcome, promoted string) {
	t.Helper()
	t.Logf("Do %v (err %v), failover %v, record on %s: %s; retry ran again %v (same token %v, err %v)", o.doTook, o.doErr, o.failover, promoted, o.status, o.reran, o.sameTok, o.retryErr)
	if o.reran != o.lost {
		t.Errorf("retry ran the function again = %v, but completion lost = %v", o.reran, o.lost)
	}
	if o.doErr != nil {
		t.Fatalf("Do: %v", o.doErr)
	}
}

// failoverCases runs each case in a parallel subtest named by name, on
// key k<i> (i its index).
func failoverCases[C any](t *testing.T, cases []C, name func(C) string, run func(t *testing.T, c C, key string)) {
	t.Parallel()
	for i, c := range cases {
		t.Run(name(c), func(t *testing.T) {
			t.Parallel()
			run(t, c, fmt.Sprintf("k%d", i))
		})
	}
}

// reportTrials runs trials() trials of each case with trial, one subtest
// a case named by name, and reports them as "system, name".
func reportTrials[C any](t *testing.T, system string, cases []C, name func(C) string, trial func(*testing.T, C, string) outcome) {
	n := trials(t)
	for _, c := range cases {
		t.Run(name(c), func(t *testing.T) {
			var outs []outcome
			for i := range n {
				outs = append(outs, trial(t, c, fmt.Sprintf("k%d", i)))
			}
			report(t, system+", "+name(c), outs)
		})
	}
}

// report logs one configuration's trials as a single line for the README.
func report(t *testing.T, name string, outs []outcome) {
	t.Helper()
	lost, doErrs, reran, sameTok := 0, 0, 0, 0
	var doTook, fo time.Duration
	for _, o := range outs {
		if o.lost {
			lost++
		}
		if o.doErr != nil {
			doErrs++
		}
		if o.reran {
			reran++
		}
		if o.sameTok {
			sameTok++
		}
		doTook += o.doTook
		fo += o.failover
	}
	statuses, retries := map[string]int{}, map[string]int{}
	for _, o := range outs {
		statuses[o.status]++
		retries[retryClass(o)]++
	}
	n := time.Duration(len(outs))
	line := fmt.Sprintf("%-52s %2d/%d acknowledged completions lost; retry ran the effect again %d (same token %d); records after failover %v; retries %v; %d Do errors; mean Do %v, mean failover %v",
		name, lost, len(outs), reran, sameTok, statuses, retries, doErrs, (doTook / n).Round(time.Millisecond), (fo / n).Round(time.Millisecond))
	t.Log(line)
	fmt.Fprintln(os.Stderr, "TRIALS", line)
}

// retryClass names what the retry after the failover got.
func retryClass(o outcome) string {
	switch {
	case o.reran:
		return "ran again"
	case o.retryErr == nil:
		return "replayed"
	case errors.Is(o.retryErr, idem.ErrInProgress):
		return "in progress (409)"
	}
	msg := o.retryErr.Error()
	if len(msg) > 60 {
		msg = msg[:60]
	}
	return "error: " + msg
}
