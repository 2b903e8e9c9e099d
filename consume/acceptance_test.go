package consume_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// SeedsEnv sets how many seeds the sweeps run (default 2, 1 with -short)
// and, when set, adds worker processes to the crash sweep (TestProcesses
// covers them otherwise); the acceptance figure is IDEM_CONSUME_SEEDS=20.
const SeedsEnv = "IDEM_CONSUME_SEEDS"

func seeds(t *testing.T) int {
	t.Helper()
	if v := os.Getenv(SeedsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", SeedsEnv, v)
		}
		return n
	}
	if testing.Short() {
		return 1
	}
	return 2
}

// fast is a run small and quick enough for a sweep.
func fast(broker, url string, seed int64) consume.Config {
	return consume.Config{Broker: broker, URL: url, Messages: 30, Seed: seed,
		LeaseTTL: 300 * time.Millisecond, AckWait: 500 * time.Millisecond, RequeueDelay: 50 * time.Millisecond,
		Timeout: 30 * time.Second}
}

// guards are the consumer configurations the crash-before-ack sweep runs,
// with the verdict each must get.
var guards = []struct {
	name string
	set  func(*consume.Config)
	safe bool
}{
	{"engine fenced+recovery", func(c *consume.Config) { c.Recovery = true }, true},
	{"broker only", func(c *consume.Config) { c.BrokerOnly = true }, false},
	{"engine fenced, no recovery", func(c *consume.Config) {}, false},
	{"naive cache-on-success, fenced+recovery", func(c *consume.Config) {
		st, err := naive.New("cache-on-success", nil)
		if err != nil {
			panic(err)
		}
		c.Store, c.StoreName, c.Recovery = st, "naive/cache-on-success", true
	}, false},
}

// TestCrashBeforeAck kills consumers after the effect and before the ack,
// aimed at idem.PointAfterFn (right after the effect without an engine):
// the broker redelivers to another consumer. In-process the consumer
// abandons the delivery and closes its channel or subscription; with
// worker processes the worker sends itself SIGKILL. The reference engine
// passes every seed (with publisher duplicates as well); a consumer that
// trusts the broker, the engine without recovery and a naive store are
// caught on at least 19 of 20 seeds, with no publisher duplicates, so that
// every catch is the crash's.
func TestCrashBeforeAck(t *testing.T) {
	n := seeds(t)
	for _, b := range brokers {
		url := brokerURL(t, b)
		modes := []bool{false}
		if os.Getenv(SeedsEnv) != "" {
			modes = append(modes, true)
		}
		for _, procs := range modes {
			mode := "in-process"
			if procs {
				mode = "processes"
			}
			for _, g := range guards {
				t.Run(b+"/"+mode+"/"+g.name, func(t *testing.T) {
					ok, caught := 0, 0
					for seed := range int64(n) {
						cfg := fast(b, url, seed+1)
						cfg.Faults.CrashBeforeAck = 2
						if procs {
							cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 3
						}
						if !g.safe {
							cfg.DuplicateRate = -1
						}
						g.set(&cfg)
						verdict, violated := crashRun(t, cfg)
						switch {
						case verdict == checker.VerdictOK:
							ok++
						case verdict == checker.VerdictViolation && slices.Contains(violated, checker.I1AtMostOnce):
							caught++
						default:
							t.Errorf("seed %d: verdict %s, violated %v", seed+1, verdict, violated)
						}
					}
					t.Logf("%s %s %s: %d/%d seeds ok, %d caught (I1)", b, mode, g.name, ok, n, caught)
					if g.safe && ok != n {
						t.Fatalf("%d of %d seeds passed, want all", ok, n)
					}
					if !g.safe && caught < n-n/20 {
						t.Fatalf("caught on %d of %d seeds, want at least %d", caught, n, n-n/20)
					}
				})
			}
		}
	}
}

