package history_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/history"
)

func TestFault(t *testing.T) {
	cases := []struct {
		name string
		got  history.Op
		want history.Op
	}{
		{"window", history.Fault(history.FaultPartition, "net partition", 10, 20),
			history.Op{Kind: history.KindFault, Fault: history.FaultPartition, Client: -1, Worker: -1, Label: "net partition", Call: 10, Return: 20}},
		{"worker", history.Fault(history.FaultPause, "SIGSTOP", 5, 9).OnWorker(2),
			history.Op{Kind: history.KindFault, Fault: history.FaultPause, Client: -1, Worker: 2, Label: "SIGSTOP", Call: 5, Return: 9}},
		{"key", history.Fault(history.FaultCrash, "crash", 7, 7).OnWorker(1).OnKey("k", 4),
			history.Op{Kind: history.KindFault, Fault: history.FaultCrash, Client: -1, Worker: 1, Key: "k", Token: 4, Label: "crash", Call: 7, Return: 7}},
		{"client", history.Fault(history.FaultStop, "restart consumer 3", 8, 8).OnClient(3),
			history.Op{Kind: history.KindFault, Fault: history.FaultStop, Client: 3, Worker: 3, Label: "restart consumer 3", Call: 8, Return: 8}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, c.got); d != "" {
				t.Fatalf("(-want +got)\n%s", d)
			}
			if err := c.got.Validate(); err != nil {
				t.Fatalf("a fault window does not validate: %v", err)
			}
		})
	}
}

func TestFaultKinds(t *testing.T) {
	seen := map[history.FaultKind]bool{}
	for _, k := range history.FaultKinds {
		if !k.Valid() || seen[k] {
			t.Errorf("kind %q: valid %v, listed twice %v", k, k.Valid(), seen[k])
		}
		seen[k] = true
		if got, err := history.ParseFaultKind(k.String()); err != nil || got != k {
			t.Errorf("ParseFaultKind(%q) = %q, %v", k, got, err)
		}
	}
	if len(seen) != 11 || !seen[history.FaultClockSkew] {
		t.Errorf("FaultKinds = %v, want the 11 kinds with clock-skew", history.FaultKinds)
	}
	if history.FaultKind("").Valid() {
		t.Error("the zero kind is valid")
	}
	net := []history.FaultKind{history.FaultLatency, history.FaultReset, history.FaultDropReplies, history.FaultPartition}
	for _, k := range history.FaultKinds {
		want := false
		for _, n := range net {
			want = want || n == k
		}
		if k.Network() != want {
			t.Errorf("%s.Network() = %v", k, k.Network())
		}
	}
	_, err := history.ParseFaultKind("kill", history.FaultCrash, history.FaultPause)
	if err == nil || err.Error() != `unknown fault kind "kill" (want crash, pause)` {
		t.Errorf("ParseFaultKind outside want = %v", err)
	}
}

func TestCountFaults(t *testing.T) {
	ops := []history.Op{
		history.Fault(history.FaultPause, "", 1, 2),
		{Kind: history.KindCall, Outcome: history.Executed, Resp: "r", Call: 1, Return: 2},
		history.Fault(history.FaultCrash, "", 3, 3),
		history.Fault(history.FaultCrash, "", 4, 4),
		{Kind: history.KindFault, Client: -1, Worker: -1, Label: "an old fault without a kind", Call: 5, Return: 6},
	}
	c := history.CountFaults(ops)
	if d := cmp.Diff(history.FaultCounts{history.FaultCrash: 2, history.FaultPause: 1, "": 1}, c); d != "" {
		t.Errorf("CountFaults (-want +got)\n%s", d)
	}
	if got, want := c.String(), "crash 2, pause 1, other 1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if c := history.CountFaults(ops[1:2]); c != nil || c.String() != "" {
		t.Errorf("no faults: %v %q", c, c.String())
	}
}
