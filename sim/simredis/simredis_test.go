package simredis_test

import (
	"flag"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/naive/naiveredis"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim"
	"github.com/idembench/idembench/sim/simredis"
	"github.com/idembench/idembench/sim/simtest"
	"github.com/redis/go-redis/v9"
)

var (
	flagSeeds = flag.Int("simredis.seeds", 0, "TestRaceInsideStoreCall, TestRedisReplayIdentical: how many seeds (0: the default of each)")
	flagStall = flag.Bool("simredis.stall", true, "TestRaceInsideStoreCall: with the stalled-round-trip fault (false measures what interleaving alone reaches; the test then fails)")
)

// config is the configuration of seed: sim.Quick, with 5 minutes of
// traffic instead of 20 in the quick forms (-race, -short), where a seed on
// miniredis costs about 20 s under the race detector. A seed on miniredis
// costs about 50 times the memory store's CPU (see
// docs/design/simulation.md): the tests run few seeds.
func config(seed int64) sim.Config {
	cfg := sim.Quick(seed)
	if *flagSeeds == 0 && simtest.QuickForm() {
		cfg.Duration = 5 * time.Minute
	}
	return cfg
}

// storeOptions are the production store's options in a simulation of cfg.
func storeOptions(cfg sim.Config) redisstore.Options {
	return redisstore.Options{TakeoverGrace: cfg.TakeoverGrace}
}

// redisOpener opens the production Redis store on the simulation's
// in-process Redis.
func redisOpener(cfg sim.Config) sim.Opener {
	return simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) {
		return redisstore.New(c, storeOptions(cfg))
	})
}

// splitOpener opens naiveredis.SplitComplete, whose Complete checks the
// token in one round trip and writes by key alone in a second.
func splitOpener(cfg sim.Config) sim.Opener {
	return simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) {
		return naiveredis.NewSplitComplete(c, storeOptions(cfg))
	})
}

// TestRaceInsideStoreCall: on the same seeds, with every fault kind, the
// production Redis store (its Lua scripts on miniredis) passes and
// SplitComplete, the same store with a Complete in two round trips, is
// caught by I8 on at least 19 of 20: the seed holds a round trip inside
// the store call (Faults.RoundTripStall) and orders the round trips of
// the other clients around it.
func TestRaceInsideStoreCall(t *testing.T) {
	n := simtest.SeedCount(*flagSeeds, 20, 1)
	caught := 0
	var missed []int64
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := config(seed)
		if !*flagStall {
			cfg.Faults.RoundTripStall = 0
		}
		good := sim.Run(t, redisOpener(cfg), cfg)
		if good.Report.Verdict != checker.VerdictOK {
			t.Errorf("redisstore, seed %d: verdict %s (a false alarm)\n%s", seed, good.Report.Verdict, good.Summary(""))
		}
		bad := sim.Run(t, splitOpener(cfg), cfg)
		if bad.Report.Result(checker.I8NoSupersededWrite).Violations > 0 {
			caught++
		} else {
			missed = append(missed, seed)
		}
		t.Logf("seed %d: redisstore %s (%d faults, %d steps, %s); split-complete %s %v (%s)", seed,
			good.Report.Verdict, good.Faults, good.Steps, good.Wall.Round(1e6), bad.Report.Verdict, bad.Report.Violated(), bad.Wall.Round(1e6))
	}
	t.Logf("split-complete caught by I8 on %d/%d seeds (missed %v)", caught, n, missed)
	if caught*20 < n*19 {
		t.Errorf("split-complete caught by I8 on %d/%d seeds, want at least 95%%; missed %v", caught, n, missed)
	}
}

// TestRedisReplayIdentical: the Redis mode replays byte for byte: each
// seed twice, the production store on a fresh miniredis each time, the
// history.jsonl bytes compared.
func TestRedisReplayIdentical(t *testing.T) {
	n := simtest.SeedCount(*flagSeeds, 5, 1)
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := config(seed)
		a := sim.Run(t, redisOpener(cfg), cfg)
		b := sim.Run(t, redisOpener(cfg), cfg)
		if a.Faults == 0 {
			t.Errorf("seed %d: no fault injected", seed)
		}
		simtest.SameHistory(t, seed, a.HistoryJSONL, b.HistoryJSONL)
	}
	t.Logf("%d seeds on miniredis, each run twice: identical histories", n)
}

var flagStoreSeeds = flag.Int("simredis.storeseeds", 0, "TestRedisStoreSeeds: how many seeds (from 1000) to run the production store on; 0 skips it")

// TestRedisStoreSeeds runs the production Redis store through simtest on
// -simredis.storeseeds seeds from 1000, every fault kind (off by default:
// about 3 s of CPU a seed):
//
//	go test -count=1 -run TestRedisStoreSeeds ./sim/simredis -simredis.storeseeds 50
func TestRedisStoreSeeds(t *testing.T) {
	if *flagStoreSeeds <= 0 {
		t.Skip("-simredis.storeseeds N runs the production Redis store on N seeds")
	}
	list := make([]int64, *flagStoreSeeds)
	for i := range list {
		list[i] = int64(1000 + i)
	}
	simtest.Run(t, redisOpener(sim.Quick(0)), simtest.Seeds(list...))
}

// TestRaceByRoundTripOrder: SplitTakeover, whose take-over reads the
// expired lease and writes the new one by key alone in a second round
// trip, is caught on at least 19 of 20 seeds with no fault aimed inside a
// call (RoundTripStall off): two copies of a retry at one instant both
// read the expired lease, and the seed's order of their round trips lets
// both write.
func TestRaceByRoundTripOrder(t *testing.T) {
	n := simtest.SeedCount(*flagSeeds, 20, 1)
	caught := 0
	var missed []int64
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := sim.Quick(seed) // 20 minutes even in the quick form: 5 reach no race on seed 1
		cfg.Faults.RoundTripStall = 0
		res := sim.Run(t, simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) {
			return naiveredis.NewSplitTakeover(c, storeOptions(cfg))
		}), cfg)
		if res.Report.Result(checker.I7TokenOrder).Violations+res.Report.Result(checker.I8NoSupersededWrite).Violations > 0 {
			caught++
		} else {
			missed = append(missed, seed)
		}
		t.Logf("seed %d: split-takeover %s %v (%s)", seed, res.Report.Verdict, res.Report.Violated(), res.Wall.Round(1e6))
	}
	t.Logf("split-takeover caught by I7 or I8 on %d/%d seeds (missed %v)", caught, n, missed)
	if caught*20 < n*19 {
		t.Errorf("split-takeover caught by I7 or I8 on %d/%d seeds, want at least 95%%; missed %v", caught, n, missed)
	}
}
