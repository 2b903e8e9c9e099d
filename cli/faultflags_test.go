package cli

import (
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// parseRunFlags parses "run" plus args with the real command line.
func parseRunFlags(t *testing.T, args []string) faultFlags {
	t.Helper()
	var c commands
	p, err := kong.New(&c, kong.Vars{"scenarios": "", "engines": ""})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(append([]string{"run"}, args...)); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return c.Run.faultFlags
}

// TestReplayRepeatsBackendFaults checks that the replay command carries the
// backend fault flags: run through a shell and parsed again, they give the
// same faults.
func TestReplayRepeatsBackendFaults(t *testing.T) {
	for _, in := range [][]string{
		{"--restart-at", "1s,2500ms", "--redis-persistence", "aof-always",
			"--net-fault", "drop-replies@1s+400ms", "--net-fault", "latency:20ms@0s+1s", "--client-timeout", "250ms"},
		{"--restart-at", "700ms,1.4s", "--aim-restart", "1s"},
		{"--aim-restart", "1s", "--redis-persistence", "aof-always"},
		{"--net-fault", "latency:20ms~10ms@200ms+200ms", "--net-fault", "partition@1.4s+300ms", "--aim-net", "partition+1s"},
	} {
		f := parseRunFlags(t, in)
		joined := strings.Join(f.replayArgs(), " ")
		out, err := exec.Command("sh", "-c", `printf '%s\n' `+joined).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		g := parseRunFlags(t, strings.Fields(string(out)))
		want, err := f.schedule()
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got, err := g.schedule()
		if err != nil {
			t.Fatalf("replay flags %q: %v", joined, err)
		}
		if !slices.Equal(got.Faults, want.Faults) || !reflect.DeepEqual(got.Aim, want.Aim) ||
			got.ClientTimeout != want.ClientTimeout || f.RedisPersistence != g.RedisPersistence {
			t.Fatalf("%q: replay flags %q parse to %+v, want %+v", in, joined, got, want)
		}
		if len(want.Faults) == 0 && want.Aim == nil {
			t.Fatalf("%q: parsed no fault", in)
		}
	}
	if args := (&faultFlags{RedisPersistence: "none"}).replayArgs(); len(args) != 0 {
		t.Fatalf("no faults: replay args %q, want none", args)
	}
}

// TestAimFlagsRefused: an aimed fault the run cannot inject is a usage
// error before anything starts.
func TestAimFlagsRefused(t *testing.T) {
	for _, in := range [][]string{
		{"--aim-net", "partition+1s"},
		{"--aim-net", "partition@1s+1s", "--net-fault", "reset@0s+1s"},
		{"--aim-net", "flood+1s", "--net-fault", "reset@0s+1s"},
		{"--aim-net", "partition+1s", "--net-fault", "reset@0s+1s", "--aim-restart", "1s"},
		{"--aim-restart=-1s"},
		{"--aim-restart", "1s", "--failover", "redis-wait"},
	} {
		f := parseRunFlags(t, in)
		if _, err := f.schedule(); err == nil || exitCode(err) != 2 {
			t.Errorf("%q: err %v, want a usage error", in, err)
		}
	}
}

// TestThresholdsMerge: a flag replaces the scenario's threshold of the same
// figure, the others stay, and --ignore-scenario-thresholds drops the
// scenario's.
func TestThresholdsMerge(t *testing.T) {
	sc := &scenarios.Scenario{Thresholds: scenarios.Thresholds{MaxP99: time.Second, MinThroughput: 100, MaxErrorRate: 0.1}}
	cases := []struct {
		flags thresholdFlags
		want  reports.Thresholds
	}{
		{thresholdFlags{}, reports.Thresholds{MaxP99: time.Second, MinThroughput: 100, MaxErrorRate: 0.1}},
		{thresholdFlags{MaxP99: 5 * time.Millisecond}, reports.Thresholds{MaxP99: 5 * time.Millisecond, MinThroughput: 100, MaxErrorRate: 0.1}},
		{thresholdFlags{MinThroughput: 7, IgnoreScenarioThresholds: true}, reports.Thresholds{MinThroughput: 7}},
		{thresholdFlags{IgnoreScenarioThresholds: true}, reports.Thresholds{}},
	}
	for _, c := range cases {
		if got := c.flags.thresholds(sc); got != c.want {
			t.Errorf("%+v: thresholds %+v, want %+v", c.flags, got, c.want)
		}
	}
}
