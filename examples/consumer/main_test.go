package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/internal/testenv"
)

func brokerURL(t *testing.T, broker string) string {
	t.Helper()
	if broker == "rabbitmq" {
		return testenv.AMQPURL(t)
	}
	return testenv.NATSURL(t)
}

func TestEveryValidMessageChargedOnce(t *testing.T) {
	for _, broker := range []string{"rabbitmq", "nats"} {
		for _, tc := range []struct {
			workers int
			seed    uint64
		}{{1, 1}, {4, 2}} {
			t.Run(fmt.Sprintf("%s/workers=%d/seed=%d", broker, tc.workers, tc.seed), func(t *testing.T) {
				cfg := config{broker: broker, url: brokerURL(t, broker), messages: 24, workers: tc.workers, seed: tc.seed, crash: true}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				rep, err := run(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				invalids := 0
				for i := range cfg.messages {
					id := fmt.Sprintf("msg-%03d", i)
					want := 1
					if invalid(i) {
						want = 0
						invalids++
					}
					if got := rep.ledger.charges(id); got != want {
						t.Errorf("%s charged %d times, want %d", id, got, want)
					}
				}
				if want := invalids + 1; rep.deadLettered != want || rep.actions["dead-letter"] != want {
					t.Errorf("dead-lettered %d (actions %d), want %d: the poison messages and the reused id, once each",
						rep.deadLettered, rep.actions["dead-letter"], want)
				}
				if rep.settled() != rep.published {
					t.Errorf("%d copies settled, %d published", rep.settled(), rep.published)
				}
				if rep.crashes != 1 || rep.redelivered == 0 {
					t.Errorf("%d crashes, %d redeliveries; want the crash and its redelivery", rep.crashes, rep.redelivered)
				}
				if rep.actions["redeliver"] == 0 {
					t.Error("no flaky message was redelivered")
				}
				var out bytes.Buffer
				rep.print(&out)
				if !strings.Contains(out.String(), fmt.Sprintf("charged 1 time(s): %d messages", cfg.messages-invalids)) {
					t.Errorf("report:\n%s", out.String())
				}
			})
		}
	}
}
