package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/idem"
)

// Backend and engine names accepted by --backend and --engine.
const (
	backendMemory   = "memory"
	backendRedis    = "redis"
	backendPostgres = "postgres"
	engineIdem      = "idem"
	naivePrefix     = "naive/"
)

// engineNames lists every valid --engine value.
func engineNames() []string {
	names := []string{engineIdem}
	for _, n := range naive.Names() {
		names = append(names, naivePrefix+n)
	}
	return names
}

// openedStore is a store ready for a run.
type openedStore struct {
	store idem.Store
	clock idem.Clock
	// persistent stores keep keys across runs: keys get a per-run prefix.
	persistent bool
	close      func()
}

// openStore builds the store for --backend and --engine. A bad name is a
// usage error; a backend that cannot be reached is an environment error.
func openStore(ctx context.Context, backend, engine, redisURL, postgresURL string) (*openedStore, error) {
	if name, ok := strings.CutPrefix(engine, naivePrefix); ok {
		if backend != backendMemory {
			return nil, usageErr("--engine %s is an in-memory design: use --backend memory", engine)
		}
		st, err := naive.New(name, nil)
		if err != nil {
			return nil, usageErr("--engine: %v", err)
		}
		return &openedStore{store: st, close: func() {}}, nil
	}
	if engine != engineIdem {
		return nil, usageErr("--engine %q: want one of %s", engine, strings.Join(engineNames(), ", "))
	}
	switch backend {
	case backendMemory:
		st := memstore.New(memstore.Options{})
		return &openedStore{store: st, close: func() { st.Close() }}, nil
	case backendRedis, backendPostgres:
		return nil, usageErr("--backend %s is not wired into this build yet (use --backend memory)", backend)
	}
	return nil, usageErr("--backend %q: want memory, redis or postgres", backend)
}

// describeBackend names the store for the history header.
func describeBackend(backend, engine string) string {
	if engine != engineIdem {
		return fmt.Sprintf("%s (%s)", engine, backend)
	}
	return backend
}
