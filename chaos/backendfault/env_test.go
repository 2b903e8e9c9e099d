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
	"github.com/idembench/idembench/internal/testenv"
)

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
