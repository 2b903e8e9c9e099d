// Package storetest is the conformance suite every idem.Store runs: the
// memory, Redis and PostgreSQL backends, and the deliberately broken designs
// of backends/naive (which must fail it).
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Config{New: newStore, Corrupt: corrupt})
//	}
//
// Each case is named after the property it proves, and belongs to a group
// (Safety, Contract, Liveness; see Cases): its subtest is
// <group>/<case>, so "go test -run 'TestConformance/safety/'" runs the
// safety cases alone. A store that is stricter than the contract but safe
// (it refuses every write once its lease has expired, say) declares that in
// Config.Deviations, with a reason, and reads differently from an unsafe one:
// the deviating case still runs, and its outcome is logged as a documented
// deviation (or fails if the store does not deviate after all). Safety cases
// admit no deviation.
package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// Config describes the store under test.
type Config struct {
	// New returns a store for one test. Stores may share a backend: the
	// suite uses keys unique to each test.
	New func(t *testing.T) idem.Store
	// Advance moves the clock of every store New returns forward by d. Nil
	// means the store runs on real time: the suite then sleeps past short
	// TTLs and runs its cases in parallel.
	Advance func(d time.Duration)
	// Corrupt overwrites the stored record of key with data the store must
	// reject with idem.ErrCorruptRecord. Nil skips that case.
	Corrupt func(t *testing.T, s idem.Store, key string)
	// Plant changes the stored record of key at random, bypassing the
	// store, in the store's own format: field types, ranges, presence,
	// numeric forms, status, extra fields, binary junk, an expired lease,
	// a key of another type. It draws every choice from r and returns a
	// description of what it did. The case PlantedRecordsFailClosed then
	// holds the store to the fail-closed rule (see Planted). Nil skips
	// that case.
	Plant func(t *testing.T, s idem.Store, key string, r *rand.Rand) string
	// PlantPolicy overwrites the fingerprint policy id stored with the
	// record of key with policy, bypassing the store, in the store's own
	// format, and reports whether the backend could hold it (a value it
	// cannot hold, such as a NUL byte in a PostgreSQL text column, is
	// skipped). The case CorruptPolicyFailsClosed then holds the store to
	// the fail-closed rule for ids that break idem.ValidatePolicy. Nil
	// skips that case.
	PlantPolicy func(t *testing.T, s idem.Store, key, policy string) bool
	// PlantRuns is how many records PlantedRecordsFailClosed plants; zero
	// means DefaultPlantRuns.
	PlantRuns int
	// Deviations maps the name of a contract or liveness case the store
	// knowingly fails to the reason why (a documented, safe choice of the
	// store). That case runs all the same: its failure is logged as a
	// documented deviation instead of failing the test, and a case that
	// passes although it is declared fails the test, so that declarations
	// stay true. A name that is no case, or a safety case, fails the test
	// before any case runs. Nil means none.
	Deviations map[string]string
}

// suite is the running state shared by the cases.
type suite struct {
	cfg Config
	ttl time.Duration // a lease TTL the suite can wait out
}

// newSuite returns the state of a run over cfg: a lease TTL of 10 s on a
// store with a manual clock (cfg.Advance), 400 ms on real time.
func newSuite(cfg Config) *suite {
	s := &suite{cfg: cfg, ttl: 10 * time.Second}
	if cfg.Advance == nil {
		s.ttl = 400 * time.Millisecond
	}
	return s
}

// wait lets d pass on the store's clock.
func (s *suite) wait(d time.Duration) {
	if s.cfg.Advance != nil {
		s.cfg.Advance(d)
		return
	}
	time.Sleep(d)
}

// pastTTL is a duration safely past s.ttl, for the store's clock.
func (s *suite) pastTTL() time.Duration { return s.ttl + s.ttl/2 + 50*time.Millisecond }

// long is a TTL no test outlives.
const long = time.Hour

// testCase is a case run on a *testing.T (optional-capability suites such
// as RunBatch).
type testCase struct {
	name string
	run  func(t *testing.T, s *suite, st idem.Store, key string)
}

// groupCase is a case of a group: it runs on a testing.TB, so that a
// declared deviation can run it against a recorder (see Config.Deviations).
type groupCase struct {
	name string
	run  func(t testing.TB, s *suite, st idem.Store, key string)
}

