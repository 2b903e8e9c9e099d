package backendfault_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/backendfault"
	_ "github.com/idembench/idembench/chaos/backendfault/netproxy" // the network faults
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

// TestFailoverFiresOnceAfterComplete: a failover plan moves the store to
// the topology's URL (the Sentinels', or a Cluster's), fires only at
// PointAfterComplete while running, once, and records the window on the
// lease's key.
func TestFailoverFiresOnceAfterComplete(t *testing.T) {
	testenv.RedisURL(t) // the servers' binaries are required where the servers are
	for _, tc := range []struct {
		kind    backendfault.FailoverKind
		urlPart string
	}{
		{backendfault.RedisSentinel, "master_name="},
		{backendfault.RedisCluster, backendfault.ClusterParam + "=true"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) { failoverFiresOnce(t, tc.kind, tc.urlPart) })
	}
}

func failoverFiresOnce(t *testing.T, kind backendfault.FailoverKind, urlPart string) {
	ctx := context.Background()
	fo, stop, err := backendfault.StartFailover(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	plan := &backendfault.Plan{Failover: fo}
	env, url, err := backendfault.Open(ctx, plan, "redis://127.0.0.1:6379/0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if url != fo.URL || !strings.Contains(url, urlPart) {
		t.Fatalf("store URL %q, want the failover URL %q", url, fo.URL)
	}
	lease := idem.Lease{Key: "k1"}
	hookAt(t, env, lease, idem.PointAfterComplete)
	if ws := env.Windows(); len(ws) != 0 {
		t.Fatalf("fired before Start: %v", ws)
	}
	t0 := history.Now()
	env.Start()
	hookAt(t, env, lease, idem.PointAfterAcquire, idem.PointAfterFn, idem.PointAfterComplete, idem.PointAfterComplete)
	ws := stopWindows(t, env, 0)
	if len(ws) != 1 || ws[0].Kind != history.KindFault || ws[0].Key != "k1" || ws[0].Call < t0 || ws[0].Return <= ws[0].Call ||
		!strings.Contains(ws[0].Label, "promoted") {
		t.Fatalf("windows %+v, want one promotion on k1", ws)
	}
}

func TestFailoverPlanErrors(t *testing.T) {
	if _, err := backendfault.ParseFailoverKind("redis-raft"); !errors.Is(err, backendfault.ErrPlan) {
		t.Fatalf("unknown kind: %v", err)
	}
	for _, k := range backendfault.FailoverKinds {
		got, err := backendfault.ParseFailoverKind(string(k))
		if err != nil || got != k {
			t.Fatalf("%s: %v %v", k, got, err)
		}
	}
	plan := &backendfault.Plan{Failover: &backendfault.Failover{URL: "redis://x:1"}, Faults: []chaos.Fault{{Kind: history.FaultRestart, Start: time.Second}}, Server: fakeServer{}}
	if _, _, err := backendfault.Open(context.Background(), plan, "redis://y:1", 1); !errors.Is(err, backendfault.ErrPlan) {
		t.Fatalf("failover with restarts: %v, want ErrPlan", err)
	}
}

type fakeServer struct{}

func (fakeServer) URL() string                   { return "redis://z:1" }
func (fakeServer) Restart(context.Context) error { return nil }

// TestAimFiresOnceAfterFn: an aimed network fault is switched on at the
// first PointAfterFn while running, only once, and off after its length,
// with its window recorded.
func TestAimFiresOnceAfterFn(t *testing.T) {
	redisURL := testenv.RedisURL(t)
	plan := &backendfault.Plan{
		Faults: []chaos.Fault{{Kind: history.FaultLatency, Latency: time.Millisecond, Start: time.Hour, Duration: time.Second}},
		Aim:    &chaos.Fault{Kind: history.FaultPartition, Point: chaos.AimPoint, Duration: 50 * time.Millisecond},
	}
	env, _, err := backendfault.Open(context.Background(), plan, redisURL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.Start()
	hookAt(t, env, idem.Lease{Key: "k"}, idem.PointAfterComplete, idem.PointAfterFn, idem.PointAfterFn)
	ws := stopWindows(t, env, 100*time.Millisecond)
	if len(ws) != 1 || ws[0].Label != "net partition" || ws[0].Return-ws[0].Call < int64(50*time.Millisecond) {
		t.Fatalf("windows %+v, want one partition of at least 50ms", ws)
	}
	bad := &backendfault.Plan{Aim: plan.Aim}
	if _, _, err := backendfault.Open(context.Background(), bad, redisURL, 1); !errors.Is(err, backendfault.ErrPlan) {
		t.Fatalf("aim without network faults: %v, want ErrPlan", err)
	}
}

// TestAimedRestart: an aimed restart kills the private server at the first
// PointAfterFn while running, starts it again, and records the window on
// the lease's key.
func TestAimedRestart(t *testing.T) {
	testenv.RedisURL(t)
	ctx := context.Background()
	srv, label, stop, err := backendfault.StartServer(ctx, "redis", true)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	plan := &backendfault.Plan{Server: srv, RestartLabel: label,
		Aim: &chaos.Fault{Kind: history.FaultRestart, Point: chaos.AimPoint, Duration: 50 * time.Millisecond}}
	env, url, err := backendfault.Open(ctx, plan, "redis://127.0.0.1:6379/0", 1)
	if err != nil || url != srv.URL() {
		t.Fatalf("open: %v, url %q", err, url)
	}
	defer env.Close()
	env.Start()
	hookAt(t, env, idem.Lease{Key: "k", Token: 7}, idem.PointAfterFn, idem.PointAfterFn)
	ws := stopWindows(t, env, 20*time.Millisecond)
	if len(ws) != 1 || ws[0].Fault != history.FaultRestart || !strings.Contains(ws[0].Label, "aimed") || ws[0].Key != "k" || ws[0].Return-ws[0].Call < int64(50*time.Millisecond) {
		t.Fatalf("windows %+v, want one aimed restart of at least 50ms on k", ws)
	}
}

// TestFailoverAfterEffect: on a synchronous topology the failover fires at
// PointAfterFn (not after a completion), once; the primary stays dead
// until the hold ends or, as here, the run stops, and the window names the
// key, the kill and the promotion.
func TestFailoverAfterEffect(t *testing.T) {
	testenv.RedisURL(t)
	ctx := context.Background()
	fo, stop, err := backendfault.StartFailover(ctx, backendfault.RedisWait)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fo.Hold = time.Hour // only the end of the run can end it here
	env, _, err := backendfault.Open(ctx, &backendfault.Plan{Failover: fo}, "redis://127.0.0.1:6379/0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	lease := idem.Lease{Key: "k1", Token: 7}
	env.Start()
	hookAt(t, env, lease, idem.PointAfterAcquire, idem.PointAfterComplete)
	if ws := env.Windows(); len(ws) != 0 {
		t.Fatalf("fired before an effect: %+v", ws)
	}
	hookAt(t, env, lease, idem.PointAfterFn, idem.PointAfterFn)
	start := time.Now()
	env.Stop()
	if took := time.Since(start); took >= time.Minute {
		t.Errorf("Stop took %v: the hold did not end with the run", took)
	}
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
	ws := env.Windows()
	if len(ws) != 1 || ws[0].Fault != history.FaultFailover || ws[0].Key != "k1" || ws[0].Token != 7 || ws[0].Return <= ws[0].Call ||
		!strings.Contains(ws[0].Label, "right after the effect of k1") || !strings.Contains(ws[0].Label, "promoted") {
		t.Fatalf("windows %+v, want one kill after the effect of k1 and its promotion", ws)
	}
}

// hookAt calls env's hook at each of points in turn for lease; an error
// fails t.
func hookAt(t *testing.T, env backendfault.Env, lease idem.Lease, points ...idem.Point) {
	t.Helper()
	hook := env.(backendfault.Hooker).Hook()
	for _, p := range points {
		if err := hook(context.Background(), p, lease); err != nil {
			t.Fatalf("hook at %s: %v", p, err)
		}
	}
}

// stopWindows stops env after settle and returns the fault windows it
// recorded; an error of env fails t.
func stopWindows(t *testing.T, env backendfault.Env, settle time.Duration) []history.Op {
	t.Helper()
	time.Sleep(settle)
	env.Stop()
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
	return env.Windows()
}

func TestOpenRejectsBadPlans(t *testing.T) {
	reset := chaos.Fault{Kind: history.FaultReset, Duration: time.Second}
	aimed := chaos.Fault{Kind: history.FaultPartition, Point: chaos.AimPoint, Duration: time.Second}
	cases := []struct {
		name string
		plan backendfault.Plan
		url  string
	}{
		{"restarts without a server", backendfault.Plan{Faults: []chaos.Fault{{Kind: history.FaultRestart, Start: time.Second}}}, "redis://127.0.0.1:6379/0"},
		{"network fault without a host", backendfault.Plan{Faults: []chaos.Fault{reset}}, "memory"},
		{"network fault on an unknown scheme", backendfault.Plan{Faults: []chaos.Fault{reset}}, "mongo://db"},
		{"crash in the engine", backendfault.Plan{Faults: []chaos.Fault{{Kind: history.FaultCrash, Count: 1}}}, "redis://127.0.0.1:6379/0"},
		{"aimed fault at an offset", backendfault.Plan{Faults: []chaos.Fault{reset}, Aim: &reset}, "redis://127.0.0.1:6379/0"},
		{"timed fault with a point", backendfault.Plan{Faults: []chaos.Fault{aimed}}, "redis://127.0.0.1:6379/0"},
		{"aimed network fault without a proxy", backendfault.Plan{Aim: &aimed}, "redis://127.0.0.1:6379/0"},
		{"failover with an aim", backendfault.Plan{Failover: &backendfault.Failover{}, Aim: &aimed}, "redis://127.0.0.1:6379/0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := backendfault.Open(context.Background(), &c.plan, c.url, 1); !errors.Is(err, backendfault.ErrPlan) {
				t.Fatalf("err %v, want ErrPlan", err)
			}
		})
	}
	if _, _, stop, err := backendfault.StartServer(context.Background(), "memory", false); !errors.Is(err, backendfault.ErrPlan) || stop == nil {
		t.Fatalf("private server for memory: %v, want ErrPlan and a stop function", err)
	}
	env, url, err := backendfault.Open(context.Background(), nil, "redis://x:1", 1)
	if err != nil || url != "redis://x:1" || env == nil {
		t.Fatalf("nil plan: %v %q %v", env, url, err)
	}
}

// TestNetworkFaultsNeedAProxy: a program that links no proxy (no import
// of netproxy, as harness alone) rejects a plan with network faults as a
// configuration error that names the package to import, and still opens
// one without. Not parallel: it removes the proxy this test binary links
// while it runs.
func TestNetworkFaultsNeedAProxy(t *testing.T) {
	if backendfault.RegisteredProxy() == nil {
		t.Fatal("the test binary links no proxy: netproxy's import did not register it")
	}
	prev := backendfault.RegisterProxy(nil)
	defer backendfault.RegisterProxy(prev)
	plan := &backendfault.Plan{Faults: []chaos.Fault{{Kind: history.FaultPartition, Start: time.Second, Duration: time.Second}}}
	_, _, err := backendfault.Open(context.Background(), plan, "redis://127.0.0.1:6379/0", 1)
	if !errors.Is(err, backendfault.ErrPlan) || !errors.Is(err, backendfault.ErrNoProxy) || !strings.Contains(err.Error(), "backendfault/netproxy") {
		t.Fatalf("network faults without a proxy: %v, want ErrPlan and ErrNoProxy naming netproxy", err)
	}
	env, url, err := backendfault.Open(context.Background(), &backendfault.Plan{ClientTimeout: time.Second}, "redis://127.0.0.1:6379/0", 1)
	if err != nil || url != "redis://127.0.0.1:6379/0" {
		t.Fatalf("plan without network faults: %v %q", err, url)
	}
	env.Close()
}

// TestNetworkWindowsRecorded: a network fault plan puts a proxy in front of
// a real Redis, switches the fault on and off on the schedule and records
// its window.
func TestNetworkWindowsRecorded(t *testing.T) {
	redisURL := testenv.RedisURL(t)
	plan := &backendfault.Plan{Faults: []chaos.Fault{{Kind: history.FaultPartition, Start: 20 * time.Millisecond, Duration: 50 * time.Millisecond}}}
	env, url, err := backendfault.Open(context.Background(), plan, redisURL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if url == redisURL || !strings.HasPrefix(url, "redis://127.0.0.1:") {
		t.Fatalf("store URL %q does not point at the proxy", url)
	}
	t0 := history.Now()
	env.Start()
	time.Sleep(150 * time.Millisecond)
	env.Stop()
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
	ws := env.Windows()
	if len(ws) != 1 || ws[0].Label != "net partition" || ws[0].Call < t0 || ws[0].Return <= ws[0].Call {
		t.Fatalf("windows %+v", ws)
	}
	if ws[0].Kind != history.KindFault || ws[0].Fault != history.FaultPartition || ws[0].Worker != -1 {
		t.Fatalf("window is not a fault op: %+v", ws[0])
	}
}
