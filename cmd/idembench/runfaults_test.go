package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// parseRunFlags parses "run" plus args with the real command line.
func parseRunFlags(t *testing.T, args []string) backendFaultFlags {
	t.Helper()
	var c cli
	p, err := kong.New(&c, kong.Vars{"scenarios": "", "naive": ""})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(append([]string{"run"}, args...)); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return c.Run.backendFaultFlags
}

// TestReplayRepeatsBackendFaults checks that the replay command carries the
// backend fault flags: run through a shell and parsed again, they give the
// same faults.
func TestReplayRepeatsBackendFaults(t *testing.T) {
	in := []string{"--restart-at", "1s,2500ms", "--redis-persistence", "aof-always",
		"--net-fault", "drop-replies@1s+400ms", "--net-fault", "latency:20ms@0s+1s", "--client-timeout", "250ms"}
	f := parseRunFlags(t, in)
	joined := strings.Join(f.replayArgs(), " ")
	out, err := exec.Command("sh", "-c", `printf '%s\n' `+joined).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	g := parseRunFlags(t, strings.Fields(string(out)))
	if !slices.Equal(f.RestartAt, g.RestartAt) || f.RedisPersistence != g.RedisPersistence ||
		!slices.Equal(f.NetFault, g.NetFault) || f.ClientTimeout != g.ClientTimeout {
		t.Fatalf("replay flags %q parse to %+v, want %+v", joined, g, f)
	}
	if len(g.RestartAt) != 2 || len(g.NetFault) != 2 {
		t.Fatalf("parsed %+v, want two restarts and two network faults", g)
	}
	if args := (&backendFaultFlags{RedisPersistence: "none"}).replayArgs(); len(args) != 0 {
		t.Fatalf("no faults: replay args %q, want none", args)
	}
}
