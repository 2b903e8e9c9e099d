//go:build linux

package multiproc

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/netns"
)

// natsCounts reads what nats-server received so far (its /varz).
func natsCounts(b *testing.B, monitor string) (msgs, bytes int64) {
	b.Helper()
	resp, err := http.Get(monitor + "/varz")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs  int64 `json:"in_msgs"`
		InBytes int64 `json:"in_bytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		b.Fatal(err)
	}
	return v.InMsgs, v.InBytes
}

// BenchmarkNamespaceHosts measures how a joined run scales with hosts
// simulated by network namespaces: the throughput scenario (closed loop,
// 64 clients, no business latency, no faults) on a private Redis, with
// one host and with four, each worker in its namespace. It reports the
// recorded operations per second of each, their ratio, and what NATS
// received per recorded operation and per worker and second (every
// frame of the protocol, the histories, the pings), the figures a
// larger run's NATS needs. Run it with
//
//	go test ./harness/multiproc -run '^$' -bench NamespaceHosts -benchtime 1x
//
// (as root; each run lasts 3 s).
func BenchmarkNamespaceHosts(b *testing.B) {
	if err := netns.Available(); err != nil {
		b.Skipf("skipping: %v", err)
	}
	for _, bin := range []string{"nats-server", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			b.Skipf("skipping: %s is not installed", bin)
		}
	}
	lab := newNSLab(b, 4, false)
	const d = 3 * time.Second
	measure := func(hosts int) (opsPerS, msgsPerWorkerS, bytesPerWorkerS, bytesPerOp float64) {
		sp := nsSpec(b, "throughput", harness.Redis, lab.redis, 1, d)
		m0, b0 := natsCounts(b, lab.monitor)
		out, err := lab.run(b, hostRun{sp: sp, skews: make([]time.Duration, 4), hosts: hosts})
		if err != nil {
			b.Fatal(err)
		}
		m1, b1 := natsCounts(b, lab.monitor)
		ops := 0
		for _, op := range out.History.Ops {
			if op.Kind != history.KindFault {
				ops++
			}
		}
		secs := out.Duration.Seconds()
		return float64(ops) / secs, float64(m1-m0) / float64(hosts) / secs, float64(b1-b0) / float64(hosts) / secs, float64(b1-b0) / float64(ops)
	}
	for b.Loop() {
		one, _, _, _ := measure(1)
		four, msgs, bytes, perOp := measure(4)
		b.ReportMetric(one, "ops/s-1host")
		b.ReportMetric(four, "ops/s-4hosts")
		b.ReportMetric(four/one, "x-scaling")
		b.ReportMetric(msgs, "nats-msgs/s/worker")
		b.ReportMetric(bytes, "nats-B/s/worker")
		b.ReportMetric(perOp, "nats-B/op")
	}
}
