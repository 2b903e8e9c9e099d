// Package testenv finds the servers that integration tests run against
// (Redis, PostgreSQL, RabbitMQ, NATS), and holds what tests of several
// packages share (consumer.go: the broker adapters' effects, counting
// store and Handle cases).
//
// For each server, in order:
//  1. the environment variable (IDEM_REDIS_URL, IDEM_POSTGRES_URL) is used
//     when set;
//  2. else, when a Docker engine answers, a container is started once per test
//     binary with testcontainers-go (removed by its reaper at exit);
//  3. else the test is skipped with a message naming the variable, unless
//     IDEM_REQUIRE_BACKENDS=1, where a missing server fails the test. CI sets
//     it, so CI never skips a backend.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Environment variables read by this package.
const (
	RedisEnv    = "IDEM_REDIS_URL"
	PostgresEnv = "IDEM_POSTGRES_URL"
	RequireEnv  = "IDEM_REQUIRE_BACKENDS"
)

// Images started when Docker is available; they match docker-compose.yml.
const (
	RedisImage    = "redis:7-alpine"
	PostgresImage = "postgres:16-alpine"
)

// Required reports whether a missing backend must fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// RedisURL returns a redis:// URL for tests, or skips or fails t.
func RedisURL(t testing.TB) string {
	t.Helper()
	return find(t, RedisEnv, &redisBox)
}

// PostgresURL returns a postgres:// URL for tests, or skips or fails t.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return find(t, PostgresEnv, &postgresBox)
}

// container is a server started once per test binary.
type container struct {
	once  sync.Once
	url   string
	err   error
	start func(ctx context.Context) (string, error)
}

var (
	redisBox    = container{start: startRedis}
	postgresBox = container{start: startPostgres}
)

func find(t testing.TB, env string, box *container) string {
	t.Helper()
	if u := os.Getenv(env); u != "" {
		return u
	}
	box.once.Do(func() {
		if !dockerAvailable() {
			box.err = fmt.Errorf("%s is not set and no Docker engine answers", env)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		box.url, box.err = box.start(ctx)
	})
	if box.err != nil {
		if Required() {
			t.Fatalf("backend required (%s=1) but unavailable: %v", RequireEnv, box.err)
		}
		t.Skipf("skipping: %v (set %s to run this test)", box.err, env)
	}
	return box.url
}

func dockerAvailable() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Health(ctx) == nil
}

func startRedis(ctx context.Context) (string, error) {
	c, err := testcontainers.Run(ctx, RedisImage,
		testcontainers.WithExposedPorts("6379/tcp"),
		testcontainers.WithCmd("redis-server", "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("6379/tcp")),
	)
	if err != nil {
		return "", fmt.Errorf("start redis container: %w", err)
	}
	ep, err := c.PortEndpoint(ctx, "6379/tcp", "")
	if err != nil {
		return "", err
	}
	return "redis://" + ep + "/0", nil
}

func startPostgres(ctx context.Context) (string, error) {
	c, err := testcontainers.Run(ctx, PostgresImage,
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithEnv(map[string]string{
			"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": "postgres", "POSTGRES_DB": "test",
		}),
		testcontainers.WithWaitStrategy(wait.ForLog("database system is ready to accept connections").WithOccurrence(2)),
	)
	if err != nil {
		return "", fmt.Errorf("start postgres container: %w", err)
	}
	ep, err := c.PortEndpoint(ctx, "5432/tcp", "")
	if err != nil {
		return "", err
	}
	return "postgres://postgres:postgres@" + ep + "/test?sslmode=disable", nil
}

// Environment variables of the message brokers. Brokers are never started
// in Docker: a test finds them through these variables or skips (fails
// under IDEM_REQUIRE_BACKENDS=1).
const (
	AMQPEnv = "IDEM_AMQP_URL"
	NATSEnv = "IDEM_NATS_URL"
)

// AMQPURL returns the amqp:// URL of a RabbitMQ server for tests (for
// example amqp://guest:guest@127.0.0.1:5672/), or skips or fails t.
func AMQPURL(t testing.TB) string {
	t.Helper()
	return fromEnv(t, AMQPEnv)
}

// NATSURL returns the nats:// URL of a NATS server with JetStream enabled
// for tests (for example nats://127.0.0.1:4222), or skips or fails t.
func NATSURL(t testing.TB) string {
	t.Helper()
	return fromEnv(t, NATSEnv)
}

// fromEnv returns the value of env, or skips t with a message naming env,
// or fails it when IDEM_REQUIRE_BACKENDS=1.
func fromEnv(t testing.TB, env string) string {
	t.Helper()
	if u := os.Getenv(env); u != "" {
		return u
	}
	if Required() {
		t.Fatalf("backend required (%s=1) but unavailable: %s is not set", RequireEnv, env)
	}
	t.Skipf("skipping: %s is not set (set it to run this test)", env)
	return ""
}

// SparseFile returns the path of a new file of size bytes (a hole, so it
// costs no disk) in t's temporary directory: input that a size limit must
// refuse before reading it.
func SparseFile(t testing.TB, name string, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return path
}
