package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/idembench/idembench/harness"
)

// The servers of the repository's docker-compose.yml: what --backend redis
// and --backend postgres try when neither a flag nor the environment names
// a server.
const (
	composeRedisURL    = "redis://127.0.0.1:6379/0"
	composePostgresURL = "postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable"
	envRedisURL        = "IDEM_REDIS_URL"
	envPostgresURL     = "IDEM_POSTGRES_URL"
	// DynamoDB has no flag: its endpoint comes from IDEM_DYNAMO_URL, else
	// the docker-compose.yml dynamodb-local service.
	composeDynamoURL = "http://127.0.0.1:8000"
	envDynamoURL     = "IDEM_DYNAMO_URL"
)

// backendURL is the server URL a run uses for a backend and where it came
// from, for the hint printed when the server does not answer.
type backendURL struct {
	url    string
	source string // "--redis-url", "IDEM_REDIS_URL", "the docker-compose.yml default", …
}

// resolveBackendURL picks the URL for backend (redis or postgres) from the
// flag values (kong fills them from the environment variables when the
// flags are absent), else the docker-compose default. The memory backend
// needs none.
func resolveBackendURL(backend, redisURL, postgresURL string) backendURL {
	var flag, env, def, value string
	switch harness.Backend(backend) {
	case harness.Redis:
		flag, env, def, value = "--redis-url", envRedisURL, composeRedisURL, redisURL
	case harness.Postgres:
		flag, env, def, value = "--postgres-url", envPostgresURL, composePostgresURL, postgresURL
	case harness.DynamoDB:
		flag, env, def, value = envDynamoURL, envDynamoURL, composeDynamoURL, os.Getenv(envDynamoURL)
	default:
		return backendURL{}
	}
	switch {
	case value == "":
		return backendURL{url: def, source: "the docker-compose.yml default (no " + flag + ", no " + env + ")"}
	case value == os.Getenv(env):
		return backendURL{url: value, source: env}
	}
	return backendURL{url: value, source: flag}
}

// withBackendHint adds to an environment error (exit 5) of a server backend
// that could not be reached what to run to get a server: the URL tried and where it came from, the
// docker compose command and the export lines. Other errors are returned
// as they are.
func withBackendHint(err error, backend string, u backendURL) error {
	if !errors.Is(err, harness.ErrEnvironment) || errors.Is(err, harness.ErrBackendDied) || u.url == "" {
		return err // a server that died during the run was up: the hint would not help
	}
	flag, env := "--redis-url", envRedisURL
	switch harness.Backend(backend) {
	case harness.Postgres:
		flag, env = "--postgres-url", envPostgresURL
	case harness.DynamoDB:
		flag, env = envDynamoURL, envDynamoURL
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n", err)
	fmt.Fprintf(&b, "  tried %s, from %s.\n", harness.RedactURL(u.url), u.source)
	b.WriteString("  To start local servers, from the repository root (docker-compose.yml):\n")
	b.WriteString("      docker compose up -d\n")
	fmt.Fprintf(&b, "      export %s=%s\n", envRedisURL, composeRedisURL)
	fmt.Fprintf(&b, "      export %s='%s'\n", envPostgresURL, composePostgresURL)
	if flag == env {
		fmt.Fprintf(&b, "      export %s=%s\n", envDynamoURL, composeDynamoURL)
		fmt.Fprintf(&b, "  or point %s at a running server.", env)
	} else {
		fmt.Fprintf(&b, "  or point %s (or %s) at a running server.", flag, env)
	}
	return harness.EnvironmentError(errors.New(b.String()))
}