// crashRun runs cfg, checks that its crashes struck and were redelivered,
// and returns the verdict.
func crashRun(t *testing.T, cfg consume.Config) (checker.Verdict, []checker.Invariant) {
	t.Helper()
	res, err := consume.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	if res.Stats.Crashes != cfg.Faults.CrashBeforeAck || res.Stats.Redeliveries == 0 {
		t.Fatalf("seed %d: %d crashes, %d redeliveries; want %d crashes and redeliveries",
			cfg.Seed, res.Stats.Crashes, res.Stats.Redeliveries, cfg.Faults.CrashBeforeAck)
	}
	if got := history.CountFaults(res.History.Ops)[history.FaultCrash]; got != cfg.Faults.CrashBeforeAck {
		t.Fatalf("seed %d: %d crash faults recorded, want %d (every fault op carries its kind)", cfg.Seed, got, cfg.Faults.CrashBeforeAck)
	}
	if res.Report.Verdict == checker.VerdictViolation && res.Report.Result(checker.I1AtMostOnce).Violations == 0 {
		for _, v := range res.Report.Violations {
			t.Logf("seed %d: %s %s: %s", cfg.Seed, v.Invariant, v.Key, v.Message)
		}
	}
	return res.Report.Verdict, res.Report.Violated()
}

// TestPoison publishes every message twice, some of them poison: each
// poison message ends in the dead-letter queue or stream exactly once and
// has no effect.
func TestPoison(t *testing.T) {
	for _, b := range brokers {
		t.Run(b, func(t *testing.T) {
			cfg := fast(b, brokerURL(t, b), 7)
			cfg.Recovery, cfg.Poison, cfg.DuplicateRate = true, 3, 1
			cfg.Faults.CrashBeforeAck = 1
			res, err := consume.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Verdict != checker.VerdictOK {
				t.Fatalf("verdict %s %v", res.Report.Verdict, res.Report.Violations)
			}
			if res.Stats.DeadLettered != 3 || res.Stats.DeadLetterActions != 3 {
				t.Fatalf("dead-lettered %d (actions %d), want 3", res.Stats.DeadLettered, res.Stats.DeadLetterActions)
			}
			failedKeys := map[string]bool{}
			for _, op := range res.History.Ops {
				if op.Kind == history.KindCall && op.Outcome == history.Failed {
					failedKeys[op.Key] = true
				}
			}
			if len(failedKeys) != 3 {
				t.Fatalf("%d keys failed, want the 3 poison ones", len(failedKeys))
			}
			for _, op := range res.History.Ops {
				if op.Kind == history.KindEffect && failedKeys[op.Key] {
					t.Fatalf("poison message %s has an effect: %+v", op.Key, op)
				}
			}
			if want := cfg.Messages - 3; res.Stats.Applied != want {
				t.Fatalf("%d effects applied, want %d", res.Stats.Applied, want)
			}
			// The end-of-run probes found every message's outcome stored.
			if got := res.Report.Result(checker.I6Liveness).Checked; got != cfg.Messages {
				t.Fatalf("I6 checked %d probes, want %d (notes %v)", got, cfg.Messages, res.Report.Notes)
			}
		})
	}
}

// TestPause stalls consumers before the effect past their lease and the
// NATS ack wait: another consumer takes the message over. The late writer
// is rejected by the fenced sink; the plain sink applies it twice.
func TestPause(t *testing.T) {
	for _, b := range brokers {
		for _, sink := range []string{workload.SinkFenced, workload.SinkPlain} {
			t.Run(b+"/"+sink, func(t *testing.T) {
				cfg := fast(b, brokerURL(t, b), 3)
				cfg.Sink, cfg.Recovery = sink, sink == workload.SinkFenced
				cfg.Faults.Pause, cfg.Faults.PauseFor = 2, time.Second
				res, err := consume.Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if res.Stats.Pauses != 2 {
					t.Fatalf("%d pauses struck, want 2", res.Stats.Pauses)
				}
				if got := history.CountFaults(res.History.Ops); got[history.FaultPause] != 2 || len(got) != 1 {
					t.Fatalf("faults recorded %v, want pause 2", got)
				}
				want := checker.VerdictOK
				if sink == workload.SinkPlain {
					want = checker.VerdictViolation
				}
				if res.Report.Verdict != want {
					t.Fatalf("verdict %s (violated %v), want %s", res.Report.Verdict, res.Report.Violated(), want)
				}
			})
		}
	}
}

