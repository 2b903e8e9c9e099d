// Package simredis runs a Redis-backed store in the deterministic
// simulation (package sim): the store's real client code and its real Lua
// scripts run against an in-process Redis (github.com/alicebob/miniredis)
// connected over net.Pipe, inside the simulation's testing/synctest bubble,
// and every round trip of a store call is a scheduling point where the
// seed decides which simulated client goes next (sim.RoundTrip).
//
// For the production Redis store, in a test:
//
//	simtest.Run(t, simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) {
//		return redisstore.New(c, redisstore.Options{TakeoverGrace: time.Hour})
//	}))
//
// What miniredis models and what it does not (script atomicity, TIME and
// key expiry in virtual time, no memory limit, no replication or cluster)
// is in docs/design/simulation.md.
package simredis

import (
	"context"
	"net"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Server is an in-process Redis for one simulation: a miniredis that never
// listens on a socket (each client connection is one end of a net.Pipe)
// and whose clock is the bubble's: TIME answers virtual time and keys
// expire as virtual time passes.
type Server struct {
	M *miniredis.Miniredis
}

// NewServer starts a Server. Call it inside the simulation's bubble (an
// Opener runs there), so that its goroutines and its clock are the
// bubble's.
func NewServer() *Server {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true) // keys expire as the (virtual) clock advances
	return &Server{M: m}
}

// Client returns a go-redis client of s: it dials over net.Pipe, and its
// hook makes every command and every pipeline a scheduling point of the
// simulation (sim.RoundTrip). It sends no client name (miniredis does not
// know CLIENT SETINFO) and never retries a command (a round trip the
// client library repeats behind the store's back would be a second
// scheduling point the store did not ask for; on a pipe nothing fails).
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:            "127.0.0.1:6379", // never dialled: Dialer pipes to s
		Dialer:          func(context.Context, string, string) (net.Conn, error) { return s.M.Dial() },
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		PoolSize:        64,
		// No maintenance notifications: they resolve the address's host
		// name on a goroutine outside the bubble.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	c.AddHook(roundTrips{})
	return c
}

// Close closes the server and its connections.
func (s *Server) Close() { s.M.Close() }

// roundTrips is the go-redis hook that calls sim.RoundTrip before each
// command or pipeline sent.
type roundTrips struct{}

func (roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sim.RoundTrip(ctx, strings.ToLower(cmd.Name()))
		return next(ctx, cmd)
	}
}

func (roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sim.RoundTrip(ctx, "pipeline")
		return next(ctx, cmds)
	}
}

// Opener returns a sim.Opener that, for each simulation, starts a Server,
// connects one client to it and opens the store with open on that client;
// every app server shares the store (a Redis judges leases by its own
// clock). The client and the server are closed after the run.
func Opener(open func(client redis.UniversalClient) (idem.Store, error)) sim.Opener {
	return sim.SharedWithClose(func(idem.Clock) (idem.Store, func(), error) {
		srv := NewServer()
		c := srv.Client()
		st, err := open(c)
		if err != nil {
			c.Close()
			srv.Close()
			return nil, nil, err
		}
		return st, func() {
			c.Close()
			srv.Close()
		}, nil
	})
}
