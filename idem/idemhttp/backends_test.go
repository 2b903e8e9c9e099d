package idemhttp_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

// backendEnv selects the store behind newStore. The tests run on memstore;
// TestMiddlewareOnBackends re-runs this whole test binary with the variable
// set to redis and to postgres, so every middleware test also runs on the
// real servers.
const backendEnv = "IDEMHTTP_BACKEND"

// newStore returns the store for one test: memstore, or a Redis/PostgreSQL
// store whose keys carry a prefix unique to the test (the servers are
// shared and keep records for the whole retention).
func newStore(t *testing.T) idem.Store {
	t.Helper()
	switch b := os.Getenv(backendEnv); b {
	case "", "memory":
		s := memstore.New(memstore.Options{SweepInterval: -1})
		t.Cleanup(func() { s.Close() })
		return s
	case "redis":
		opt, err := redis.ParseURL(testenv.RedisURL(t))
		if err != nil {
			t.Fatal(err)
		}
		client := redis.NewClient(opt)
		t.Cleanup(func() { client.Close() })
		s, err := redisstore.New(client, redisstore.Options{Prefix: "idemhttp-test"})
		if err != nil {
			t.Fatal(err)
		}
		return prefixed(t, s)
	case "postgres":
		pool, err := pgxpool.New(context.Background(), testenv.PostgresURL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := pgstore.New(pool, pgstore.Options{Table: "idemhttp_test"})
		if err == nil {
			err = s.Migrate(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		return prefixed(t, s)
	default:
		t.Fatalf("%s=%q: want memory, redis or postgres", backendEnv, b)
		return nil
	}
}

// prefixStore gives each test its own key space on a shared server.
type prefixStore struct {
	idem.Store
	prefix string
}

func prefixed(t *testing.T, s idem.Store) idem.Store {
	return prefixStore{Store: s, prefix: fmt.Sprintf("t%x.", rand.Uint64())}
}

// key maps a test's key into its key space. A key too long for the prefix
// has its first bytes replaced, so that the length limit is tested as is.
func (s prefixStore) key(k string) string {
	if len(s.prefix)+len(k) > idem.MaxKeyLen && len(k) > len(s.prefix) {
		return s.prefix + k[len(s.prefix):]
	}
	return s.prefix + k
}

func (s prefixStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.Store.Acquire(ctx, s.key(key), fp, ttl)
}

func (s prefixStore) Get(ctx context.Context, key string) (*idem.Record, error) {
	return s.Store.Get(ctx, s.key(key))
}

func (s prefixStore) WaitChange(ctx context.Context, key string) error {
	if w, ok := s.Store.(idem.Waiter); ok {
		return w.WaitChange(ctx, s.key(key))
	}
	return nil
}

// TestMiddlewareOnBackends runs every test of this package against Redis
// and PostgreSQL, each in a child process of this test binary.
func TestMiddlewareOnBackends(t *testing.T) {
	if os.Getenv(backendEnv) != "" {
		t.Skip("already running on a chosen backend")
	}
	for _, backend := range []string{"redis", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			switch backend { // skip or fail here, as a test of the parent
			case "redis":
				testenv.RedisURL(t)
			case "postgres":
				testenv.PostgresURL(t)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^Test", "-test.count=1", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), backendEnv+"="+backend)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("middleware tests on %s: %v\n%s", backend, err, out)
			}
			if !strings.Contains(string(out), "PASS") {
				t.Fatalf("middleware tests on %s printed no PASS:\n%s", backend, out)
			}
		})
	}
}

func (s prefixStore) MarkUncertain(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.Store.(idem.UncertainStore).MarkUncertain(ctx, l, resp, retention)
}

func (s prefixStore) Resolve(ctx context.Context, key string, token idem.Token, applied *idem.Response, retention time.Duration) error {
	return s.Store.(idem.UncertainStore).Resolve(ctx, s.key(key), token, applied, retention)
}

func (s prefixStore) AcquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.Store.(idem.PolicyStore).AcquirePolicy(ctx, s.key(key), fp, policy, ttl)
}