// TestOverlap aims publisher duplicates at messages in flight: the first
// copy of each target waits after its claim, before its effect, until the
// other copy was claimed. The only duplicates are the aimed ones, so a
// catch is the aim's, not a lucky overlap of natural duplicates. The
// reference engine passes; a store that writes nothing before the effect
// (naive cache-on-success) runs both copies, in process and with worker
// processes, on both brokers: the other copy waits for the held copy's
// effect, so the lower token writes first and the fenced sink takes both
// (I1).
func TestOverlap(t *testing.T) {
	for _, b := range brokers {
		for _, procs := range []bool{false, true} {
			for _, g := range []struct {
				name string
				set  func(*consume.Config)
				safe bool
			}{guards[0], guards[3]} {
				name := b + "/in-process/" + g.name
				if procs {
					name = b + "/processes/" + g.name
				}
				t.Run(name, func(t *testing.T) {
					cfg := fast(b, brokerURL(t, b), 9)
					cfg.DuplicateRate, cfg.Faults.Overlap = -1, 3
					// A hold waits at most half the lease for the other
					// copy's claim; with worker processes on a loaded
					// machine 150ms (fast's 300ms lease) was sometimes
					// too short, so this test leases for 2s.
					cfg.LeaseTTL, cfg.AckWait = 2*time.Second, 3*time.Second
					if procs {
						cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 3
					}
					g.set(&cfg)
					res, err := consume.Run(context.Background(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					if res.Stats.Overlaps != 3 || res.Stats.Duplicates != 3 {
						t.Fatalf("%d overlaps struck of %d duplicates, want 3 of 3", res.Stats.Overlaps, res.Stats.Duplicates)
					}
					met := 0
					for _, op := range res.History.Ops {
						if op.Kind == history.KindFault && strings.HasPrefix(op.Label, "hold consumer") {
							if op.Fault != history.FaultPause {
								t.Errorf("hold recorded as fault kind %q, want pause", op.Fault)
							}
							if !strings.Contains(op.Label, "until another copy was claimed") {
								t.Errorf("a hold gave up: %s", op.Label)
							}
							met++
						}
					}
					if met != 3 {
						t.Errorf("%d hold ops in the history, want 3", met)
					}
					switch {
					case g.safe && res.Report.Verdict != checker.VerdictOK:
						t.Fatalf("verdict %s (violated %v), want ok", res.Report.Verdict, res.Report.Violated())
					case !g.safe && !slices.Contains(res.Report.Violated(), checker.I1AtMostOnce):
						t.Fatalf("verdict %s (violated %v), want I1", res.Report.Verdict, res.Report.Violated())
					}
				})
			}
		}
	}
}

// TestServerRestart restarts a private nats-server with file storage
// during traffic, with a crash before ack as well: every message is
// settled and the reference engine passes.
func TestServerRestart(t *testing.T) {
	needNATSServer(t)
	cfg := fast(consume.NATS, "", 5)
	cfg.Messages, cfg.Recovery = 60, true
	cfg.Faults.ServerRestart, cfg.Faults.CrashBeforeAck = true, 1
	res, err := consume.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.ServerRestarts != 1 {
		t.Fatalf("%d server restarts, want 1", res.Stats.ServerRestarts)
	}
	if res.Report.Verdict != checker.VerdictOK {
		t.Fatalf("verdict %s %v", res.Report.Verdict, res.Report.Violations)
	}
	t.Logf("%+v", res.Stats)
}

// TestConfigErrors checks that invalid configurations wrap ErrConfig.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  consume.Config
	}{
		{"unknown broker", consume.Config{Broker: "kafka", URL: "x"}},
		{"no url", consume.Config{Broker: consume.RabbitMQ}},
		{"restart on rabbitmq", consume.Config{Broker: consume.RabbitMQ, URL: "x", Faults: consume.Faults{ServerRestart: true}}},
		{"recovery on plain sink", consume.Config{Broker: consume.NATS, URL: "x", Sink: workload.SinkPlain, Recovery: true}},
		{"too many targets", consume.Config{Broker: consume.NATS, URL: "x", Messages: 2, Poison: 2, Faults: consume.Faults{CrashBeforeAck: 1}}},
		{"too many targets with overlaps", consume.Config{Broker: consume.NATS, URL: "x", Messages: 3, Faults: consume.Faults{Pause: 1, Overlap: 3}}},
		{"negative overlap", consume.Config{Broker: consume.NATS, URL: "x", Faults: consume.Faults{Overlap: -1}}},
		{"negative batch", consume.Config{Broker: consume.NATS, URL: "x", Batch: -1}},
		{"batch above the limit", consume.Config{Broker: consume.NATS, URL: "x", Batch: consume.MaxBatch + 1}},
		{"batch linger above 1s", consume.Config{Broker: consume.NATS, URL: "x", Batch: 4, BatchLinger: 2 * time.Second}},
		{"batch without the engine", consume.Config{Broker: consume.RabbitMQ, URL: "x", Batch: 4, BrokerOnly: true}},
		{"prefetch below the batch", consume.Config{Broker: consume.RabbitMQ, URL: "x", Batch: 4, Prefetch: 2}},
		{"batch longer than half the lease", consume.Config{Broker: consume.RabbitMQ, URL: "x", Batch: 100, Latency: 5 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := consume.Run(context.Background(), tt.cfg)
			if !errors.Is(err, consume.ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
		})
	}
}

// MatrixEnv runs TestMatrix: which consumer configuration is safe under
// which fault, on both brokers, with worker processes. Its value is the
// number of seeds per cell.
const MatrixEnv = "IDEM_CONSUME_MATRIX"

// TestMatrix prints a Markdown table: for each configuration and fault,
// how many seeds passed on RabbitMQ and NATS. Only the duplicates column
// has publisher duplicates; the pause column has one duplicate per paused
// message (RabbitMQ has no ack timeout: the duplicate is what reaches
// another consumer) and prefetch 1, so that the stopped consumer cannot
// hold the duplicate as well.
func TestMatrix(t *testing.T) {
	v := os.Getenv(MatrixEnv)
	if v == "" {
		t.Skipf("set %s=SEEDS to run the consumer safety matrix", MatrixEnv)
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number of seeds", MatrixEnv, v)
	}
	rows := []struct {
		name string
		set  func(*consume.Config)
	}{
		{"broker only (no idempotency check)", func(c *consume.Config) { c.BrokerOnly = true }},
		{"engine, plain sink, no recovery", func(c *consume.Config) { c.Sink = workload.SinkPlain }},
		{"engine, fenced sink, no recovery", func(c *consume.Config) {}},
		{"engine, fenced sink + recovery", func(c *consume.Config) { c.Recovery = true }},
		{"naive cache-on-success, fenced + recovery", func(c *consume.Config) {
			st, _ := naive.New("cache-on-success", nil)
			c.Store, c.StoreName, c.Recovery = st, "naive/cache-on-success", true
		}},
	}
	cols := []struct {
		name  string
		nats  bool // NATS only
		fault func(*consume.Config)
	}{
		{"publisher duplicates", false, func(c *consume.Config) { c.DuplicateRate = 0.3 }},
		{"SIGKILL after effect, before ack", false, func(c *consume.Config) { c.Faults.CrashBeforeAck = 2 }},
		{"SIGSTOP before effect past lease and ack wait", false, func(c *consume.Config) {
			c.Faults.Pause, c.Faults.PauseFor = 2, time.Second // prefetch 1 by default
		}},
		{"consumer restarts (SIGTERM)", false, func(c *consume.Config) { c.Faults.Restarts = 3 }},
		{"nats-server restart", true, func(c *consume.Config) { c.Faults.ServerRestart, c.URL = true, "" }},
	}
	var b strings.Builder
	b.WriteString("| configuration |")
	for _, c := range cols {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(cols)))
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + row.name + " |")
		for _, col := range cols {
			var cell []string
			for _, br := range brokers {
				if col.nats && br != consume.NATS {
					continue
				}
				ok := 0
				for seed := range int64(n) {
					cfg := fast(br, brokerURL(t, br), 100+seed)
					cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 3
					cfg.DuplicateRate = -1
					row.set(&cfg)
					col.fault(&cfg)
					res, err := consume.Run(context.Background(), cfg)
					if err != nil {
						t.Fatalf("%s / %s / %s seed %d: %v", row.name, col.name, br, cfg.Seed, err)
					}
					if res.Report.Verdict == checker.VerdictOK {
						ok++
					}
				}
				cell = append(cell, fmt.Sprintf("%s %d/%d", br, ok, n))
			}
			b.WriteString(" " + strings.Join(cell, ", ") + " |")
		}
		b.WriteString("\n")
	}
	t.Logf("seeds passing per cell (%d seeds, worker processes):\n%s", n, b.String())
}
