package workload

import (
	"fmt"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Defaults used when a Config field is zero.
const (
	DefaultClients      = 16
	DefaultLateAfter    = time.Millisecond
	DefaultBackoff      = 5 * time.Millisecond
	DefaultMaxBackoff   = 200 * time.Millisecond
	DefaultDrainTimeout = 10 * time.Second
	DefaultKeyPrefix    = "k"
	DefaultZipfS        = 1.1
)

// Config describes one run. The zero value is not runnable: Duration, Store
// and Sink are required.
type Config struct {
	// Seed fixes every random choice of the workload.
	Seed int64
	// Duration is how long new requests are sent. Required, > 0, unless
	// Requests is set; then it is an optional upper bound.
	Duration time.Duration
	// Requests, when > 0, ends the traffic after this many logical
	// requests (their copies and retries come on top, and every copy is
	// still delivered): a count-bounded run, as a broker publisher sends
	// a fixed number of messages. The clients of a closed loop share them
	// evenly, so the keys' numbers are exactly 1 to Requests with unique
	// keys. At most MaxRequests.
	Requests int64
	// Clients is the number of concurrent clients (closed loop) or the
	// number of workers that send paced requests (open loop). Zero means
	// DefaultClients.
	Clients int
	// Rate, when > 0, makes the run open-loop at Rate requests per second
	// (all clients together; copies of a request come on top).
	Rate float64
	// LateAfter is how far behind its intended time an open-loop send may
	// start before it counts as late. Zero means DefaultLateAfter.
	LateAfter time.Duration
	// DrainTimeout bounds the drain phase: retries stop being scheduled
	// once it has passed since the end of traffic. Zero means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration

	Keys     Keys
	Retry    Retry
	Business Business
	Engine   EngineSettings
	// Completer runs background completers during the run; the zero
	// value runs none.
	Completer Completer

	// Target, when set, is what every attempt does instead of an
	// Engine.Do call on Store (an HTTP service, say): the run then needs
	// no Store or Sink, and Batch, Engine.Recovery and Completer must be
	// zero. The driver is the same: keys, copies, pacing, retries, drain
	// and the choice of keys to probe.
	Target Target
	// Store is the backend under test. Required unless Target is set.
	Store idem.Store
	// StoreClock is the store's clock, used for the probe's one-lease-TTL
	// wait: when it has an Advance(time.Duration) method (a manual clock)
	// it is advanced, otherwise the probe sleeps. Nil means the wall clock.
	StoreClock idem.Clock
	// Sink receives the side effects. Required.
	Sink Sink
	// Faults injects faults; nil means none.
	Faults Faults
	// Recorder receives the history's operations; nil means a new one,
	// returned in Result.
	Recorder *history.Recorder
	// Live, when set, observes the latency of every call as it returns
	// (from its intended send time in an open-loop run; a call the client
	// gave up on counts with the client timeout), for a progress display.
	Live *LiveLatency
	// Now reads the run's timeline; nil means history.Now.
	Now func() int64
	// ClientBase offsets the ids of the clients (in the history and in
	// execution ids) but not the keys they draw: the worker processes of
	// one run give each a different base and the same Seed and Prefix, so
	// they deliver the same keys, concurrently, from different processes.
	ClientBase int
	// Batch, when above 1, makes every client a consumer that pulls up to
	// Batch deliveries at a time (duplicates and delayed copies included,
	// so a key can come twice in one batch) and sends them with one
	// Engine.DoBatch call; the deliveries without a final answer are sent
	// again in its next batch, after the backoff. Zero or 1 means one Do
	// call per delivery. A batch run has no client timeout (Retry.Timeout
	// must be zero) and no transactional sink.
	Batch int
	// NoProbe skips the end-of-run liveness probe (not for verdicts: I6
	// cannot be checked without it).
	NoProbe bool
}

// Keys shapes the keys and the deliveries of logical requests.
type Keys struct {
	// Dist is "unique" (the default: a fresh key per logical request) or
	// "zipf" (keys drawn from Space keys with a Zipf law: hot keys).
	Dist string
	// Space is the number of distinct keys for "zipf". Required there.
	Space int
	// ZipfS is the Zipf exponent s (> 1). Zero means DefaultZipfS.
	ZipfS float64
	// Concurrent is the number of extra copies of each logical request
	// delivered at once, by other clients.
	Concurrent int
	// Delayed is the number of extra copies delivered later, the i-th one
	// i*Delay after the original.
	Delayed int
	// Delay is the gap between delayed copies. Required when Delayed > 0.
	Delay time.Duration
	// DupFraction is the fraction of logical requests that get the extra
	// copies. Zero means all of them.
	DupFraction float64
	// MismatchRate is the fraction of deliveries that reuse their key with
	// a different request body (a correct engine answers 422).
	MismatchRate float64
	// Prefix starts every key; use a fresh one per run on a persistent
	// backend. Zero means DefaultKeyPrefix.
	Prefix string
}

// Retry is the client's policy.
type Retry struct {
	// MaxAttempts is how many calls one delivery may make. Zero means 1.
	MaxAttempts int
	// Timeout is the per-call timeout: when it passes the client gives up
	// on the call (recorded as unknown; the call itself goes on, as a
	// server would) and may retry at once, concurrently with it. Zero
	// means none.
	Timeout time.Duration
	// Backoff is the wait before the second attempt, doubling per attempt
	// up to MaxBackoff. Zero means DefaultBackoff; negative means none.
	Backoff time.Duration
	// MaxBackoff caps the wait. Zero means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Jitter, in [0, 1], is the fraction of each wait that is random.
	Jitter float64
}

// Business is the business function behind every key.
type Business struct {
	// Latency is how long the function works before its effect.
	Latency Latency
	// RetryableRate is the fraction of executions that fail with a
	// retryable error (no effect; the engine releases the key).
	RetryableRate float64
	// PermanentRate is the fraction that fail permanently (no effect; the
	// engine stores the failure, which is replayed).
	PermanentRate float64
	// AmbiguousRate is the fraction that apply their effect and then
	// cannot tell it (the provider's answer was lost): the function
	// returns an error marked idem.MarkAmbiguous. Without a recovery hook
	// the engine records the key uncertain.
	AmbiguousRate float64
}

// Latency is a distribution of durations.
type Latency struct {
	// Dist is "" or "none" (zero), "fixed" (Mean), "uniform" ([Min, Max])
	// or "exponential" (Min plus an exponential with mean Mean-Min, capped
	// at Max when Max > 0).
	Dist     string
	Mean     time.Duration
	Min, Max time.Duration
}

// EngineSettings are the settings of the idem.Engine a run drives: its
// lease, heartbeat, conflict wait, retention and recovery hook.
type EngineSettings struct {
	// LeaseTTL is the lease length; zero means idem.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Heartbeat is the renewal interval: zero means LeaseTTL/3, negative
	// turns the heartbeat off.
	Heartbeat time.Duration
	// ConflictWait makes a call on a key in progress wait up to this long
	// for the holder's answer instead of returning 409 at once.
	ConflictWait time.Duration
	// Retention is how long answers are kept; zero means the engine default.
	Retention time.Duration
	// Recovery installs the engine's recovery hook, answered by the sink.
	// It needs a Sink that implements Recoverer; with another sink it is an
	// error.
	Recovery bool
	// ClockSkew, when positive, is the clock-skew fault: the clients' calls
	// go to app servers (up to 16, clients shared round robin), each an
	// engine whose clock is off the wall clock by an offset drawn from the
	// seed in [-ClockSkew, +ClockSkew], passed to the store through
	// idem.Clock when the store judges leases by the app server's clock
	// (ClockView). Not with a transactional sink or batches (they use one
	// engine on the wall clock).
	ClockSkew time.Duration
}

// Faults is an in-process fault injector (chaos.Injector implements it).
type Faults interface {
	// Start is called when traffic starts; fault windows count from here.
	Start()
	// Hook returns the engine fault hook, or nil.
	Hook() idem.Hook
	// ForcedFailure returns a non-nil error when the execution of l must
	// fail (retryably) before its effect.
	ForcedFailure(l idem.Lease) error
	// Stop disarms the injector; called once traffic has drained, before
	// the liveness probe.
	Stop()
}

// ErrConfig wraps every configuration error of the package.
var ErrConfig = checker.Classed("workload: invalid configuration", checker.ErrUsage)

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Check validates the shape of cfg (everything but Store, Sink, Faults,
// Recorder and Now) against the rules of each field and the limits
// (MaxClients and the others) and returns it with defaults filled in.
// Errors wrap ErrConfig; an error about one field is a *FieldError naming
// it.
func Check(cfg Config) (Config, error) {
	return cfg.shape()
}

// withDefaults validates c for a run and returns it with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if c.Target != nil {
		return c.targetDefaults()
	}
	switch {
	case c.Store == nil:
		return c, configErr("no store")
	case c.Sink == nil:
		return c, configErr("no effect sink")
	}
	c, err := c.shape()
	if err != nil {
		return c, err
	}
	if c.Now == nil {
		c.Now = history.Now
	}
	if c.Engine.Recovery {
		if _, ok := c.Sink.(Recoverer); !ok {
			return c, configErr("recovery needs a sink that can look effects up; %q cannot", c.Sink.Name())
		}
	}
	if _, tx := c.Sink.(TxSink); tx && c.Batch > 1 {
		return c, fieldErr("batch", "%d needs a sink that is not transactional (%q runs its own transaction per call)", c.Batch, c.Sink.Name())
	}
	if err := c.Completer.checkRun(&c); err != nil {
		return c, err
	}
	return c, nil
}