// Run runs every case of the suite against cfg, group by group: subtest
// <group>/<case>. It logs one line per documented deviation (see
// Config.Deviations).
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("storetest: Config.New is nil")
	}
	checkDeviations(t, cfg.Deviations)
	for _, c := range Cases() {
		if reason, ok := cfg.Deviations[c.Name]; ok {
			t.Logf("storetest: %s (%s) is declared a documented deviation: %s", c.Name, c.Group, reason)
		}
	}
	s := newSuite(cfg)
	for _, g := range groups {
		t.Run(string(g.group), func(t *testing.T) {
			for _, c := range g.cases() {
				t.Run(c.name, func(t *testing.T) {
					if cfg.Advance == nil {
						t.Parallel()
					}
					run := func(tb testing.TB) { c.run(tb, s, cfg.New(t), uniqueKey(t)) }
					if reason, ok := cfg.Deviations[c.name]; ok {
						runDeviating(t, c, g.group, reason, run)
						return
					}
					run(t)
				})
			}
		})
	}
}

// checkDeviations fails t unless every declared deviation names a contract
// or liveness case and gives a reason.
func checkDeviations(t *testing.T, devs map[string]string) {
	t.Helper()
	for name, reason := range devs {
		g, ok := groupOf(name)
		switch {
		case !ok:
			t.Fatalf("storetest: Config.Deviations names %q, which is no case of the suite", name)
		case g == Safety || g == Uncertain || g == Policy:
			t.Fatalf("storetest: Config.Deviations names %q, a %s case: %s cases admit no deviation", name, g, g)
		case strings.TrimSpace(reason) == "":
			t.Fatalf("storetest: Config.Deviations gives no reason for %q", name)
		}
	}
}

func uniqueKey(t testing.TB) string {
	name := strings.NewReplacer(" ", "_", "/", ".").Replace(t.Name())
	if len(name) > 180 {
		name = name[len(name)-180:]
	}
	return fmt.Sprintf("st.%s.%x", name, rand.Uint64())
}

func fp(s string) idem.Fingerprint { return idem.FingerprintString(s) }

func bg() context.Context { return context.Background() }

// callTimeout bounds each call MustAcquire and MustRecord make, so that a
// server that stopped answering fails the test instead of hanging it.
const callTimeout = 30 * time.Second

// MustAcquire calls st.Acquire and fails t unless a lease, and no record,
// comes back. Store tests outside the suite use it too.
func MustAcquire(t testing.TB, st idem.Store, key string, f idem.Fingerprint, ttl time.Duration) *idem.Lease {
	t.Helper()
	l, rec := acquire(t, st, key, f, ttl)
	if l == nil || rec != nil {
		t.Fatalf("Acquire(%q): lease %+v, record %+v; want a lease only", key, l, rec)
	}
	return l
}

// MustRecord calls st.Acquire and fails t unless the key's existing
// record, and no lease, comes back.
func MustRecord(t testing.TB, st idem.Store, key string, f idem.Fingerprint, ttl time.Duration) *idem.Record {
	t.Helper()
	l, rec := acquire(t, st, key, f, ttl)
	if l != nil || rec == nil {
		t.Fatalf("Acquire(%q): lease %+v, record %+v; want the existing record only", key, l, rec)
	}
	return rec
}

// acquire calls st.Acquire within callTimeout and fails t on an error.
func acquire(t testing.TB, st idem.Store, key string, f idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	l, rec, err := st.Acquire(ctx, key, f, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return l, rec
}

func mustGet(t testing.TB, st idem.Store, key string) *idem.Record {
	t.Helper()
	rec, err := st.Get(bg(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return rec
}

func sampleResponse(tag string) idem.Response {
	return idem.Response{
		Status: 201,
		Header: map[string][]string{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}},
		Body:   []byte(`{"id":"` + tag + "\"}\x00\xff"),
	}
}

func sameResponse(t testing.TB, got *idem.Response, want idem.Response) {
	t.Helper()
	if got == nil {
		t.Fatalf("response is nil, want %+v", want)
	}
	if !got.Equal(&want) {
		t.Fatalf("response = %+v, want %+v", *got, want)
	}
}
