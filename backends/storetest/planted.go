package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// TB is the part of testing.TB that Planted uses, so that property-based
// test libraries whose T is not a testing.TB (pgregory.net/rapid's *T) can
// drive it too.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Planted checks the fail-closed rule on the record of key as it is
// stored now, after a test changed it behind the store's back (a corrupt
// write, a restore, a hostile user with access to the backend). issued is
// the highest token the store ever issued for key; fp is the fingerprint
// the record was created with. Planted reads the record with Get and then:
//
//   - when Get reports idem.ErrCorruptRecord, it requires every call to fail
//     with idem.ErrCorruptRecord and change nothing a later Get can see:
//     Acquire with fp and with another fingerprint (no lease, no record),
//     Heartbeat, Complete, Fail and Release with the record's likely
//     tokens (issued, 1 and idem.MaxToken), and Engine.Do, whose function
//     must not run;
//   - when the record decodes (or is absent), it requires every lease any
//     call is granted to carry a token above both the record's and issued,
//     Do to run its function at most once and never for a finished record,
//     and Acquire with another fingerprint to take over nothing. A call
//     may also refuse with idem.ErrCorruptRecord and grant nothing: a store
//     whose token counter is behind the record's token fails closed so.
//
// It returns the highest token the store issued, issued or one of the
// leases granted meanwhile (a planted token was never issued, so it does
// not count), for the next call on the same key. desc names the planted
// change in failure messages.
func Planted(t TB, st idem.Store, key string, fp idem.Fingerprint, issued idem.Token, desc string) idem.Token {
	t.Helper()
	ctx := context.Background()
	other := idem.FingerprintString("storetest: another request")
	if other == fp {
		other = idem.FingerprintString("storetest: yet another request")
	}
	rec, err := st.Get(ctx, key)
	switch {
	case errors.Is(err, idem.ErrCorruptRecord):
		plantedCorrupt(t, ctx, st, key, fp, other, issued, desc)
		return issued
	case errors.Is(err, idem.ErrNotFound):
		rec = nil
	case err != nil:
		t.Fatalf("%s: Get: %v", desc, err)
	}
	high := issued
	if rec != nil {
		if rec.Validate() != nil || rec.Key != key {
			t.Fatalf("%s: Get returned an invalid record %+v without an error", desc, rec)
		}
		high = max(high, rec.Token)
	}
	granted := issued
	check := func(what string, l *idem.Lease) {
		t.Helper()
		if l == nil {
			return
		}
		if l.Token <= high {
			t.Fatalf("%s: %s issued token %d, not above %d (record %+v, issued before %d)", desc, what, l.Token, high, rec, issued)
		}
		high, granted = l.Token, l.Token
	}
	// Another request never takes over a present record.
	// A store may refuse a valid record when its token counter is behind
	// the record's token (a restore): that error wraps ErrCorruptRecord and
	// grants nothing.
	behind := func(err error) bool { return errors.Is(err, idem.ErrCorruptRecord) }
	l, orec, err := st.Acquire(ctx, key, other, long)
	switch {
	case behind(err) && l == nil && orec == nil:
		t.Logf("%s: Acquire refused: %v", desc, err)
	case err != nil:
		t.Fatalf("%s: Acquire with another fingerprint of valid record %+v: %v", desc, rec, err)
	case l != nil && rec != nil && rec.ExpiresAt.After(time.Now().Add(time.Minute)):
		t.Fatalf("%s: Acquire with another fingerprint took over record %+v: %+v", desc, rec, l)
	case l == nil && orec == nil:
		t.Fatalf("%s: Acquire returned neither a lease nor a record", desc)
	}
	check("Acquire with another fingerprint", l)
	if l != nil {
		// It claimed an absent or expired key: give it back, so that Do
		// below sees the state it is about.
		if err := st.Release(ctx, l); err != nil {
			t.Fatalf("%s: Release: %v", desc, err)
		}
	}
	ran := 0
	var ranWith idem.Token
	e := idem.New(st, idem.WithLeaseTTL(long), idem.WithRetention(long), idem.WithHeartbeat(-1))
	res, err := e.Do(ctx, key, fp, func(ctx context.Context) (idem.Response, error) {
		ran++
		if l, ok := idem.LeaseFrom(ctx); ok {
			ranWith = l.Token
		}
		return idem.Response{Status: 201, Body: []byte("planted")}, nil
	})
	if ran > 1 {
		t.Fatalf("%s: Do ran its function %d times", desc, ran)
	}
	if ran == 1 {
		if rec != nil && rec.Status != idem.StatusInProgress && rec.ExpiresAt.After(time.Now().Add(time.Minute)) {
			t.Fatalf("%s: Do executed over a %s record %+v", desc, rec.Status, rec)
		}
		check("Do", &idem.Lease{Token: ranWith})
	}
	if errors.Is(err, idem.ErrUncertain) && (ran != 0 || rec == nil || rec.Status != idem.StatusUncertain) {
		t.Fatalf("%s: Do answered uncertain (ran %d) for record %+v: %v", desc, ran, rec, err)
	}
	// A record stored under a fingerprint policy that this engine (which
	// names none) does not know is refused as such, and nothing runs.
	policyChanged := errors.Is(err, idem.ErrPolicyChanged) && ran == 0 && rec != nil && rec.FingerprintPolicy != ""
	if err != nil && !errors.Is(err, idem.ErrInProgress) && !errors.Is(err, idem.ErrFingerprintMismatch) &&
		!errors.Is(err, idem.ErrUncertain) && !(behind(err) && ran == 0) && !policyChanged {
		t.Fatalf("%s: Do on valid record %+v: %v (result %+v)", desc, rec, err, res)
	}
	return granted
}

