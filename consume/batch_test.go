package consume_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/history"
)

// TestBatchCrashBeforeAck is TestCrashBeforeAck with batch claims
// (Config.Batch 8): each consumer pulls up to 8 messages and claims them
// with one ConsumeBatch, and the crash after a target's effect abandons
// the whole batch unacked (a worker process dies in the fault hook, before
// the batch's outcomes reach the store). The reference engine passes every
// seed; the engine without recovery and a naive store are caught on at
// least 19 of 20. The broker-only consumer has no batch claim.
func TestBatchCrashBeforeAck(t *testing.T) {
	n := seeds(t)
	for _, b := range brokers {
		url := brokerURL(t, b)
		for _, procs := range []bool{false, true} {
			mode := "in-process"
			if procs {
				mode = "processes"
			}
			for _, g := range guards {
				if g.name == "broker only" {
					continue
				}
				if procs && !g.safe && os.Getenv(SeedsEnv) == "" {
					continue // the short form: the reference engine only
				}
				t.Run(b+"/"+mode+"/"+g.name, func(t *testing.T) {
					ok, caught, batches, batched := 0, 0, 0, 0
					for seed := range int64(n) {
						cfg := fast(b, url, seed+1)
						cfg.Batch, cfg.Faults.CrashBeforeAck = 8, 2
						if procs {
							cfg.Processes, cfg.WorkerCommand, cfg.Consumers = true, workerCommand, 3
						}
						if !g.safe {
							cfg.DuplicateRate = -1
						}
						g.set(&cfg)
						res, err := consume.Run(context.Background(), cfg)
						if err != nil {
							t.Fatalf("seed %d: %v", cfg.Seed, err)
						}
						if res.Stats.Crashes != 2 || res.Stats.Redeliveries == 0 {
							t.Fatalf("seed %d: %d crashes, %d redeliveries; want 2 and redeliveries", cfg.Seed, res.Stats.Crashes, res.Stats.Redeliveries)
						}
						if res.Stats.BatchedDeliveries != res.Stats.Deliveries {
							t.Fatalf("seed %d: %d of %d deliveries went through a batch", cfg.Seed, res.Stats.BatchedDeliveries, res.Stats.Deliveries)
						}
						for _, op := range res.History.Ops {
							// A consumer stopped at the end of the run while it
							// claimed a batch ends it unknown too (canceled).
							if op.Kind == history.KindCall && op.Outcome == history.Unknown && !strings.HasPrefix(op.Err, "consumer crashed") &&
								!strings.HasSuffix(op.Err, context.Canceled.Error()) {
								t.Fatalf("seed %d: %s ended unknown outside a crashed batch: %s", cfg.Seed, op.Key, op.Err)
							}
						}
						batches += res.Stats.Batches
						batched += res.Stats.BatchedDeliveries
						switch v := res.Report.Verdict; {
						case v == checker.VerdictOK:
							ok++
						case v == checker.VerdictViolation && slices.Contains(res.Report.Violated(), checker.I1AtMostOnce):
							caught++
						default:
							t.Errorf("seed %d: verdict %s, violated %v", cfg.Seed, v, res.Report.Violated())
						}
					}
					t.Logf("%s %s %s, batch 8: %d/%d seeds ok, %d caught (I1); %d batches, %.1f deliveries each",
						b, mode, g.name, ok, n, caught, batches, float64(batched)/float64(max(batches, 1)))
					if batched <= batches {
						t.Fatalf("%d deliveries in %d batches: no batch held more than one", batched, batches)
					}
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
