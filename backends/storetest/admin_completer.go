package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/idem"
)

// effectTable is the side effect of the completer cases: a fenced effect
// per key, as a payment table with a fencing column would keep it.
type effectTable struct {
	mu      sync.Mutex
	fence   map[string]idem.Token
	applied map[string]int
}

func newEffectTable() *effectTable {
	return &effectTable{fence: map[string]idem.Token{}, applied: map[string]int{}}
}

// errStale is the effect's refusal of a superseded token.
var errStale = errors.New("storetest: effect refused: stale token")

// apply performs key's effect under tok unless a higher token was seen.
func (e *effectTable) apply(key string, tok idem.Token) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tok < e.fence[key] {
		return errStale
	}
	e.fence[key] = tok
	e.applied[key]++
	return nil
}

// fenceAndLook raises key's fence to tok and reports whether the effect
// happened: the lookup WithRecovery asks for.
func (e *effectTable) fenceAndLook(key string, tok idem.Token) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fence[key] = max(e.fence[key], tok)
	return e.applied[key] > 0
}

// count returns how often key's effect was applied.
func (e *effectTable) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applied[key]
}

// look reports whether key's effect happened, without fencing.
func (e *effectTable) look(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applied[key] > 0
}

// recovery is the recovery hook on the table.
func (e *effectTable) recovery(_ context.Context, l idem.Lease) (idem.Response, bool, error) {
	if e.fenceAndLook(l.Key, l.Token) {
		return idem.Response{Status: 200, Body: []byte("recovered")}, true, nil
	}
	return idem.Response{}, false, nil
}

// fn is the guarded function: the effect, then its response.
func (e *effectTable) fn(ctx context.Context) (idem.Response, error) {
	l, _ := idem.LeaseFrom(ctx)
	if err := e.apply(l.Key, l.Token); err != nil {
		return idem.Response{}, err
	}
	return idem.Response{Status: 201, Body: []byte("done")}, nil
}

// completerRun abandons keys in three ways (crashed before the effect,
// crashed after it, paused past the lease before it), lets three
// completers (the reference one, or naive.UnfencedCompleter when bad) run at
// once with live clients retrying some keys, resumes the paused holders,
// and finally retries every key once as its client would. It returns the
// violations: a key whose effect did not happen exactly once, or that does
// not end completed.
func completerRun(t *testing.T, s *suite, st idem.Store, key string, bad bool) []string {
	t.Helper()
	sc := &completerScenario{st: st, table: newEffectTable(), fp: fp("completer"), kindOf: map[string]string{}}
	for _, k := range []string{"before", "after", "paused"} {
		for i := range completerKeysPerKind {
			name := fmt.Sprintf("%s-%s-%d", key, k, i)
			sc.keys = append(sc.keys, name)
			sc.kindOf[name] = k
		}
	}
	resume, wait := sc.abandon(t, s)
	clients := idem.New(st, idem.WithLeaseTTL(long), idem.WithRecovery(sc.table.recovery))
	defer clients.Close()
	sc.complete(t, clients, bad)
	resume()
	wait()
	return sc.verify(clients, bad)
}

// completerKeysPerKind is how many keys each way of abandoning gets.
const completerKeysPerKind = 3

// completerScenario is the state of one completerRun.
type completerScenario struct {
	st     idem.Store
	table  *effectTable
	fp     idem.Fingerprint
	keys   []string
	kindOf map[string]string // key -> before, after or paused
}

// abandon runs the holders: crashed ones return, paused ones hold their
// lease until resume is called; wait waits for them to finish. It returns
// once every lease has expired.
func (sc *completerScenario) abandon(t *testing.T, s *suite) (resume, wait func()) {
	t.Helper()
	release := make(chan struct{})
	reached := make(chan struct{}, completerKeysPerKind) // a paused holder holds its lease
	crash := errors.New("crash")
	hook := func(ctx context.Context, p idem.Point, l idem.Lease) error {
		switch kind := sc.kindOf[l.Key]; {
		case kind == "before" && p == idem.PointBeforeFn, kind == "after" && p == idem.PointAfterFn:
			return crash
		case kind == "paused" && p == idem.PointBeforeFn:
			reached <- struct{}{}
			<-release
		}
		return nil
	}
	holders := idem.New(sc.st, idem.WithLeaseTTL(s.ttl), idem.WithHeartbeat(-1), idem.WithHook(hook))
	var paused sync.WaitGroup
	for _, k := range sc.keys {
		if sc.kindOf[k] == "paused" {
			paused.Go(func() { _, _ = holders.Do(context.Background(), k, sc.fp, sc.table.fn) })
			continue
		}
		if _, err := holders.Do(context.Background(), k, sc.fp, sc.table.fn); !errors.Is(err, idem.ErrAborted) {
			t.Fatalf("holder of %s: %v, want a crash", k, err)
		}
	}
	for range completerKeysPerKind {
		<-reached
	}
	s.wait(s.pastTTL())
	return func() { close(release) }, func() { paused.Wait(); _ = holders.Close() }
}

// complete runs three completers at once, and two clients coming back
// meanwhile.
func (sc *completerScenario) complete(t *testing.T, clients *idem.Engine, bad bool) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if bad {
				look := func(k string) (idem.Response, bool) {
					return idem.Response{Status: 200, Body: []byte("recovered")}, sc.table.look(k)
				}
				if err := naive.UnfencedCompleter(context.Background(), sc.st, look); err != nil {
					t.Errorf("unfenced completer %d: %v", i, err)
				}
				return
			}
			if _, err := clients.RecoverAbandoned(context.Background(), 0, 0); err != nil {
				t.Errorf("completer %d: %v", i, err)
			}
		})
	}
	for _, k := range []string{sc.keys[0], sc.keys[completerKeysPerKind]} {
		wg.Go(func() { _, _ = clients.Do(context.Background(), k, sc.fp, sc.table.fn) })
	}
	wg.Wait()
}

// verify retries every key once and returns the violations.
func (sc *completerScenario) verify(clients *idem.Engine, bad bool) []string {
	var violations []string
	for _, k := range sc.keys {
		res, err := clients.Do(context.Background(), k, sc.fp, sc.table.fn)
		if err != nil {
			violations = append(violations, fmt.Sprintf("%s (%s): final retry: %v", k, sc.kindOf[k], err))
			continue
		}
		if n := sc.table.count(k); n != 1 {
			violations = append(violations, fmt.Sprintf("%s (%s): effect applied %d times (result %+v)", k, sc.kindOf[k], n, res))
		}
		if rec, err := sc.st.Get(context.Background(), k); err != nil || rec.Status != idem.StatusCompleted {
			violations = append(violations, fmt.Sprintf("%s (%s): not completed: %+v %v", k, sc.kindOf[k], rec, err))
		}
	}
	if lister, ok := sc.st.(idem.Lister); ok && !bad {
		if recs, err := lister.ListStuck(context.Background(), 0, 0); err != nil || len(recs) != 0 {
			violations = append(violations, fmt.Sprintf("stuck keys remain: %v %v", keysOf(recs), err))
		}
	}
	return violations
}
