package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestEveryValidMessageChargedOnce(t *testing.T) {
	for _, workers := range []int{1, 4, 16} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("workers=%d/seed=%d", workers, seed), func(t *testing.T) {
				cfg := config{messages: 40, workers: workers, seed: seed}
				rep, err := run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var wantFailed []string
				for i := range cfg.messages {
					id := fmt.Sprintf("msg-%03d", i)
					want := 1
					if invalid(i) {
						want = 0
						wantFailed = append(wantFailed, id)
					}
					if got := rep.applied[id]; got != want {
						t.Errorf("%s charged %d times, want %d", id, got, want)
					}
				}
				if got, want := strings.Join(rep.failed, " "), strings.Join(wantFailed, " "); got != want {
					t.Errorf("failed permanently: %q, want %q", got, want)
				}
				if len(rep.deadLetters) != 1 || rep.deadLetters[0].ID != "msg-000" {
					t.Errorf("dead letters %+v, want one copy of msg-000", rep.deadLetters)
				}
				settled := rep.decisions[idem.Ack] + rep.decisions[idem.Reject]
				if settled != rep.published {
					t.Errorf("%d deliveries settled, %d published", settled, rep.published)
				}
				if rep.decisions[idem.Nack] == 0 {
					t.Error("no flaky message was nacked")
				}
			})
		}
	}
}

func TestReport(t *testing.T) {
	rep, err := run(context.Background(), config{messages: 12, workers: 1, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.print(&out)
	for _, want := range []string{
		"seed 1: 13 messages",
		"charged 1 time(s): 11 messages",
		"failed permanently (acked, stored): msg-010",
		"dead-lettered: msg-000",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunNeedsAWorker(t *testing.T) {
	if _, err := run(context.Background(), config{messages: 1}); err == nil {
		t.Fatal("run with 0 workers succeeded")
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, config{messages: 50, workers: 4, seed: 1}); err != context.Canceled {
		t.Fatalf("run with a cancelled context: %v", err)
	}
}