// plantedCorrupt is Planted's check of a record Get calls corrupt.
func plantedCorrupt(t TB, ctx context.Context, st idem.Store, key string, fp, other idem.Fingerprint, issued idem.Token, desc string) {
	t.Helper()
	mustCorrupt := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("%s: %s on a corrupt record: %v, want idem.ErrCorruptRecord", desc, what, err)
		}
	}
	for _, f := range []idem.Fingerprint{fp, other} {
		l, rec, err := st.Acquire(ctx, key, f, long)
		if l != nil || rec != nil {
			t.Fatalf("%s: Acquire on a corrupt record returned lease %+v, record %+v, err %v", desc, l, rec, err)
		}
		mustCorrupt("Acquire", err)
	}
	tokens := []idem.Token{1, idem.MaxToken}
	if issued != 0 {
		tokens = append(tokens, issued)
	}
	for _, tok := range tokens {
		l := &idem.Lease{Key: key, Token: tok, Fingerprint: fp}
		mustCorrupt(fmt.Sprintf("Heartbeat with token %d", tok), st.Heartbeat(ctx, l, long))
		mustCorrupt(fmt.Sprintf("Complete with token %d", tok), st.Complete(ctx, l, idem.Response{Status: 200}, long))
		mustCorrupt(fmt.Sprintf("Fail with token %d", tok), st.Fail(ctx, l, idem.Response{Status: 500}, long))
		mustCorrupt(fmt.Sprintf("Release with token %d", tok), st.Release(ctx, l))
	}
	ran := false
	e := idem.New(st, idem.WithLeaseTTL(long), idem.WithRetention(long), idem.WithHeartbeat(-1))
	_, err := e.Do(ctx, key, fp, func(context.Context) (idem.Response, error) {
		ran = true
		return idem.Response{Status: 201}, nil
	})
	if ran {
		t.Fatalf("%s: Do executed over a corrupt record", desc)
	}
	mustCorrupt("Do", err)
	_, err = st.Get(ctx, key)
	mustCorrupt("Get after every call", err)
}

