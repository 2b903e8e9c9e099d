package idem

import (
	"context"
	"errors"
)

// ConfigChecker is implemented by stores that can tell whether their
// server runs with a configuration under which records can be lost
// without an error (Redis evicting keys under memory pressure, PostgreSQL
// acknowledging commits before they are durable). A lost record lets a
// retry run the function again. Call it at start-up; refuse to start, or
// warn, as the service's policy says.
type ConfigChecker interface {
	// CheckConfig returns nil when the configuration keeps every record
	// it acknowledged, an error wrapping ErrUnsafeConfig that names the
	// setting otherwise, or another error when it could not check.
	CheckConfig(ctx context.Context) error
}

// ErrUnsafeConfig reports a store configuration under which acknowledged
// records can be lost silently.
var ErrUnsafeConfig = errors.New("idem: store configuration can lose records")
