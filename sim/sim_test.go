package sim_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/naive"
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
	flagSeed    = flag.Int64("sim.seed", 1, "TestSim: the seed to simulate")
	flagStore   = flag.String("sim.store", "memory", "TestSim: the store: memory, redis (redisstore on miniredis), redis/split-complete, redis/split-takeover, or naive/DESIGN ("+strings.Join(designNames(), ", ")+")")
	flagConfig  = flag.String("sim.config", "quick", "TestSim: the configuration: quick or production")
	flagTraffic = flag.Duration("sim.traffic", 0, "TestSim: the traffic duration (0: the configuration's)")
	flagSeeds   = flag.Int("sim.seeds", 0, "TestSimSeeds, TestReplayIdentical, TestKnownBadDesignsCaught: how many seeds (0: the default of each)")
)

func designNames() []string { return naive.Names() }

// opener returns the Opener of the store named name for cfg.
func opener(t *testing.T, name string, cfg sim.Config) sim.Opener {
	t.Helper()
	if name == "memory" {
		return sim.Shared(func(clock idem.Clock) (idem.Store, error) {
			return memstore.New(memstore.Options{Clock: clock, SweepInterval: -1, TakeoverGrace: cfg.TakeoverGrace}), nil
		})
	}
	ropts := redisstore.Options{TakeoverGrace: cfg.TakeoverGrace}
	switch name {
	case "redis":
		return simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) { return redisstore.New(c, ropts) })
	case "redis/split-complete":
		return simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) { return naiveredis.NewSplitComplete(c, ropts) })
	case "redis/split-takeover":
		return simredis.Opener(func(c redis.UniversalClient) (idem.Store, error) { return naiveredis.NewSplitTakeover(c, ropts) })
	}
	design, ok := strings.CutPrefix(name, "naive/")
	if !ok {
		t.Fatalf("-sim.store %q: want memory, redis, redis/split-complete, redis/split-takeover or naive/DESIGN", name)
	}
	return sim.Shared(func(clock idem.Clock) (idem.Store, error) {
		return naive.New(design, clock)
	})
}

func configOf(t *testing.T, name string, seed int64) sim.Config {
	switch name {
	case "quick":
		return sim.Quick(seed)
	case "production":
		return sim.Production(seed)
	}
	t.Fatalf("-sim.config %q: want quick or production", name)
	return sim.Config{}
}

// TestSim simulates one seed of one store and prints what happened; it
// fails on a violation, with the command that replays it:
//
//	go test -count=1 -run '^TestSim$' ./sim -sim.seed 7 -sim.store naive/touch-on-read
func TestSim(t *testing.T) {
	cfg := configOf(t, *flagConfig, *flagSeed)
	replay := fmt.Sprintf("go test -count=1 -run '^TestSim$' ./sim -sim.seed %d -sim.store %s -sim.config %s", cfg.Seed, *flagStore, cfg.Name)
	if *flagTraffic > 0 {
		cfg.Duration = *flagTraffic
		replay += " -sim.traffic " + cfg.Duration.String()
	}
	res := sim.Run(t, opener(t, *flagStore, cfg), cfg)
	out := res.Summary(replay)
	if len(res.HistoryJSONL) > 0 {
		path := filepath.Join(t.ArtifactDir(), "history.jsonl")
		if err := os.WriteFile(path, res.HistoryJSONL, 0o644); err != nil {
			t.Fatal(err)
		}
		out += "history: " + path + " (go test -artifacts DIR keeps it; idembench check re-checks it without T1 and T2)\n"
	}
	if res.Report.Verdict != checker.VerdictOK {
		t.Fatal("\n" + out)
	}
	t.Log("\n" + out)
}

// TestSimSeeds: the reference engine on the memory store passes every
// seed, with every fault kind (crash, pause, lost reply, copies, clock
// skew), the completer and the sweeper on their production schedule.
func TestSimSeeds(t *testing.T) {
	n := simtest.SeedCount(*flagSeeds, 50, 3)
	list := make([]int64, n)
	for i := range list {
		list[i] = int64(1000 + i)
	}
	cfg := sim.Quick(0)
	simtest.Run(t, opener(t, "memory", cfg), simtest.Seeds(list...))
}
