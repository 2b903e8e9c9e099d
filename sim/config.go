package sim

import (
	"fmt"
	"sync"
	"time"

	"github.com/idembench/idembench/idem"
)

// Opener opens the store one simulated app server uses. Run calls it once
// per app server, in order (app 0 first), inside the simulation's bubble,
// with that server's clock: true time plus the server's offset (the
// clock-skew fault). A store that lives in a shared server (the memory
// store, Redis, PostgreSQL) judges leases by the server's one clock: it
// returns the same instance for every app server and ignores appClock
// (Shared does this). A store whose client computes lease expiry itself
// takes appClock, as it would take the app server's system clock in
// production. A store that implements io.Closer is closed once after the
// run; SharedWithClose names something else to close.
type Opener func(app int, appClock idem.Clock) (store idem.Store, err error)

// ClockView is implemented by a store whose client judges leases by the
// clock of the app server it runs in (a client library over a plain
// key-value store): WithClock returns the view of the same records that an
// app server with clock sees.
type ClockView interface {
	WithClock(clock idem.Clock) idem.Store
}

// Shared returns an Opener that opens one store on the true clock with
// open and hands it to every app server; a store that implements
// ClockView hands each app server the view of its clock instead.
func Shared(open func(trueClock idem.Clock) (idem.Store, error)) Opener {
	var st idem.Store
	return func(app int, appClock idem.Clock) (idem.Store, error) {
		if app == 0 || st == nil {
			s, err := open(idem.SystemClock{})
			if err != nil {
				return nil, err
			}
			st = s
		}
		if v, ok := st.(ClockView); ok {
			return v.WithClock(appClock), nil
		}
		return st, nil
	}
}

// SharedWithClose is Shared for a store that needs something closed after
// the run, inside the simulation's bubble (a client, an in-process
// server: a goroutine left running would keep the bubble from ending):
// open returns it as close, and Run calls it once, after every engine is
// closed.
func SharedWithClose(open func(trueClock idem.Clock) (idem.Store, func(), error)) Opener {
	var st idem.Store
	return func(app int, appClock idem.Clock) (idem.Store, error) {
		if app == 0 || st == nil {
			s, closeFn, err := open(idem.SystemClock{})
			if err != nil {
				return nil, err
			}
			st = s
			if v, ok := st.(ClockView); ok {
				s = v.WithClock(appClock)
			}
			if closeFn != nil {
				closeAfter.Store(s, closeFn)
			}
			return s, nil
		}
		if v, ok := st.(ClockView); ok {
			return v.WithClock(appClock), nil
		}
		return st, nil
	}
}

// closeAfter maps a store an Opener returned to what Run must call after
// the run (SharedWithClose).
var closeAfter sync.Map

// Faults sets how often each fault is drawn. Every probability is per
// attempt (one Engine.Do call) and drawn from the seed.
type Faults struct {
	// Crash abandons the execution at a fault point, drawn uniformly from
	// after-acquire, before-fn, after-fn and after-complete: its lease
	// stays until it expires.
	Crash float64
	// Pause stalls the execution before its function or after it (the
	// heartbeat is not running there) for a duration drawn between
	// PauseMin and PauseMax.
	Pause              float64
	PauseMin, PauseMax time.Duration
	// LostReply lets one store call of the attempt (its Acquire, or the
	// Complete, Fail or Release that records its outcome) reach the store
	// and take effect, then drops the reply: the engine gets an ambiguous
	// backend error.
	LostReply float64
	// SlowRenewal is the probability that the first lease renewal of an
	// execution stalls between LeaseTTL/2 and 1.5 LeaseTTL before it is
	// sent (a stop-the-world pause of the renewal path), so that it may
	// reach the store after the lease expired and was taken over. It is
	// applied only where the function still runs when the stall ends
	// (see gatedStore.Heartbeat).
	SlowRenewal float64
	// Copies is the probability that an attempt is sent twice (a client
	// or a proxy duplicating it): half the copies at the same instant, the
	// others within CopyGap.
	Copies  float64
	CopyGap time.Duration
	// Mismatch is the probability that a client, once a request got its
	// answer, sends a different request under the same key.
	Mismatch float64
	// RoundTripStall is the probability that one round trip of the
	// attempt's write that records its outcome (its first or its second,
	// drawn) is held between LeaseTTL/2 and 1.5 LeaseTTL before it is
	// sent: a stop-the-world pause or a network stall inside the store
	// call, so the lease may expire and be taken over between two round
	// trips of one call. Only stores whose calls make round trips through
	// RoundTrip (sim/simredis) see it; the stall is recorded when it
	// happens.
	RoundTripStall float64
	// ClockSkew is the largest offset of an app server's clock from true
	// time; each app server draws its offset uniformly in [-ClockSkew,
	// +ClockSkew]. Zero: every clock is true.
	ClockSkew time.Duration
	// Uncertain is the probability that the business function's call to
	// its provider ends without an answer (the provider's reply is lost):
	// the effect happened or not, drawn half and half, and the function
	// cannot tell, so it returns an error marked idem.MarkAmbiguous. An
	// app server with a recovery hook leaves the key in progress for a
	// take-over to ask the hook; one without (Config.NoRecovery) records
	// the key uncertain, and it must stay held until an operator
	// resolves it (I9).
	Uncertain float64
	// LostRequest is the share of the lost store calls (LostReply) whose
	// request, not their reply, was lost: the call never reached the
	// store and the engine gets the same ambiguous error. The engine
	// cannot tell the two apart; the store must be right either way.
	LostRequest float64
}

