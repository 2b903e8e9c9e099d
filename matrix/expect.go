package matrix

import "github.com/idembench/idembench/chaos/backendfault"

// rule is one entry of the theory: where the configurations, the fault
// and the variant match (an empty list or string matches all), the cell is
// expected unsafe; ByChance says whether finding it needs the fault to hit
// a narrow window. A cell no rule matches is expected safe.
type rule struct {
	configs  []Config
	fault    Fault
	variants []string // empty: every variant
	byChance bool
	why      string
}

var noRecovery = []Config{Plain, Fenced}

// unsafeCells is the safety matrix of docs/design/verification.md, corrected by
// measurement, with its backend-restart column spelled out.
var unsafeCells = []rule{
	{configs: noRecovery, fault: Crash,
		why: "the successor's newer token is accepted: only recovery or a transaction closes the window"},
	{configs: noRecovery, fault: Pause, variants: []string{Processes},
		why: "a worker stopped between its effect and its completion is a crash after the effect while it is stopped: the successor in another worker runs the effect again (aimed: the worker asks for its SIGSTOP at the hook after the effect)"},
	{configs: []Config{Plain}, fault: Pause,
		why: "the in-process stall pauses before the effect: a stalled holder's late effect is applied next to its successor's"},
	{configs: noRecovery, fault: Net,
		why: "a completion lost on the wire after the effect is a crash after the effect (aimed: a partition from the hook after the effect)"},
	{fault: Restart, variants: []string{RedisNone},
		why: "Redis without persistence forgets completions"},
	{configs: noRecovery, fault: Restart, variants: []string{RedisAOF, PostgresCrash},
		why: "a restart loses the completions in flight: a crash after the effect (aimed: a kill from the hook after the effect)"},
	{fault: Failover, variants: []string{string(backendfault.RedisSentinel), string(backendfault.PostgresAsync)},
		why: "asynchronous replication loses the acknowledged completion (and the token's step): the retry runs the effect again under the same token, and recovery finds no record"},
	{fault: Failover, variants: []string{string(backendfault.RedisCluster)},
		why: "a Cluster replica is asynchronous like a Sentinel one and takes over the dead primary's slots with what it had: the completion acknowledged within the lag is lost with the token's step, so the retry runs the effect again (WAIT, not measured here, is the same best effort as redis-wait)"},
	{configs: noRecovery, fault: Failover, variants: []string{string(backendfault.RedisWait), string(backendfault.PostgresSync)},
		why: "synchronous replication keeps what was acknowledged, so the failover is aimed at the window it leaves open: the primary dies right after an effect, the completion fails against it, and the promoted replica holds the claim in progress: a crash after the effect (aimed: kill from the hook after the effect, promotion 3s later)"},
}

// expect returns the expected verdict of a cell and whether an unsafe one
// is found only by chance: the first rule that matches decides.
func expect(config Config, fault Fault, variant string) (verdict string, byChance bool) {
	for _, r := range append(unsafeCells[:len(unsafeCells):len(unsafeCells)], brokerRules...) {
		if r.fault == fault && matches(r.configs, config) && matches(r.variants, variant) {
			return Unsafe, r.byChance
		}
	}
	return Safe, false
}

func matches[T comparable](list []T, v T) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// brokerRules are the consumer rows (brokers.go): a crash before the ack
// is a crash after the effect, and the broker redelivers the message.
var brokerRules = []rule{
	{configs: []Config{Plain, Fenced}, fault: CrashBeforeAck,
		why: "the redelivery takes the key over with a newer token and nothing tells it the effect happened: only recovery closes the window"},
	{configs: []Config{BrokerOnly}, fault: CrashBeforeAck,
		why: "at-least-once delivery: the redelivered message applies its effect again"},
	{configs: []Config{NaiveStore}, fault: CrashBeforeAck,
		why: "cache-on-success keeps no in-progress record: the redelivery is a fresh claim, not a take-over, so recovery is never asked"},
	{configs: []Config{BrokerOnly}, fault: Dup,
		why: "every duplicate publish applies its effect again"},
	{configs: []Config{NaiveStore}, fault: Dup,
		why: "cache-on-success keeps no in-progress record: two copies processed at once by two consumers both run (aimed: the first copy of 3 messages waits after its claim until the other copy was claimed)"},
}
