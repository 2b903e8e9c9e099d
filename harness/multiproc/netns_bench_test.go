//go:build linux

package multiproc

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
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
// 64 clients, no business latency, no faults), with one host and with
// four, each worker in its namespace. It reports the recorded operations
// per second of each, their ratio, and what NATS received per recorded
// operation and per worker and second (every frame of the protocol, the
// histories, the ledgers, the pings), the figures a larger run's NATS
// needs. Three cases:
//
//   - redis: the workers share a private Redis;
//   - memory: each worker owns a memory store and ledger (keys sharded by
//     host), every host free to use the whole machine;
//   - memory-cpu: the same, each host limited to a CPU quota (a cgroup;
//     IDEM_BENCH_HOST_CPU cores, default 0.1: four hosts ask for 0.4 of the
//     machine, leaving the rest to NATS, the coordinator and other jobs), as
//     hosts with CPUs of their own would be, so that one host cannot use
//     the machine's every core.
//
// Run it with
//
//	go test ./harness/multiproc -run '^$' -bench NamespaceHosts -benchtime 2x
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
	hostCPU := 0.1
	if v := os.Getenv("IDEM_BENCH_HOST_CPU"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) {
			b.Fatalf("IDEM_BENCH_HOST_CPU=%q: want a number of cores above 0", v)
		}
		hostCPU = f
	}
	for _, c := range []struct {
		name    string
		backend harness.Backend
		cpu     float64
	}{
		{"redis", harness.Redis, 0},
		{"memory", harness.Memory, 0},
		{"memory-cpu", harness.Memory, hostCPU},
	} {
		b.Run(c.name, func(b *testing.B) {
			lab := newNSLab(b, 4, false)
			if c.cpu > 0 {
				if err := lab.hosts.LimitCPU(c.cpu); errors.Is(err, netns.ErrUnavailable) {
					b.Skipf("skipping: %v", err)
				} else if err != nil {
					b.Fatal(err)
				}
			}
			url := ""
			if c.backend == harness.Redis {
				url = lab.redis
			}
			const d = 3 * time.Second
			// throttled returns host 0's scheduling periods and those
			// its CPU quota stopped it in, so far.
			throttled := func() (int64, int64) {
				if c.cpu == 0 {
					return 0, 0
				}
				p, t, err := lab.hosts.Throttled(0)
				if err != nil {
					b.Fatal(err)
				}
				return p, t
			}
			type figures struct{ ops, msgs, bytes, perOp, throttled float64 }
			measure := func(hosts int) figures {
				sp := nsSpec(b, "throughput", c.backend, url, 1, d)
				m0, b0 := natsCounts(b, lab.monitor)
				p0, t0 := throttled()
				out, err := lab.run(b, hostRun{sp: sp, skews: make([]time.Duration, 4), hosts: hosts})
				if err != nil {
					b.Fatal(err)
				}
				if out.Report.Verdict != checker.VerdictOK {
					b.Fatalf("%d hosts: verdict %s", hosts, out.Report.Verdict)
				}
				m1, b1 := natsCounts(b, lab.monitor)
				p1, t1 := throttled()
				ops := 0
				for _, op := range out.History.Ops {
					if op.Kind != history.KindFault {
						ops++
					}
				}
				secs := out.Duration.Seconds()
				f := figures{ops: float64(ops) / secs, msgs: float64(m1-m0) / float64(hosts) / secs,
					bytes: float64(b1-b0) / float64(hosts) / secs, perOp: float64(b1-b0) / float64(ops)}
				if p1 > p0 {
					f.throttled = float64(t1-t0) / float64(p1-p0)
				}
				return f
			}
			// One host and four alternate which goes first (ABBA over
			// -benchtime 2x or more): a machine whose load drifts favours
			// neither. The figures are the means.
			var one, four figures
			n := 0
			for b.Loop() {
				var o, f figures
				if n%2 == 0 {
					o, f = measure(1), measure(4)
				} else {
					f, o = measure(4), measure(1)
				}
				n++
				one.ops += o.ops
				one.throttled += o.throttled
				four.ops += f.ops
				four.msgs += f.msgs
				four.bytes += f.bytes
				four.perOp += f.perOp
				b.Logf("run %d: 1 host %.0f ops/s, 4 hosts %.0f ops/s (x%.2f)", n, o.ops, f.ops, f.ops/o.ops)
			}
			k := float64(n)
			b.ReportMetric(one.ops/k, "ops/s-1host")
			b.ReportMetric(four.ops/k, "ops/s-4hosts")
			b.ReportMetric(four.ops/one.ops, "x-scaling")
			b.ReportMetric(four.msgs/k, "nats-msgs/s/worker")
			b.ReportMetric(four.bytes/k, "nats-B/s/worker")
			b.ReportMetric(four.perOp/k, "nats-B/op")
			if c.cpu > 0 {
				b.ReportMetric(one.throttled/k, "throttled-1host")
			}
		})
	}
}
