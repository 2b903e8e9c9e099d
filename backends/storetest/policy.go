package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

// The policy group holds stores that implement idem.PolicyStore to its
// contract: the fingerprint policy id a record was created under comes
// back byte for byte from every read, through every transition and a
// take-over, a record stored without one reads as "", an id the rules
// refuse is never stored, and a stored id that breaks them fails closed.
// A store without the capability skips the group.

// Policy cases fail when a record's fingerprint policy id can be lost,
// changed or invented, so that the engine would compare a request under
// the wrong policy: a false mismatch, or a replay of another request.
const Policy Group = "policy"

func policyCases() []groupCase {
	return []groupCase{
		{"PolicyKeptThroughEveryTransition", policyKept},
		{"TakeOverKeepsStoredPolicy", policyTakeOver},
		{"PlainAcquireStoresNoPolicy", policyPlain},
		{"InvalidPolicyIsRefused", policyInvalid},
		{"CorruptPolicyFailsClosed", policyCorrupt},
		{"EngineComparesUnderStoredPolicy", policyEngine},
	}
}

// policyStore returns st as an idem.PolicyStore, or skips t.
func policyStore(t testing.TB, st idem.Store) idem.PolicyStore {
	t.Helper()
	ps, ok := st.(idem.PolicyStore)
	if !ok {
		t.Skip("store does not implement idem.PolicyStore")
	}
	return ps
}

// oddPolicy is a valid policy id of every byte the rules allow that a
// store could mangle: quotes, backslashes, Lua pattern and SQL wildcard
// characters, at the length limit.
var oddPolicy = func() string {
	var b strings.Builder
	for c := byte(0x21); c <= 0x7e; c++ {
		b.WriteByte(c)
	}
	s := b.String()
	return s + strings.Repeat("~", idem.MaxPolicyLen-len(s))
}()

// acquirePolicy calls AcquirePolicy and fails t unless a lease, and no
// record, comes back.
func acquirePolicy(t testing.TB, ps idem.PolicyStore, key string, f idem.Fingerprint, policy string, s *suite) *idem.Lease {
	t.Helper()
	l, rec, err := ps.AcquirePolicy(bg(), key, f, policy, s.ttl)
	if err != nil || l == nil || rec != nil {
		t.Fatalf("AcquirePolicy(%q, %q): lease %+v, record %+v, err %v; want a lease", key, policy, l, rec, err)
	}
	return l
}

// wantPolicy fails t unless key's record reads with policy, from Get and
// from Acquire with another fingerprint.
func wantPolicy(t testing.TB, st idem.Store, key, policy, when string) {
	t.Helper()
	if got := mustGet(t, st, key).FingerprintPolicy; got != policy {
		t.Fatalf("%s: Get: policy %q, want %q", when, got, policy)
	}
	if got := MustRecord(t, st, key, fp("another request"), long).FingerprintPolicy; got != policy {
		t.Fatalf("%s: Acquire: policy %q, want %q", when, got, policy)
	}
}