// plantedRecords is the safety case of Config.Plant: PlantRuns records,
// each created through the store (in progress, completed or failed), then
// changed at random by Plant, then checked by Planted.
func plantedRecords(t testing.TB, s *suite, st idem.Store, key string) {
	if s.cfg.Plant == nil {
		t.Skip("Config.Plant not set")
	}
	runs := s.cfg.PlantRuns
	if runs <= 0 {
		runs = DefaultPlantRuns
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	seed := r.Uint64()
	r = rand.New(rand.NewPCG(seed, 23))
	t.Logf("storetest: %d planted records, seed %d", runs, seed)
	for i := range runs {
		k := fmt.Sprintf("%s.%d", key, i)
		l := MustAcquire(t, st, k, fp("a"), long)
		Settle(t, st, l, r.IntN(PlantStates))
		desc := s.cfg.Plant(realT(t), st, k, r)
		Planted(t, st, k, fp("a"), l.Token, fmt.Sprintf("record %d (seed %d): %s", i, seed, desc))
	}
}

// PlantStates is how many states Settle can leave a record in.
const PlantStates = 3

// Settle leaves the record that l just claimed in state, one of
// PlantStates, for a planted change to start from: 0 in progress (it does
// nothing), 1 completed, 2 failed. It fails t if the store refuses.
func Settle(t TB, st idem.Store, l *idem.Lease, state int) {
	t.Helper()
	var err error
	switch state {
	case 1:
		err = st.Complete(bg(), l, sampleResponse("planted"), long)
	case 2:
		err = st.Fail(bg(), l, idem.Response{Status: 402}, long)
	}
	if err != nil {
		t.Fatalf("leaving %s in state %d: %v", l.Key, state, err)
	}
}

// Chooser draws one of n choices (0 to n-1); label names the choice, so
// that a property-based library can report and shrink it.
type Chooser = func(label string, n int) int

// RandChooser is a Chooser that draws from r; it ignores the labels.
func RandChooser(r *rand.Rand) Chooser { return func(_ string, n int) int { return r.IntN(n) } }

// PlantFunc changes key's stored record behind the store's back, in one
// of the ways draw picks (draw(label, n) returns 0 to n-1), and describes
// the change.
type PlantFunc func(ctx context.Context, key string, draw Chooser) (string, error)

// PlantWith returns a Config.Plant for stores of type S: it changes the
// record with plant, its choices drawn from the case's random source, and
// fails t if plant fails.
func PlantWith[S idem.Store](plant func(ctx context.Context, s S, key string, pick Chooser) (string, error)) func(t *testing.T, st idem.Store, key string, r *rand.Rand) string {
	return func(t *testing.T, st idem.Store, key string, r *rand.Rand) string {
		t.Helper()
		desc, err := plant(bg(), st.(S), key, RandChooser(r))
		if err != nil {
			t.Fatal(err)
		}
		return desc
	}
}

// PlantedRun is one run of a store's planted-records property (driven by
// pgregory.net/rapid or any other source of draws): it claims the fresh
// key for fp, whose token must be above issued, leaves the record in the
// state draw picks (Settle), changes it with plant and holds it to
// Planted. counter reads the store's fencing counter behind key, which
// must not go back. It returns the highest token issued so far.
func PlantedRun(t TB, st idem.Store, key string, fp idem.Fingerprint, issued idem.Token, draw Chooser,
	plant PlantFunc, counter func(t TB) uint64) idem.Token {
	t.Helper()
	l, rec, err := st.Acquire(bg(), key, fp, time.Hour)
	if err != nil || rec != nil {
		t.Fatalf("claim of fresh key %q: %v (record %+v)", key, err, rec)
	}
	if l.Token <= issued {
		t.Fatalf("claim of %q got token %d, not above %d issued before", key, l.Token, issued)
	}
	Settle(t, st, l, draw("state", PlantStates))
	before := counter(t)
	desc, err := plant(bg(), key, draw)
	if err != nil {
		t.Fatalf("plant %q: %v", key, err)
	}
	issued = max(issued, Planted(t, st, key, fp, l.Token, desc))
	if after := counter(t); after < before {
		t.Fatalf("%s: fencing counter %d → %d", desc, before, after)
	}
	return issued
}

// DefaultPlantRuns is the number of records the planted-records case
// changes when Config.PlantRuns is zero.
const DefaultPlantRuns = 50

// Decoded checks the contract of a store's record decoder on one input, as
// its fuzz target sees it: the decoder returns either a record that
// validates and no error, or no record and an error wrapping
// idem.ErrCorruptRecord. Decoded reports whether a record came back, for
// the caller to compare it with the stored fields.
func Decoded(t TB, rec *idem.Record, err error) bool {
	t.Helper()
	switch {
	case err != nil && rec != nil:
		t.Fatalf("record %+v returned with error %v", rec, err)
	case err != nil && !errors.Is(err, idem.ErrCorruptRecord):
		t.Fatalf("error %v does not wrap idem.ErrCorruptRecord", err)
	case err != nil:
		return false
	case rec == nil:
		t.Fatalf("neither a record nor an error")
	}
	if verr := rec.Validate(); verr != nil {
		t.Fatalf("decoded record does not validate: %v", verr)
	}
	return true
}
