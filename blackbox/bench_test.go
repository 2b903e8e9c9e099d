package blackbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// benchConns is the number of connections (clients) of both loops.
const benchConns = 8

// trivialEndpoint answers every POST with a small 201, like a service
// whose work costs nothing.
func trivialEndpoint() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"pay_000001","status":"succeeded"}`)
	}))
}

func newTransport() *http.Transport {
	return &http.Transport{MaxIdleConns: 4 * benchConns, MaxIdleConnsPerHost: 4 * benchConns, DisableCompression: true}
}

// rates are one loop's figures over one round: calls per second of wall
// time, and per second of this process's CPU time (user + system; the
// in-process endpoint's included), which other jobs on the machine do not
// skew.
type rates struct{ wall, cpu float64 }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func measure(n func() int64, run func()) rates {
	c0, t0 := cpuTime(), time.Now()
	run()
	wall, cpu := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	return rates{float64(n()) / wall, float64(n()) / max(cpu, 1e-9)}
}

// bareRate is a plain net/http client loop: benchConns goroutines POST
// the same kind of request with a fresh key, read the answer, and count.
func bareRate(url string, d time.Duration) rates {
	tr := newTransport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var n atomic.Int64
	stop := time.Now().Add(d)
	return measure(n.Load, func() { bareLoop(c, url, stop, &n) })
}

func bareLoop(c *http.Client, url string, stop time.Time, n *atomic.Int64) {
	var wg sync.WaitGroup
	for g := range benchConns {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				body := fmt.Sprintf(`{"amount": %d, "currency": "EUR"}`, 100+i)
				req, _ := http.NewRequest(http.MethodPost, url+"/payments", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d-%d", g, i))
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n.Add(1)
			}
		})
	}
	wg.Wait()
}

// driverRate runs the black-box driver against url for d, recording every
// call and every resource id, and returns its rate of recorded calls.
func driverRate(t testing.TB, url string, d time.Duration) rates {
	tg := mustParseTarget(t, `
name: trivial
base_url: `+url+`
operation:
  path: /payments
  headers: {Content-Type: application/json}
  body: '{"amount": {{.Amount}}, "currency": "EUR"}'
  resource_id: /id
  replay_header: Idempotency-Replayed
`, "bench.yaml")
	spec := Spec{Target: tg, Seed: 1, Duration: d, Clients: benchConns}
	if err := spec.validate(); err != nil {
		t.Fatal(err)
	}
	tr := newTransport()
	defer tr.CloseIdleConnections()
	ht := &httpTarget{
		spec: &spec, op: &tg.Operation, client: &http.Client{Transport: tr}, base: url,
		svc: &Fields{}, rec: history.NewRecorder(), now: history.Now, keys: newKeyTable(), tally: newAnswerTally(),
	}
	cfg := ht.config("bench", nil)
	cfg.NoProbe = true
	return measure(func() int64 { return int64(ht.rec.Len()) }, func() {
		if _, err := workload.Run(context.Background(), cfg); err != nil {
			t.Error(err)
		}
	})
}

// BenchmarkDriverVsBare compares, on one trivial local endpoint and with
// the same number of connections, the rate the black-box driver sustains
// while recording everything with the rate of a bare net/http client
// loop. It runs paired rounds, alternating which loop goes first, and
// takes the median of the per-round ratios, so that a burst of load from
// another process during one round does not decide the figure; it also
// prints the ratio of calls per CPU second, which such load does not
// move. The driver must reach at least 0.8 of the bare rate.
//
//	go test -run '^$' -bench DriverVsBare ./blackbox/
func BenchmarkDriverVsBare(b *testing.B) {
	srv := trivialEndpoint()
	defer srv.Close()
	const rounds, round = 16, 300 * time.Millisecond
	var bare, drv float64
	var wallRatios, cpuRatios []float64
	for range b.N {
		for r := range rounds {
			var x, y rates
			if r%2 == 0 {
				x = bareRate(srv.URL, round)
				y = driverRate(b, srv.URL, round)
			} else {
				y = driverRate(b, srv.URL, round)
				x = bareRate(srv.URL, round)
			}
			bare, drv = bare+x.wall, drv+y.wall
			wallRatios = append(wallRatios, y.wall/x.wall)
			cpuRatios = append(cpuRatios, y.cpu/x.cpu)
		}
	}
	n := float64(len(wallRatios))
	bare, drv = bare/n, drv/n
	ratio, cpuRatio := median(wallRatios), median(cpuRatios)
	b.ReportMetric(bare, "bare-req/s")
	b.ReportMetric(drv, "driver-req/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(cpuRatio, "cpu-ratio")
	fmt.Printf("black-box driver %.0f req/s, bare net/http loop %.0f req/s, ratio %.2f (median of %d paired rounds, %d connections); per CPU second ratio %.2f\n",
		drv, bare, ratio, len(wallRatios), benchConns, cpuRatio)
	if ratio < 0.8 {
		b.Errorf("driver reaches %.2f of the bare rate, want at least 0.8", ratio)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