func policyKept(t testing.TB, s *suite, st idem.Store, key string) {
	ps := policyStore(t, st)
	for i, settle := range []string{"complete", "fail", "uncertain"} {
		k := key + "." + settle
		l := acquirePolicy(t, ps, k, fp("a"), oddPolicy, s)
		if l.FingerprintPolicy != oddPolicy {
			t.Fatalf("lease policy %q, want %q", l.FingerprintPolicy, oddPolicy)
		}
		wantPolicy(t, st, k, oddPolicy, "in progress")
		if err := st.Heartbeat(bg(), l, s.ttl); err != nil {
			t.Fatalf("Heartbeat: %v", err)
		}
		wantPolicy(t, st, k, oddPolicy, "after a heartbeat")
		var err error
		switch i {
		case 0:
			err = st.Complete(bg(), l, sampleResponse("kept"), long)
		case 1:
			err = st.Fail(bg(), l, idem.Response{Status: 402}, long)
		default:
			us, ok := st.(idem.UncertainStore)
			if !ok {
				continue
			}
			if err = us.MarkUncertain(bg(), l, idem.Response{Status: 504}, long); err == nil {
				wantPolicy(t, st, k, oddPolicy, "uncertain")
				err = us.Resolve(bg(), k, l.Token, &idem.Response{Status: 201}, long)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", settle, err)
		}
		wantPolicy(t, st, k, oddPolicy, settle)
	}
}

func policyTakeOver(t testing.TB, s *suite, st idem.Store, key string) {
	ps := policyStore(t, st)
	old := acquirePolicy(t, ps, key, fp("a"), "payments/v1", s)
	for _, claim := range []struct {
		name string
		call func() (*idem.Lease, *idem.Record, error)
	}{
		{"AcquirePolicy with another policy", func() (*idem.Lease, *idem.Record, error) {
			return ps.AcquirePolicy(bg(), key, fp("a"), "payments/v2", s.ttl)
		}},
		{"Acquire", func() (*idem.Lease, *idem.Record, error) { return st.Acquire(bg(), key, fp("a"), s.ttl) }},
	} {
		s.wait(s.pastTTL())
		l, rec, err := claim.call()
		if err != nil || l == nil || rec != nil || l.PrevToken != old.Token {
			t.Fatalf("%s after expiry: lease %+v, record %+v, err %v; want a take-over of token %d", claim.name, l, rec, err, old.Token)
		}
		if l.FingerprintPolicy != "payments/v1" {
			t.Fatalf("%s: take-over lease policy %q, want the record's %q", claim.name, l.FingerprintPolicy, "payments/v1")
		}
		wantPolicy(t, st, key, "payments/v1", claim.name+" took over")
		old = l
	}
	if err := st.Complete(bg(), old, sampleResponse("taken over"), long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantPolicy(t, st, key, "payments/v1", "completed after take-overs")
}

func policyPlain(t testing.TB, s *suite, st idem.Store, key string) {
	ps := policyStore(t, st)
	l := MustAcquire(t, st, key, fp("a"), s.ttl)
	if l.FingerprintPolicy != "" {
		t.Fatalf("Acquire: lease policy %q, want none", l.FingerprintPolicy)
	}
	wantPolicy(t, st, key, "", "Acquire")
	rec, err := func() (*idem.Record, error) {
		l2, rec, err := ps.AcquirePolicy(bg(), key, fp("a"), "payments/v2", s.ttl)
		if l2 != nil {
			t.Fatalf("AcquirePolicy on a live lease granted %+v", l2)
		}
		return rec, err
	}()
	if err != nil || rec == nil || rec.FingerprintPolicy != "" {
		t.Fatalf("AcquirePolicy on a record without policy: %+v, %v; want it unchanged", rec, err)
	}
	if err := st.Complete(bg(), l, sampleResponse("plain"), long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantPolicy(t, st, key, "", "completed")
	l = acquirePolicy(t, ps, key+".empty", fp("a"), "", s)
	if l.FingerprintPolicy != "" {
		t.Fatalf("AcquirePolicy with \"\": lease policy %q", l.FingerprintPolicy)
	}
	wantPolicy(t, st, key+".empty", "", "AcquirePolicy with \"\"")
}

func policyInvalid(t testing.TB, s *suite, st idem.Store, key string) {
	ps := policyStore(t, st)
	for _, bad := range []string{"pay ments", "v1\x00", "caf\xc3\xa9", strings.Repeat("p", idem.MaxPolicyLen+1), "tab\tbed"} {
		l, rec, err := ps.AcquirePolicy(bg(), key, fp("a"), bad, s.ttl)
		if !errors.Is(err, idem.ErrInvalidPolicy) || l != nil || rec != nil {
			t.Fatalf("AcquirePolicy with %q: lease %+v, record %+v, err %v; want idem.ErrInvalidPolicy", bad, l, rec, err)
		}
		if _, err := st.Get(bg(), key); !errors.Is(err, idem.ErrNotFound) {
			t.Fatalf("after AcquirePolicy with %q: Get: %v, want idem.ErrNotFound", bad, err)
		}
	}
}

// badPolicies are stored ids that break the rules, for Config.PlantPolicy.
var badPolicies = []string{"pay ments", strings.Repeat("p", idem.MaxPolicyLen+1), "v1\x01", "caf\xc3\xa9"}

func policyCorrupt(t testing.TB, s *suite, st idem.Store, key string) {
	ps := policyStore(t, st)
	if s.cfg.PlantPolicy == nil {
		t.Skip("Config.PlantPolicy not set")
	}
	for i, bad := range badPolicies {
		for state := range PlantStates {
			k := key + "." + string(rune('a'+i)) + string(rune('0'+state))
			l := acquirePolicy(t, ps, k, fp("a"), "payments/v1", s)
			Settle(t, st, l, state)
			if !s.cfg.PlantPolicy(realT(t), st, k, bad) {
				continue // the backend cannot hold this value
			}
			if _, err := st.Get(bg(), k); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("policy %q planted in state %d: Get: %v, want idem.ErrCorruptRecord", bad, state, err)
			}
			Planted(t, st, k, fp("a"), l.Token, fmt.Sprintf("policy %q planted in state %d", bad, state))
		}
	}
}

func policyEngine(t testing.TB, s *suite, st idem.Store, key string) {
	policyStore(t, st)
	ctx := context.Background()
	e := idem.New(st, idem.WithLeaseTTL(long), idem.WithRetention(long), idem.WithHeartbeat(-1))
	defer e.Close()
	ran := 0
	fn := func(context.Context) (idem.Response, error) {
		ran++
		return idem.Response{Status: 201, Body: []byte("charged")}, nil
	}
	v1 := func(req string) idem.Fingerprint { return fp("v1:" + req) }
	v2 := func(req string) idem.Fingerprint { return fp("v2:" + req) }
	claim := func(req string, knowsV1 bool) idem.Claim {
		c := idem.Claim{Fingerprint: v2(req), Policy: "payments/v2"}
		if knowsV1 {
			c.Prior = func(id string, stored idem.Fingerprint) (bool, bool) {
				if id != "payments/v1" {
					return false, false
				}
				return true, v1(req) == stored
			}
		}
		return c
	}
	if _, err := e.DoClaim(ctx, "", key, idem.Claim{Fingerprint: v1("A"), Policy: "payments/v1"}, fn); err != nil || ran != 1 {
		t.Fatalf("first request under v1: ran %d, %v", ran, err)
	}
	res, err := e.DoClaim(ctx, "", key, claim("A", true), fn)
	if err != nil || !res.Replayed || ran != 1 || string(res.Response.Body) != "charged" {
		t.Fatalf("same request under v2, v1 known: %+v, %v (ran %d); want a replay", res, err, ran)
	}
	if _, err := e.DoClaim(ctx, "", key, claim("B", true), fn); !errors.Is(err, idem.ErrFingerprintMismatch) || ran != 1 {
		t.Fatalf("another request under v2, v1 known: %v (ran %d); want idem.ErrFingerprintMismatch", err, ran)
	}
	for _, req := range []string{"A", "B"} {
		if _, err := e.DoClaim(ctx, "", key, claim(req, false), fn); !errors.Is(err, idem.ErrPolicyChanged) || ran != 1 {
			t.Fatalf("request %s under v2, v1 unknown: %v (ran %d); want idem.ErrPolicyChanged", req, err, ran)
		}
	}
	if got := mustGet(t, st, key); got.FingerprintPolicy != "payments/v1" || got.Fingerprint != v1("A") {
		t.Fatalf("record after the v2 requests: %+v; want v1's, unchanged", got)
	}
	// A crashed holder under v1: the same request under v2 takes it over
	// under v1, and the record keeps v1.
	ps := policyStore(t, st)
	crashed := acquirePolicy(t, ps, key+".crashed", v1("A"), "payments/v1", s)
	s.wait(s.pastTTL())
	var took idem.Lease
	_, err = e.DoClaim(ctx, "", key+".crashed", claim("A", true), func(ctx context.Context) (idem.Response, error) {
		took, _ = idem.LeaseFrom(ctx)
		return fn(ctx)
	})
	if err != nil || ran != 2 || took.PrevToken != crashed.Token || took.FingerprintPolicy != "payments/v1" {
		t.Fatalf("same request under v2 after a v1 holder crashed: %v (ran %d, lease %+v); want a take-over of token %d under v1",
			err, ran, took, crashed.Token)
	}
	if got := mustGet(t, st, key+".crashed"); got.FingerprintPolicy != "payments/v1" || got.Status != idem.StatusCompleted {
		t.Fatalf("record after the take-over: %+v; want completed under v1", got)
	}
	if _, err := e.DoClaim(ctx, "", key+".bad", idem.Claim{Fingerprint: v2("A"), Policy: "pay ments"}, fn); !errors.Is(err, idem.ErrInvalidPolicy) || ran != 2 {
		t.Fatalf("claim under an invalid policy id: %v (ran %d); want idem.ErrInvalidPolicy", err, ran)
	}
}
