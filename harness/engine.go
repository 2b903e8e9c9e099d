package harness

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// Backend names the kind of server a store runs on.
type Backend string

// The backends the harness knows. A store factory decides which it
// supports.
const (
	Memory   Backend = "memory"
	Redis    Backend = "redis"
	Postgres Backend = "postgres"
	DynamoDB Backend = "dynamodb"
)

// Backends lists every Backend, in a fixed order.
var Backends = []Backend{Memory, Redis, Postgres, DynamoDB}

// Persistent reports whether the backend keeps keys across runs (the keys
// of a run then get a per-run prefix).
func (b Backend) Persistent() bool { return b != Memory }

// Env is what a store factory gets for one run (or one worker process of
// a run).
type Env struct {
	// Backend is the kind of server; URL is where it answers (empty for
	// Memory). With backend faults the URL is a private server's or a
	// proxy's, not the one the Spec named.
	Backend Backend
	URL     string
	// Prefix starts every key of this run (empty on Memory). A store may
	// use it to keep the run apart; the keys already carry it.
	Prefix string
	// Clock is the clock the store should use; nil means the wall clock.
	Clock idem.Clock
	// Warn reports a configuration problem the run goes on with (a Redis
	// that may evict keys); it is never nil in a factory call.
	Warn func(msg string)
}

// StoreFunc opens the store under test for env. The io.Closer, which may
// be nil, is closed after the run. An error that wraps ErrConfig is a
// configuration the engine does not support (a backend it cannot run on);
// any other error is an environment error.
type StoreFunc func(ctx context.Context, env Env) (idem.Store, io.Closer, error)

// TxSinkFunc opens the transactional sink of an engine (Postgres
// transactional mode: the effect commits with the completion) for env.
type TxSinkFunc func(ctx context.Context, env Env) (workload.TxSink, io.Closer, error)

// StoreFactory opens the store under test, by name: the reference
// engine's stores, a known-bad design, or a user's own idem.Store (what
// --engine selects). The CLI lists the stores it can run through this type
// alone; the engine that drives them is always idem.Engine.
type StoreFactory struct {
	// Name is what --engine selects ("idem", "naive/check-then-act").
	Name string
	// Backends lists the backends the engine runs on; empty means all.
	Backends []Backend
	// Open opens the store. Required.
	Open StoreFunc
	// OpenTxSink, when set, gives the engine a transactional mode (sink
	// "tx"); nil means the engine has none.
	OpenTxSink TxSinkFunc
	// Persistent says the store keeps its records across runs whatever the
	// backend (a user's store on its own server, run as backend memory):
	// every run then gets a per-run key prefix (Env.Prefix), as on Redis
	// and PostgreSQL.
	Persistent bool
	// Completer, when set, replaces the reference completer in scenarios
	// that run completers (workload.Completer.Pass): a completer of the
	// engine's own, or a known-bad one. Nil runs idem.Engine.RunCompleter.
	Completer workload.CompleterPass
	// Purge, when set, deletes what a run left on a persistent backend:
	// the keys (and effect ledgers) under env.Prefix. The harness calls it
	// at the end of a run unless Spec.KeepData is set; nil leaves the
	// run's data on the server.
	Purge PurgeFunc
}

// PurgeFunc deletes the data of the run whose keys start with env.Prefix
// from the server at env.URL.
type PurgeFunc func(ctx context.Context, env Env) error

// Supports reports whether e runs on b.
func (e StoreFactory) Supports(b Backend) bool {
	return len(e.Backends) == 0 || slices.Contains(e.Backends, b)
}

// Registry is a list of engines, looked up by name. The zero value is
// empty and ready to use; it is not safe for concurrent registration.
type Registry struct {
	engines []StoreFactory
}

// NewRegistry returns a registry holding engines, in order.
func NewRegistry(engines ...StoreFactory) (*Registry, error) {
	r := &Registry{}
	for _, e := range engines {
		if err := r.Register(e); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds e. An empty name, a nil Open or a name already taken is
// an error wrapping ErrConfig.
func (r *Registry) Register(e StoreFactory) error {
	switch {
	case e.Name == "" || e.Open == nil:
		return ConfigError("engine %q: a name and an Open function are required", e.Name)
	case slices.ContainsFunc(r.engines, func(x StoreFactory) bool { return x.Name == e.Name }):
		return ConfigError("engine %q registered twice", e.Name)
	}
	r.engines = append(r.engines, e)
	return nil
}

// Lookup returns the engine called name, or an error wrapping ErrConfig
// that lists the valid names.
func (r *Registry) Lookup(name string) (StoreFactory, error) {
	for _, e := range r.engines {
		if e.Name == name {
			return e, nil
		}
	}
	return StoreFactory{}, ConfigError("engine %q: want one of %s", name, strings.Join(r.Names(), ", "))
}

// Names lists the registered names, in registration order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.engines))
	for i, e := range r.engines {
		names[i] = e.Name
	}
	return names
}

// ParseBackend returns the Backend called s, or an error wrapping
// ErrConfig.
func ParseBackend(s string) (Backend, error) {
	if b := Backend(s); slices.Contains(Backends, b) {
		return b, nil
	}
	return "", ConfigError("backend %q: want memory, redis or postgres", s)
}

func (e StoreFactory) check(b Backend) error {
	if !e.Supports(b) {
		names := make([]string, len(e.Backends))
		for i, x := range e.Backends {
			names[i] = string(x)
		}
		return ConfigError("engine %s runs on backend %s only, not on %s", e.Name, strings.Join(names, ", "), b)
	}
	return nil
}