// targetDefaults validates c for a run on its own Target.
func (c Config) targetDefaults() (Config, error) {
	switch {
	case c.Batch > 1:
		return c, fieldErr("batch", "%d needs the engine target: a batch is one Engine.DoBatch call", c.Batch)
	case c.Engine.Recovery:
		return c, fieldErr("engine.recovery", "needs the engine target")
	case c.Completer.Count > 0:
		return c, fieldErr("completer", "needs the engine target")
	}
	c, err := c.shape()
	if err != nil {
		return c, err
	}
	if c.Now == nil {
		c.Now = history.Now
	}
	return c, nil
}

func (c Config) shape() (Config, error) {
	if err := c.limits(); err != nil {
		return c, err
	}
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.LateAfter <= 0 {
		c.LateAfter = DefaultLateAfter
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Engine.LeaseTTL <= 0 {
		c.Engine.LeaseTTL = idem.DefaultLeaseTTL
	}
	if c.Batch > 1 && c.Retry.Timeout > 0 {
		return c, fieldErr("batch", "%d cannot be combined with retry.timeout %s: a consumer waits for its whole batch", c.Batch, c.Retry.Timeout)
	}
	if c.Engine.Heartbeat > 0 && c.Engine.Heartbeat >= c.Engine.LeaseTTL {
		return c, fieldErr("engine.heartbeat", "interval %s not below the lease TTL %s", c.Engine.Heartbeat, c.Engine.LeaseTTL)
	}
	var err error
	if c.Keys, err = c.Keys.withDefaults(); err != nil {
		return c, err
	}
	if c.Retry, err = c.Retry.withDefaults(); err != nil {
		return c, err
	}
	if err = c.Business.validate(); err != nil {
		return c, err
	}
	return c, nil
}

func (k Keys) withDefaults() (Keys, error) {
	switch k.Dist {
	case "", "unique":
		k.Dist = "unique"
	case "zipf":
		if k.Space <= 0 {
			return k, fieldErr("keys.space", "zipf needs a positive space")
		}
		if k.ZipfS == 0 {
			k.ZipfS = DefaultZipfS
		}
		if k.ZipfS <= 1 {
			return k, fieldErr("keys.zipf_s", "zipf exponent %g must be > 1", k.ZipfS)
		}
	default:
		return k, fieldErr("keys.dist", "unknown distribution %q (want unique or zipf)", k.Dist)
	}
	if k.Delayed > 0 && k.Delay <= 0 {
		return k, fieldErr("keys.delay", "delayed copies need a positive delay")
	}
	if k.DupFraction == 0 {
		k.DupFraction = 1
	}
	if k.Prefix == "" {
		k.Prefix = DefaultKeyPrefix
	}
	if p := keyProblem(k.Prefix); p != "" {
		return k, fieldErr("keys.prefix", "%s", p)
	}
	return k, nil
}

func (r Retry) withDefaults() (Retry, error) {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = 1
	}
	if r.Backoff == 0 {
		r.Backoff = DefaultBackoff
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = DefaultMaxBackoff
	}
	return r, nil
}

func (b Business) validate() error {
	if b.RetryableRate+b.PermanentRate+b.AmbiguousRate > 1 {
		return fieldErr("business.permanent_rate", "failure rates must sum to at most 1 (retryable_rate %g + permanent_rate %g + ambiguous_rate %g)",
			b.RetryableRate, b.PermanentRate, b.AmbiguousRate)
	}
	return b.Latency.validate()
}

func (l Latency) validate() error {
	switch l.Dist {
	case "", "none", "fixed":
	case "uniform":
		if l.Max < l.Min {
			return fieldErr("business.latency.max", "uniform max %s below min %s", l.Max, l.Min)
		}
	case "exponential":
		if l.Mean < l.Min {
			return fieldErr("business.latency.mean", "exponential mean %s below min %s", l.Mean, l.Min)
		}
		if l.Max > 0 && l.Max < l.Min {
			return fieldErr("business.latency.max", "exponential max %s below min %s", l.Max, l.Min)
		}
	default:
		return fieldErr("business.latency.dist", "unknown distribution %q (want none, fixed, uniform or exponential)", l.Dist)
	}
	return nil
}
