package workload

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/idembench/idembench/history"
)

// Target is what one attempt of a delivery does. The driver decides what
// is sent, when and how often: the keys and their numbers, the copies of a
// logical request, the pacing (closed or open loop), the retries with their
// backoff, the drain, and which keys the liveness probe calls. A Target
// sends one attempt and says how it ended. The engine in this process,
// driven through Config.Store and Config.Sink, is the Target of a run that
// sets none; an HTTP service is another (package blackbox), so that one
// scenario makes the same traffic under both.
//
// A Target is called from many goroutines at once.
type Target interface {
	// Attempt makes one attempt and returns its call, with at least Call,
	// Return and Outcome set (Return history.NoReturn when the answer is
	// unknown); the driver fills in Kind, Client, Worker, Key, Request,
	// Attempt and Intended from a, and records it. final reports whether
	// the client stops: it got an answer it does not retry. Attempt
	// returns by a.Timeout when that is positive, recording an unknown
	// outcome then, or sooner when ctx ends.
	Attempt(ctx context.Context, a *Attempt) (op history.Op, final bool)
	// Probe is the liveness probe: once traffic has drained and the
	// faults have stopped, it calls every key of keys (sorted by key) and
	// records each call itself, with Probe set. A key is probed because a
	// delivery of it ended without a final answer or saw an unknown
	// outcome, or as a client's last key. It returns when every key was
	// called, or with ctx's error when ctx ends first.
	Probe(ctx context.Context, keys []ProbeKey) error
}

// Attempt is one attempt of a delivery, as the driver hands it to a Target.
type Attempt struct {
	// Key is the idempotency key; Seq is its number in the run, from 1
	// (a Zipf key's rank plus one).
	Key string
	Seq int64
	// Request is the logical request's id, shared by its copies and
	// retries.
	Request int64
	// Mismatch marks a delivery that reuses its key with another request
	// body than the key's first (a correct service answers 422).
	Mismatch bool
	// N is the attempt's number within its delivery, from 1.
	N int
	// Client is the client that sends it, as recorded in the history.
	Client int
	// Calls counts the attempts this client has made, this one included:
	// with Client it names an execution.
	Calls int64
	// Intended is the open-loop send time of a first attempt on the run's
	// timeline; zero otherwise.
	Intended int64
	// Timeout is the client timeout (Retry.Timeout); zero means none.
	Timeout time.Duration
	// Rand is the client's per-call random stream, for draws that must
	// stay on the seed (the engine target's business latency and
	// failures). Only the attempt's own goroutine may use it, and only
	// before Attempt returns.
	Rand *rand.Rand
}

// ProbeKey is one key the liveness probe calls.
type ProbeKey struct {
	Key string
	Seq int64
}