// Config is one simulation. The zero value is not runnable: start from
// Quick or Production and change what you need.
type Config struct {
	// Name names the configuration in reports ("quick", "production").
	Name string
	// Seed decides every choice of the run.
	Seed int64
	// Clients is the number of simulated clients; AppServers the number of
	// app servers (engines) their attempts are spread over (each attempt
	// to one the seed picks).
	Clients, AppServers int
	// Duration is how long clients send new requests, in virtual time.
	// Retries of requests already sent continue after it.
	Duration time.Duration
	// Interval is the mean time between two requests of one client
	// (exponentially distributed).
	Interval time.Duration
	// Work is the mean duration of the business function (exponential);
	// LongWork the probability of a long one, drawn between LeaseTTL and
	// 3 LeaseTTL, that only a heartbeat keeps alive.
	Work     time.Duration
	LongWork float64
	// PermanentRate and RetryableRate are the business function's own
	// failures.
	PermanentRate, RetryableRate float64
	// MaxAttempts bounds a client's attempts per request; Backoff is the
	// first wait between attempts, doubled up to MaxBackoff (minus up to
	// half, drawn). Timeout is how long a client waits for one attempt
	// before it gives up on it (recorded as unknown) and retries while
	// the call goes on; zero waits for every call.
	MaxAttempts         int
	Backoff, MaxBackoff time.Duration
	Timeout             time.Duration
	// LeaseTTL, Retention and TakeoverGrace are the engine's and store's
	// timings. Heartbeat zero means LeaseTTL/3.
	LeaseTTL, Retention, TakeoverGrace, Heartbeat time.Duration
	// CompleterEvery is the completer's schedule (idem.RunCompleter);
	// zero: no completer. It runs only on stores with idem.Lister.
	CompleterEvery time.Duration
	// GCEvery is how often expired records are swept (idem.Sweeper);
	// zero: never, records expire lazily.
	GCEvery time.Duration
	// NoRecovery is how many app servers (the last ones; at most
	// AppServers-1, app server 0 runs the completer) run without a
	// recovery hook, as a deployment whose effects cannot be looked up
	// does: they record an ambiguous outcome of the function uncertain
	// (idem.UncertainStore) and record a take-over uncertain too
	// (idem.WithTakeOverUncertain), where the others take over and ask
	// the hook. It applies only to stores that implement
	// idem.UncertainStore; on others every app server has the hook.
	NoRecovery int
	// Faults are the faults drawn.
	Faults Faults
	// LivenessSlack is added to LeaseTTL for the take-over liveness
	// invariant (T2): a key may answer "in progress" at most LeaseTTL +
	// LivenessSlack after the last renewal of any of its leases.
	LivenessSlack time.Duration
	// ClockSlack is how much earlier than LeaseTTL after its last grant
	// or renewal T1 lets a lease be taken over: for a store that judges
	// lease expiry at a coarser resolution than the history's clock and
	// may end a lease early by up to that much. The shipped stores need
	// none (Quick sets none): redisstore reads TIME in whole
	// milliseconds but starts a lease from the rounded-up time.
	ClockSlack time.Duration
	// NoJSONL leaves Result.HistoryJSONL empty: a day of production
	// traffic encodes to hundreds of megabytes.
	NoJSONL bool
}

