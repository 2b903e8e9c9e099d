//go:build linux

package multiproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/netns"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// nsLab is four hosts simulated by network namespaces on a bridge, and
// the servers they reach on the bridge's address: a private nats-server
// with JetStream, a private Redis and (when asked) PostgreSQL. Everything
// is removed when the test ends, failed or not.
type nsLab struct {
	hosts    *netns.Hosts
	nats     string // nats://bridge:port
	monitor  string // http://bridge:port of nats-server's monitoring
	redis    string
	postgres string
}

// needNamespaces skips t unless the machine can create namespaces here
// (root and the ip command) and the servers' binaries are installed.
func needNamespaces(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs worker processes in network namespaces for several seconds")
	}
	if err := netns.Available(); err != nil {
		t.Skipf("skipping: %v (hosts are simulated with network namespaces)", err)
	}
	for _, bin := range []string{"nats-server", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: %s is not installed", bin)
		}
	}
}

func newNSLab(t testing.TB, hosts int, postgres bool) *nsLab {
	t.Helper()
	h, err := netns.New(hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	lab := &nsLab{hosts: h}
	lab.nats, lab.monitor = startNATS(t, h.BridgeAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := servers.StartRedis(ctx, servers.RedisOptions{AlsoListen: h.BridgeAddr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	lab.redis = "redis://" + net.JoinHostPort(h.BridgeAddr(), strconv.Itoa(r.Port())) + "/0"
	if postgres {
		pg, err := servers.StartPostgres(ctx, servers.PostgresOptions{AlsoListen: h.BridgeAddr()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pg.Stop() })
		// Four workers' pools and the coordinator's need more than the
		// default 100 connections.
		conn, err := pgx.Connect(ctx, pg.URL())
		if err == nil {
			_, err = conn.Exec(ctx, "ALTER SYSTEM SET max_connections = 400")
			conn.Close(ctx)
		}
		if err == nil {
			err = pg.Restart(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		lab.postgres = "postgres://" + servers.Superuser + "@" + net.JoinHostPort(h.BridgeAddr(), strconv.Itoa(pg.Port())) + "/" + servers.Database + "?sslmode=disable"
	}
	return lab
}

// startNATS starts a private nats-server with JetStream listening on
// addr and returns its URL and its monitoring URL; it is killed when the
// test ends.
func startNATS(t testing.TB, addr string) (string, string) {
	t.Helper()
	free := func() string {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	port, mport := free(), free()
	cmd := exec.Command("nats-server", "-a", addr, "-p", port, "-m", mport, "-js", "-sd", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "nats://" + net.JoinHostPort(addr, port), "http://" + net.JoinHostPort(addr, mport)
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server on %s:%s did not come up: %s", addr, port, log.String())
		}
	}
}

// hostRun is one joined run of the lab: sp with one worker per host, each
// started in its host's namespace (the test binary in its join mode),
// with worker i's clock off by skews[i]. urls, when set, gives worker i
// another NATS URL than the lab's (a path with a delay).
type hostRun struct {
	sp       harness.Spec
	skews    []time.Duration
	spanKeys bool
	urls     map[int]string
	// hosts, when positive, runs on the first hosts only.
	hosts int
	// kill, when set, SIGKILLs worker i that long after its first keys
	// are in the store (Redis only).
	kill map[int]time.Duration
}

var runSeq struct {
	sync.Mutex
	n int
}

func (lab *nsLab) run(t testing.TB, r hostRun) (*harness.Outcome, error) {
	t.Helper()
	runSeq.Lock()
	runSeq.n++
	name := "ns" + strconv.Itoa(os.Getpid()) + "x" + strconv.Itoa(runSeq.n)
	runSeq.Unlock()
	n := lab.hosts.Len()
	if r.hosts > 0 {
		n = min(n, r.hosts)
	}
	type worker struct {
		cmd    *exec.Cmd
		stderr bytes.Buffer
		done   chan error
	}
	ws := make([]*worker, n)
	for i := range n {
		url := lab.nats
		if u, ok := r.urls[i]; ok {
			url = u
		}
		w := &worker{cmd: lab.hosts.Command(i, os.Args[0]), done: make(chan error, 1)}
		w.cmd.Env = append(os.Environ(), childEnv+"=join", "JOIN_URL="+url, "JOIN_RUN="+name, "JOIN_INDEX="+strconv.Itoa(i))
		w.cmd.Stderr = &w.stderr
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { w.done <- w.cmd.Wait() }()
		ws[i] = w
	}
	for i, d := range r.kill {
		// Worker i is in its traffic once the store holds keys of its
		// own (sharded: the run's prefix, -h<i>).
		go func() {
			rc := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(lab.redis, "redis://"), "/0")})
			defer rc.Close()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				keys, _, err := rc.Scan(context.Background(), 0, "*-h"+strconv.Itoa(i)+"-*", 1000).Result()
				if err == nil && len(keys) > 0 {
					break
				}
			}
			time.Sleep(d)
			_ = ws[i].cmd.Process.Kill()
		}()
	}
	// Every worker is gone when the run is over, however it ended.
	defer func() {
		for i, w := range ws {
			select {
			case err := <-w.done:
				if _, killed := r.kill[i]; err != nil && !killed {
					t.Errorf("worker %d in %s: %v: %s", i, lab.hosts.Name(i), err, w.stderr.String())
				}
			case <-time.After(30 * time.Second):
				_ = w.cmd.Process.Kill()
				<-w.done
				t.Errorf("worker %d in %s did not exit: killed", i, lab.hosts.Name(i))
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := Options{Join: &Join{URL: lab.nats, Run: name, Wait: 30 * time.Second, SpanKeys: r.spanKeys},
		ClockSkew: func(i int) time.Duration { return r.skews[i] }}
	return Run(ctx, r.sp, n, opts)
}

// nsSpec is the spec of a run of scenario name against backend at url.
func nsSpec(t testing.TB, name string, backend harness.Backend, url string, seed int64, d time.Duration) harness.Spec {
	t.Helper()
	sc, err := scenarios.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return harness.Spec{Engine: engines.Reference(), Backend: backend, URL: url, ScenarioName: sc.Name, Scenario: sc,
		Sink: "fenced", Overrides: harness.Overrides{Seed: seed, Duration: d}}
}

// nsSkews are the four hosts' clock offsets.
var nsSkews = []time.Duration{-50 * time.Millisecond, 50 * time.Millisecond, -25 * time.Millisecond, 25 * time.Millisecond}

// checkBounds fails t unless out's header has one measured clock bound per
// host whose offset undoes the host's skew to within the bound, and logs
// them.
func checkBounds(t *testing.T, out *harness.Outcome, skews []time.Duration) {
	t.Helper()
	clocks := out.History.Header.Clocks
	if len(clocks) != len(skews) {
		t.Fatalf("%d clock bounds, want %d: %+v", len(clocks), len(skews), clocks)
	}
	for _, c := range clocks {
		if d := c.Offset + skews[c.Worker]; d < -c.Bound || d > c.Bound {
			t.Errorf("host %d skewed %s: offset %s, bound %s: the skew is not undone to within the bound", c.Worker, skews[c.Worker], c.Offset, c.Bound)
		}
	}
}

// checkMergedLatency fails t unless the summary's latency, merged from
// the hosts' HDR histograms, is the latency measured from the merged
// history: the same calls, the same counts in every bucket.
func checkMergedLatency(t *testing.T, out *harness.Outcome) {
	t.Helper()
	if out.Latency == nil || out.Latency.Measured() == 0 {
		t.Fatal("no latency histogram from the hosts")
	}
	m := reports.Measure(out.History, reports.MeasureOptions{})
	if got, want := out.Summary.Latency.Overall, m.Overall.Stats(); got != want {
		t.Errorf("latency merged from the hosts' histograms %+v, from the history %+v", got, want)
	}
	if !out.Latency.Hist.Equals(m.Overall.Hist) {
		t.Error("the merged histogram differs from the history's")
	}
}

func logBounds(t *testing.T, out *harness.Outcome) {
	t.Helper()
	s := ""
	for _, c := range out.History.Header.Clocks {
		s += fmt.Sprintf(" host%d offset %s bound %s;", c.Worker, c.Offset.Round(time.Microsecond), c.Bound.Round(time.Microsecond))
	}
	calls, _, _ := out.History.Counts()
	t.Logf("%d calls, verdict %s; clocks:%s", calls, out.Report.Verdict, s)
}

// nsSeeds is how many seeds TestNamespaceHosts runs per backend: 1 on
// Redis and memory by default (CI's quick form), IDEM_NETNS_SEEDS on
// Redis, memory and PostgreSQL when set (the acceptance run: 10).
func nsSeeds() (int, bool) {
	if n, err := strconv.Atoi(os.Getenv("IDEM_NETNS_SEEDS")); err == nil && n > 0 {
		return n, true
	}
	return 1, false
}

// TestNamespaceHosts runs the harness with four hosts simulated by
// network namespaces: each worker runs in a namespace of its own, with its
// own address, reaches NATS and the store on the bridge's address, and its
// clock is off by ±25 or ±50 ms. Each measures its offset to the
// coordinator over NATS; the header keeps the bounds. The correct engine
// passes the default scenario (crashes and pauses, injected in each
// worker's engine) with no false alarm, and the gate's known-bad
// configurations on a persistent store are caught in a joined run as in a
// local one: crashes after the effect without recovery, and GC pauses
// with a plain sink. The correct engine passes on memory-backed workers
// too (each with its own store and ledger, sent to the coordinator).
func TestNamespaceHosts(t *testing.T) {
	needNamespaces(t)
	seeds, long := nsSeeds()
	lab := newNSLab(t, 4, long)
	type target struct {
		backend harness.Backend
		url     string
	}
	// Memory-backed workers (each owns its store and ledger, keys
	// sharded by host) run too.
	targets := []target{{harness.Redis, lab.redis}, {harness.Memory, ""}}
	if long {
		targets = append(targets, target{harness.Postgres, lab.postgres})
	}
	for _, tg := range targets {
		t.Run(string(tg.backend), func(t *testing.T) {
			for seed := int64(1); seed <= int64(seeds); seed++ {
				sp := nsSpec(t, "default", tg.backend, tg.url, seed, 1500*time.Millisecond)
				out, err := lab.run(t, hostRun{sp: sp, skews: nsSkews})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if out.Report.Verdict != checker.VerdictOK {
					t.Fatalf("seed %d: verdict %s (a false alarm): %v", seed, out.Report.Verdict, out.Report.Violations)
				}
				checkBounds(t, out, nsSkews)
				checkMergedLatency(t, out)
				// How many of the hosts' crashes and pauses fired depends
				// on how far the traffic got (a loaded machine); the
				// known-bad runs below must have them.
				t.Logf("seed %d: %d fault windows from the hosts", seed, faultWindows(out))
				logBounds(t, out)
			}
		})
	}
	for _, bad := range []struct {
		scenario   string
		noRecovery bool
		sink       string
		d          time.Duration
	}{
		{"crash-after-effect", true, "fenced", 2500 * time.Millisecond},
		{"gc-pause", false, "plain", 1500 * time.Millisecond},
	} {
		t.Run("caught/"+bad.scenario, func(t *testing.T) {
			sp := nsSpec(t, bad.scenario, harness.Redis, lab.redis, 20260101, bad.d)
			sp.NoRecovery, sp.Sink = bad.noRecovery, bad.sink
			out, err := lab.run(t, hostRun{sp: sp, skews: nsSkews})
			if err != nil {
				t.Fatal(err)
			}
			if out.Report.Verdict != checker.VerdictViolation {
				t.Fatalf("verdict %s, want the violation a local run finds", out.Report.Verdict)
			}
			checkBounds(t, out, nsSkews)
			if faultWindows(out) == 0 {
				t.Error("no crash or pause window from any host")
			}
			v := out.Report.Violations[0]
			t.Logf("caught: %d violations, first: %s %s: %s", len(out.Report.Violations), v.Invariant, v.Key, v.Message)
		})
	}
}

// delayProxy forwards TCP connections from a port on addr to target,
// holding the bytes from the client for delay and passing the answers at
// once: a path slower one way than the other, which an NTP-style
// measurement cannot tell from a clock offset (it is off by half the
// difference, and says so in its bound).
func delayProxy(t *testing.T, addr, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			type chunk struct {
				at time.Time
				b  []byte
			}
			q := make(chan chunk, 4096)
			wg.Go(func() { // client to server, delayed, in order
				defer close(q)
				for {
					b := make([]byte, 32<<10)
					n, err := c.Read(b)
					if n > 0 {
						q <- chunk{time.Now().Add(delay), b[:n]}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() {
				defer s.Close()
				for ch := range q {
					time.Sleep(time.Until(ch.at))
					if _, err := s.Write(ch.b); err != nil {
						c.Close()
						return
					}
				}
			})
			wg.Go(func() { // server to client, at once
				_, _ = io.Copy(c, s)
				c.Close()
			})
		}
	})
	return "nats://" + ln.Addr().String()
}

// TestNamespaceHostsClockWidening: host 0 reaches NATS over a path 100 ms
// slower towards the server than back, so its measured offset is about
// 50 ms wrong, and its measured bound (half the round trip) says so; its
// timestamps are that much off the coordinator's timeline. The hosts
// share keys (--join-span-keys), so a key executed on host 0 is replayed
// on the others within milliseconds. The run's history, checked with the
// measured bounds (the intervals widened), passes; the same history
// checked as if its clocks were exact gives a false violation.
func TestNamespaceHostsClockWidening(t *testing.T) {
	needNamespaces(t)
	lab := newNSLab(t, 4, false)
	const delay = 100 * time.Millisecond
	slow := delayProxy(t, lab.hosts.BridgeAddr(), lab.nats[len("nats://"):], delay)
	// A false violation needs a replay on another host within 50 ms of
	// an execution on host 0: a busy machine may record too few such
	// pairs in one run, so up to three runs (seeds) are made until one
	// shows it. Every run must pass widened.
	for seed := int64(7); seed < 10; seed++ {
		sp := nsSpec(t, "duplicates", harness.Redis, lab.redis, seed, 2*time.Second)
		out, err := lab.run(t, hostRun{sp: sp, skews: nsSkews, spanKeys: true, urls: map[int]string{0: slow}})
		if err != nil {
			t.Fatal(err)
		}
		logBounds(t, out)
		if out.Report.Verdict != checker.VerdictOK {
			t.Fatalf("seed %d, widened by the measured bounds: verdict %s: %v", seed, out.Report.Verdict, out.Report.Violations)
		}
		var c0 history.ClockBound
		for _, c := range out.History.Header.Clocks {
			if c.Worker == 0 {
				c0 = c
			}
		}
		// The measurement is off by about delay/2, within its bound.
		if miss := c0.Offset + nsSkews[0]; miss < delay/4 || miss > c0.Bound {
			t.Fatalf("host 0's offset %s misses its skew by %s, want about %s and at most its bound %s", c0.Offset, miss, delay/2, c0.Bound)
		}
		flat := *out.History
		flat.Header.Clocks = nil
		rep := checker.Check(&flat, checker.Options{})
		if rep.Verdict == checker.VerdictViolation {
			v := rep.Violations[0]
			t.Logf("seed %d without the widening: %d (false) violations, first: %s %s: %s", seed, len(rep.Violations), v.Invariant, v.Key, v.Message)
			return
		}
		t.Logf("seed %d without the widening: verdict %s (no replay close enough to an execution on host 0)", seed, rep.Verdict)
	}
	t.Fatal("three runs' histories without the clock bounds: no false violation, want one")
}

// TestNamespaceHostDies: one of four hosts dies during the traffic (its
// worker is SIGKILLed; no fault plan kills a joined worker). The run ends
// with an environment error (exit 5) that names its index, not a verdict.
func TestNamespaceHostDies(t *testing.T) {
	needNamespaces(t)
	lab := newNSLab(t, 4, false)
	sp := nsSpec(t, "duplicates", harness.Redis, lab.redis, 3, 4*time.Second)
	out, err := lab.run(t, hostRun{sp: sp, skews: nsSkews, kill: map[int]time.Duration{2: 500 * time.Millisecond}})
	if err == nil {
		t.Fatalf("host 2 died: verdict %s, want an environment error", out.Report.Verdict)
	}
	if code := checker.ExitCode(err); code != checker.ExitEnvironment {
		t.Fatalf("host 2 died: exit %d (%v), want %d", code, err, checker.ExitEnvironment)
	}
	if !strings.Contains(err.Error(), "worker 2") {
		t.Fatalf("the error does not name worker 2: %v", err)
	}
	t.Log(err)
}
