package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// benchPhase is how long each measured phase of BenchmarkDo runs.
const benchPhase = 2 * time.Second

// BenchmarkDo measures Engine.Do on a dynamostore at 1, 8 and 32
// concurrent callers: first executions (a new key per call) and replays
// (a completed key), each for benchPhase. It reports calls per second and,
// from the store's Usage, requests, read units and write units per call —
// the figures a DynamoDB bill is made of. On dynalite the rates say little
// about DynamoDB (a Node.js emulator on the same two cores, no network);
// the per-call requests and units are DynamoDB's, except that dynalite
// bills a refused conditional write nothing (the store counts it itself).
//
//	go test -run '^$' -bench BenchmarkDo -benchtime 1x ./backends/dynamostore/
func BenchmarkDo(b *testing.B) {
	s := newStore(b, Options{})
	e := idem.New(s, idem.WithMaxResponseSize(MaxResponseSize))
	resp := idem.Response{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"ok":true}`)}
	fn := func(context.Context) (idem.Response, error) { return resp, nil }
	for _, callers := range []int{1, 8, 32} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			for range b.N {
				prefix := fmt.Sprintf("bench.c%d.%d.", callers, time.Now().UnixNano())
				first := measure(b, s, callers, func(c, i int) error {
					_, err := e.Do(context.Background(), prefix+strconv.Itoa(c)+"."+strconv.Itoa(i), fp("a"), fn)
					return err
				})
				replay := measure(b, s, callers, func(c, _ int) error {
					res, err := e.Do(context.Background(), prefix+strconv.Itoa(c)+".0", fp("a"), fn)
					if err == nil && !res.Replayed {
						err = fmt.Errorf("not a replay: %+v", res)
					}
					return err
				})
				b.Logf("first:  %6.0f do/s  %.2f req/do  %.2f RCU/do  %.2f WCU/do  $%.3f per million Do (%s on-demand, %s)",
					first.rate, first.req, first.rcu, first.wcu, first.perMillion(), DefaultPrices.Region, DefaultPrices.Date)
				b.Logf("replay: %6.0f do/s  %.2f req/do  %.2f RCU/do  %.2f WCU/do  $%.3f per million Do",
					replay.rate, replay.req, replay.rcu, replay.wcu, replay.perMillion())
				b.ReportMetric(first.rate, "first-do/s")
				b.ReportMetric(first.req, "first-req/do")
				b.ReportMetric(first.wcu, "first-WCU/do")
				b.ReportMetric(first.rcu, "first-RCU/do")
				b.ReportMetric(first.perMillion(), "first-$/M-do")
				b.ReportMetric(replay.rate, "replay-do/s")
				b.ReportMetric(replay.req, "replay-req/do")
				b.ReportMetric(replay.rcu, "replay-RCU/do")
			}
		})
	}
}

type benchFigures struct{ rate, req, rcu, wcu float64 }

// perMillion is the on-demand price of a million calls at DefaultPrices.
func (f benchFigures) perMillion() float64 {
	return Usage{ReadUnits: f.rcu, WriteUnits: f.wcu}.PerMillion(1, DefaultPrices)
}

// measure runs call from callers goroutines for benchPhase (caller c's
// i-th call is call(c, i)) and returns the rate and per-call usage.
func measure(b *testing.B, s *Store, callers int, call func(c, i int) error) benchFigures {
	b.Helper()
	before := s.Usage()
	var calls atomic.Int64
	var failed atomic.Value
	deadline := time.Now().Add(benchPhase)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := call(c, i); err != nil {
					failed.Store(err)
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	u := s.Usage().Sub(before)
	n := float64(calls.Load())
	return benchFigures{rate: n / elapsed.Seconds(), req: float64(u.Requests()) / n, rcu: u.ReadUnits / n, wcu: u.WriteUnits / n}
}