// Quick is the configuration the CI and the replay tests run: production
// timings (30 s leases, 24 h retention, 1 h take-over grace, a completer
// every minute) compressed to a few keys, 24 clients on 8 app servers for
// 20 simulated minutes, with every fault kind. Clients retry every 1-2 s
// for about a minute, past a lease TTL, so that a key left by a dead
// holder is retried across its lease's expiry (T1, T2).
func Quick(seed int64) Config {
	return Config{
		Name: "quick", Seed: seed,
		Clients: 24, AppServers: 8,
		Duration: 20 * time.Minute, Interval: 30 * time.Second,
		Work: 200 * time.Millisecond, LongWork: 0.02,
		PermanentRate: 0.02, RetryableRate: 0.02,
		MaxAttempts: 40, Backoff: 250 * time.Millisecond, MaxBackoff: 2 * time.Second, Timeout: 10 * time.Second,
		LeaseTTL: 30 * time.Second, Retention: 24 * time.Hour, TakeoverGrace: time.Hour,
		CompleterEvery: time.Minute, GCEvery: 10 * time.Minute,
		NoRecovery: 4,
		Faults: Faults{
			Crash: 0.05, Pause: 0.03, PauseMin: 10 * time.Second, PauseMax: 90 * time.Second,
			LostReply: 0.03, Copies: 0.2, CopyGap: 50 * time.Millisecond, Mismatch: 0.02,
			SlowRenewal: 0.5,
			ClockSkew:   time.Second,
			Uncertain:   0.03, LostRequest: 0.5,
			RoundTripStall: 0.1,
		},
		LivenessSlack: time.Second,
	}
}

// Production is the production-timings scenario: 1,000 clients on 10 app
// servers sending a request every 10 minutes each for 24 simulated hours,
// 30 s leases, 24 h retention, 1 h take-over grace, the completer every
// minute and expired records swept every 10 minutes, with every fault
// kind. Its history is not encoded (NoJSONL).
func Production(seed int64) Config {
	c := Quick(seed)
	c.Name = "production"
	c.Clients, c.AppServers = 1000, 10
	c.Duration, c.Interval = 24*time.Hour, 10*time.Minute
	c.NoJSONL = true
	return c
}

// validate reports the first setting Run cannot use.
func (c Config) validate() error {
	switch {
	case c.Clients < 1 || c.AppServers < 1:
		return fmt.Errorf("sim: need at least one client and one app server (got %d, %d)", c.Clients, c.AppServers)
	case c.Duration <= 0 || c.Interval <= 0:
		return fmt.Errorf("sim: Duration and Interval must be positive")
	case c.LeaseTTL <= 0 || c.Retention <= 0:
		return fmt.Errorf("sim: LeaseTTL and Retention must be positive")
	case c.MaxAttempts < 1:
		return fmt.Errorf("sim: MaxAttempts must be at least 1")
	case c.Faults.Pause > 0 && c.Faults.PauseMax < c.Faults.PauseMin:
		return fmt.Errorf("sim: PauseMax below PauseMin")
	case c.NoRecovery < 0 || c.NoRecovery >= c.AppServers:
		return fmt.Errorf("sim: NoRecovery %d: want 0 to AppServers-1 (%d): app server 0 runs the completer with the recovery hook", c.NoRecovery, c.AppServers-1)
	case c.Faults.Uncertain < 0 || c.Faults.Uncertain > 1 || c.Faults.LostRequest < 0 || c.Faults.LostRequest > 1 ||
		c.Faults.RoundTripStall < 0 || c.Faults.RoundTripStall > 1:
		return fmt.Errorf("sim: Faults.Uncertain, LostRequest and RoundTripStall must be in [0, 1]")
	}
	return nil
}
