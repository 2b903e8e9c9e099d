package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The servers of the repository's docker-compose.yml: what --backend redis
// and --backend postgres try when neither a flag nor the environment names
// a server.
const (
	composeRedisURL    = "redis://127.0.0.1:6379/0"
	composePostgresURL = "postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable"
	envRedisURL        = "IDEM_REDIS_URL"
	envPostgresURL     = "IDEM_POSTGRES_URL"
)

// backendURL is the server URL a run uses for a backend and where it came
// from, for the hint printed when the server does not answer.
type backendURL struct {
	url    string
	source string // "--redis-url", "IDEM_REDIS_URL", "the docker-compose.yml default", …
}

// resolveBackendURL picks the URL for backend (redis or postgres): the flag
// value (kong fills it from the environment variable when the flag is
// absent), else the docker-compose default. The memory backend needs none.
func resolveBackendURL(backend, flagValue string) backendURL {
	var flag, env, def string
	switch backend {
	case backendRedis:
		flag, env, def = "--redis-url", envRedisURL, composeRedisURL
	case backendPostgres:
		flag, env, def = "--postgres-url", envPostgresURL, composePostgresURL
	default:
		return backendURL{}
	}
	switch {
	case flagValue == "":
		return backendURL{url: def, source: "the docker-compose.yml default (no " + flag + ", no " + env + ")"}
	case flagValue == os.Getenv(env):
		return backendURL{url: flagValue, source: env}
	}
	return backendURL{url: flagValue, source: flag}
}

// withBackendHint adds to an environment error (exit 5) of a server backend
// what to run to get a server: the URL tried and where it came from, the
// docker compose command and the export lines. Other errors are returned
// as they are.
func withBackendHint(err error, backend string, u backendURL) error {
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitEnvironment || u.url == "" {
		return err
	}
	flag, env := "--redis-url", envRedisURL
	if backend == backendPostgres {
		flag, env = "--postgres-url", envPostgresURL
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n", ee.err)
	fmt.Fprintf(&b, "  tried %s, from %s.\n", redactURL(u.url), u.source)
	b.WriteString("  To start local servers, from the repository root (docker-compose.yml):\n")
	b.WriteString("      docker compose up -d\n")
	fmt.Fprintf(&b, "      export %s=%s\n", envRedisURL, composeRedisURL)
	fmt.Fprintf(&b, "      export %s='%s'\n", envPostgresURL, composePostgresURL)
	fmt.Fprintf(&b, "  or point %s (or %s) at a running server.", flag, env)
	return &exitError{code: exitEnvironment, err: errors.New(b.String())}
}

// resolveBackendURLs fills in the URL of sp's backend (see
// resolveBackendURL) and returns it with its source.
func resolveBackendURLs(sp *runSpec) backendURL {
	switch sp.Backend {
	case backendRedis:
		u := resolveBackendURL(sp.Backend, sp.RedisURL)
		sp.RedisURL = u.url
		return u
	case backendPostgres:
		u := resolveBackendURL(sp.Backend, sp.PostgresURL)
		sp.PostgresURL = u.url
		return u
	}
	return backendURL{}
}
