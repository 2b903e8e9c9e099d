package idemgrpc_test

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemgrpc"
)

// errorInfo returns the ErrorInfo detail of err, failing t without one.
func errorInfo(t *testing.T, err error) *errdetails.ErrorInfo {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if info.GetDomain() != idemgrpc.ErrorDomain {
				t.Fatalf("ErrorInfo domain %q, want %q", info.GetDomain(), idemgrpc.ErrorDomain)
			}
			return info
		}
	}
	t.Fatalf("%v: no ErrorInfo detail", err)
	return nil
}

// wantInfo fails t unless err is FailedPrecondition with reason and, when
// safe is set, safe_new_key=false.
func wantInfo(t *testing.T, what string, err error, reason string, unsafeNewKey bool) {
	t.Helper()
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("%s: %v, want FailedPrecondition", what, err)
	}
	info := errorInfo(t, err)
	if info.GetReason() != reason || (unsafeNewKey && info.GetMetadata()["safe_new_key"] != "false") {
		t.Fatalf("%s: ErrorInfo %v, want reason %s (safe_new_key false: %v)", what, info, reason, unsafeNewKey)
	}
}

// TestUncertainCode: a handler error whose code UncertainCode names
// records the key uncertain: that call and every later one get
// FailedPrecondition OPERATION_UNCERTAIN with safe_new_key=false, and the
// handler does not run again.
func TestUncertainCode(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			p := &payments{}
			conn := serve(t, mk(t), p, idemgrpc.Options{UncertainCode: func(c codes.Code) bool { return c == codes.DeadlineExceeded }})
			for i := range 3 {
				_, replayed, err := call(conn, "timeout", "k")
				wantInfo(t, "call", err, idemgrpc.ReasonOperationUncertain, true)
				if replayed || p.runs.Load() != 1 {
					t.Fatalf("call %d: replayed %v, %d runs; want 1 run", i, replayed, p.runs.Load())
				}
			}
			if _, _, err := call(conn, "timeout", "k2"); status.Code(err) != codes.FailedPrecondition || p.runs.Load() != 2 {
				t.Fatalf("a new key: %v, %d runs", err, p.runs.Load())
			}
			_, _, err := call(conn, "unavailable", "k3") // not uncertain: released, no detail
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("unavailable: %v", err)
			}
		})
	}
}

// TestFingerprintPolicyStoredWithRecord: the policy id goes with the
// record; after a change a call is compared under the key's policy when
// PriorPolicies knows it (replay or FINGERPRINT_MISMATCH), and answered
// POLICY_CHANGED when it does not.
func TestFingerprintPolicyStoredWithRecord(t *testing.T) {
	v1 := idemgrpc.FingerprintPolicy{Policy: "pay/v1"}.Func()
	v2 := idemgrpc.FingerprintPolicy{Policy: "pay/v2"}.Func()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store, p := mk(t), &payments{}
			before := serve(t, store, p, idemgrpc.Options{Fingerprint: v1, FingerprintPolicy: "pay/v1"})
			after := serve(t, store, p, idemgrpc.Options{Fingerprint: v2, FingerprintPolicy: "pay/v2",
				PriorPolicies: map[string]idemgrpc.FingerprintFunc{"pay/v1": v1}})
			forgot := serve(t, store, p, idemgrpc.Options{Fingerprint: v2, FingerprintPolicy: "pay/v2"})
			if _, _, err := call(before, "a", "k"); err != nil {
				t.Fatal(err)
			}
			if rec, err := store.Get(context.Background(), "k"); err != nil || rec.FingerprintPolicy != "pay/v1" {
				t.Fatalf("record %+v, %v; want policy pay/v1", rec, err)
			}
			for _, v := range []string{"a", "b"} {
				_, _, err := call(forgot, v, "k")
				wantInfo(t, "v2 without v1, "+v, err, idemgrpc.ReasonPolicyChanged, true)
			}
			out, replayed, err := call(after, "a", "k")
			if err != nil || !replayed || out.GetFields()["run"].GetNumberValue() != 1 {
				t.Fatalf("v2 knowing v1: %v replayed %v %v; want run 1 replayed", out, replayed, err)
			}
			_, _, err = call(after, "b", "k")
			wantInfo(t, "another message", err, idemgrpc.ReasonFingerprintMismatch, false)
			if n := p.runs.Load(); n != 1 {
				t.Fatalf("%d runs, want 1", n)
			}
		})
	}
}

func TestInvalidPolicyIDPanics(t *testing.T) {
	for _, o := range []idemgrpc.Options{{FingerprintPolicy: "pay v2"}, {PriorPolicies: map[string]idemgrpc.FingerprintFunc{"": nil}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("UnaryServerInterceptor accepted %+v", o)
				}
			}()
			idemgrpc.UnaryServerInterceptor(idem.New(memstore.New(memstore.Options{SweepInterval: -1})), o)
		}()
	}
}
