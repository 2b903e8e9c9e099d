package idemslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemslog"
)

const secretKey = "pay_cus-4242-SECRET"

var (
	fpA = idem.FingerprintString("POST", "/pay", "a")
	fpB = idem.FingerprintString("POST", "/pay", "b")
)

// leakyStore fails Complete with an error that quotes the key, as store
// errors do (corrupt records, backend failures).
type leakyStore struct {
	idem.Store
	failComplete bool
}

func (s *leakyStore) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, ret time.Duration) error {
	if s.failComplete {
		return idem.BackendError("complete", fmt.Errorf("connection reset while writing %q (key %s)", l.Key, l.Key))
	}
	return s.Store.Complete(ctx, l, resp, ret)
}

// runScript drives an engine observed by idemslog through acquired,
// completed, replayed, mismatch, conflict, taken_over, lease_lost and
// backend_error, all on keys that contain secretKey, and returns the log.
func runScript(t *testing.T, opts idemslog.Options) string {
	t.Helper()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clock := memstore.NewManualClock(time.Unix(1e9, 0))
	mem := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { _ = mem.Close() })
	store := &leakyStore{Store: mem}
	obs := idem.WithObserver(idemslog.Observer(logger, opts))
	eng := idem.New(store, obs, idem.WithScope("tenant"), idem.WithLeaseTTL(time.Minute), idem.WithHeartbeat(-1))
	ctx := context.Background()
	ok := func(context.Context) (idem.Response, error) { return idem.Response{Status: 201}, nil }

	_, _ = eng.Do(ctx, secretKey, fpA, ok)                    // acquired, completed
	_, _ = eng.Do(ctx, secretKey, fpA, ok)                    // replayed
	_, _ = eng.Do(ctx, secretKey, fpB, ok)                    // mismatch
	_, _ = eng.DoScoped(ctx, "acct", "x:"+secretKey, fpA, ok) // escaped scoped key
	crash := idem.New(store, obs, idem.WithHook(func(context.Context, idem.Point, idem.Lease) error {
		return errors.New("crash")
	}))
	_, _ = crash.Do(ctx, "2"+secretKey, fpA, ok) // acquired (unscoped), lease left behind
	unscoped := idem.New(store, obs, idem.WithLeaseTTL(time.Minute), idem.WithHeartbeat(-1))
	_, _ = unscoped.Do(ctx, "2"+secretKey, fpA, ok) // conflict
	clock.Advance(2 * time.Minute)
	_, _ = unscoped.Do(ctx, "2"+secretKey, fpA, func(ctx context.Context) (idem.Response, error) {
		clock.Advance(2 * time.Minute)
		_, _ = unscoped.Do(ctx, "2"+secretKey, fpA, ok) // taken_over by another, completed
		return idem.Response{Status: 201}, nil          // lease_lost
	})
	store.failComplete = true
	_, _ = eng.Do(ctx, "3"+secretKey, fpA, ok) // acquired, backend_error naming the key
	return buf.String()
}

func TestAuditLogLinesPerTransition(t *testing.T) {
	out := runScript(t, idemslog.Options{})
	var seen []string
	warn := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if m["msg"] != idemslog.DefaultMessage {
			t.Fatalf("msg %v", m["msg"])
		}
		tr, _ := m["transition"].(string)
		seen = append(seen, tr)
		if m["level"] == "WARN" {
			warn[tr] = true
		}
		if k, _ := m["key"].(string); !strings.Contains(k, secretKey) {
			t.Fatalf("line %q: key %q", line, k)
		}
	}
	want := []string{"acquired", "completed", "replayed", "mismatch", "acquired", "completed",
		"acquired", "conflict", "taken_over", "taken_over", "completed", "lease_lost", "acquired", "backend_error"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("transitions\n got %v\nwant %v", seen, want)
	}
	if !warn["lease_lost"] || !warn["backend_error"] || warn["completed"] {
		t.Fatalf("warn levels %v", warn)
	}
}

func TestAuditLogWithSecretNeverHoldsTheKey(t *testing.T) {
	secret := []byte("audit-secret")
	out := runScript(t, idemslog.Options{KeySecret: secret})
	// Fragments of the key that no timestamp, duration or hex digest can
	// hold by chance: a bare "4242" did, in a nanosecond timestamp.
	for _, leak := range []string{secretKey, "cus-4242", "-4242-", "SECRET"} {
		if strings.Contains(out, leak) {
			t.Fatalf("log holds %q:\n%s", leak, out)
		}
	}
	stored, err := idem.StorageKey(secretKey, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	digest := idemslog.KeyDigest(secret, stored)
	if !strings.Contains(out, `"key_hmac":"`+digest+`"`) {
		t.Fatalf("log lacks the digest %s of %q:\n%s", digest, stored, out)
	}
	if strings.Contains(out, `"key":`) {
		t.Fatalf("raw key attribute present:\n%s", out)
	}
	if !strings.Contains(out, `"transition":"backend_error"`) || !strings.Contains(out, "connection reset while writing <key ") {
		t.Fatalf("backend error not logged redacted:\n%s", out)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ text, key, want string }{
		{`acquire "k1": boom`, "k1", `acquire R: boom`},
		{`key "a:k1" and k1`, "a:k1", `key R and R`},
		{`key "a::b:k1" and "b:k1"`, "a::b:k1", `key R and R`},
		{`key ":b:k1" then b:k1`, ":b:k1", `key R then R`},
		{`q "a\"b"`, `a"b`, `q R`},
		{`nothing here`, "k1", `nothing here`},
	}
	for _, tt := range tests {
		if got := idemslog.Redact(tt.text, tt.key, "R"); got != tt.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", tt.text, tt.key, got, tt.want)
		}
	}
}

func TestKeyDigestDependsOnSecret(t *testing.T) {
	a, b := idemslog.KeyDigest([]byte("s1"), "k"), idemslog.KeyDigest([]byte("s2"), "k")
	if a == b || len(a) != 64 || a == idemslog.KeyDigest([]byte("s1"), "k2") {
		t.Fatalf("digests %s %s", a, b)
	}
}
