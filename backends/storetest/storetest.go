// Package storetest is the conformance suite every idem.Store runs: the
// memory, Redis and PostgreSQL backends, and the deliberately broken designs
// of backends/naive (which must fail it).
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Config{New: newStore, Corrupt: corrupt})
//	}
//
// Each case is named after the property it proves.
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
}

// suite is the running state shared by the cases.
type suite struct {
	cfg Config
	ttl time.Duration // a lease TTL the suite can wait out
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

type testCase struct {
	name string
	run  func(t *testing.T, s *suite, st idem.Store, key string)
}

// Run runs every case of the suite against cfg.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("storetest: Config.New is nil")
	}
	s := &suite{cfg: cfg, ttl: 10 * time.Second}
	if cfg.Advance == nil {
		s.ttl = 400 * time.Millisecond
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			if cfg.Advance == nil {
				t.Parallel()
			}
			c.run(t, s, cfg.New(t), uniqueKey(t))
		})
	}
}

func uniqueKey(t *testing.T) string {
	name := strings.NewReplacer(" ", "_", "/", ".").Replace(t.Name())
	if len(name) > 180 {
		name = name[len(name)-180:]
	}
	return fmt.Sprintf("st.%s.%x", name, rand.Uint64())
}

func fp(s string) idem.Fingerprint { return idem.FingerprintString(s) }

func bg() context.Context { return context.Background() }

func mustAcquire(t *testing.T, st idem.Store, key string, f idem.Fingerprint, ttl time.Duration) *idem.Lease {
	t.Helper()
	l, rec, err := st.Acquire(bg(), key, f, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	if l == nil {
		t.Fatalf("Acquire(%q): got record %+v, want a lease", key, rec)
	}
	if rec != nil {
		t.Fatalf("Acquire(%q): both lease and record returned", key)
	}
	return l
}

func mustRecord(t *testing.T, st idem.Store, key string, f idem.Fingerprint, ttl time.Duration) *idem.Record {
	t.Helper()
	l, rec, err := st.Acquire(bg(), key, f, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	if l != nil {
		t.Fatalf("Acquire(%q): got lease token %d, want the existing record", key, l.Token)
	}
	if rec == nil {
		t.Fatalf("Acquire(%q): neither lease nor record", key)
	}
	return rec
}

func mustGet(t *testing.T, st idem.Store, key string) *idem.Record {
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

func sameResponse(t *testing.T, got *idem.Response, want idem.Response) {
	t.Helper()
	if got == nil {
		t.Fatalf("response is nil, want %+v", want)
	}
	if !got.Equal(&want) {
		t.Fatalf("response = %+v, want %+v", *got, want)
	}
}
