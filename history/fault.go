package history

import (
	"fmt"
	"slices"
	"strings"
)

// FaultKind names what a fault does. It is the one list of fault kinds:
// the planned faults of every command (chaos.Fault, the --net-fault and
// --faults flags, the faults of a scenario file) and the recorded ones
// (Op.Fault) use these names. The zero FaultKind is "no kind": the fault
// ops of histories written before kinds were recorded carry it.
type FaultKind string

// The fault kinds, in the order of FaultKinds.
const (
	// FaultCrash abandons one execution at a point of its run, in the
	// engine or by killing the worker process that runs it; its lease
	// stays until it expires, as a crashed process would leave it.
	FaultCrash FaultKind = "crash"
	// FaultPause stalls one execution or process (in the engine at a
	// point, or SIGSTOP then SIGCONT) and lets it go on as if nothing
	// happened.
	FaultPause FaultKind = "pause"
	// FaultKill kills the service under test with SIGKILL and starts it
	// again after the fault's duration.
	FaultKill FaultKind = "kill"
	// FaultStop stops a worker or consumer in order (SIGTERM, or its
	// channel closed) between two messages and puts a new one in its
	// place.
	FaultStop FaultKind = "stop"
	// FaultRestart crashes a backend or broker server and starts it
	// again on the same port and data.
	FaultRestart FaultKind = "restart"
	// FaultFailover kills the primary of a replicated backend and
	// promotes a replica.
	FaultFailover FaultKind = "failover"
	// FaultLatency delays every reply on a link by a latency ± jitter.
	FaultLatency FaultKind = "latency"
	// FaultReset resets every connection of a link as soon as a byte
	// flows on it.
	FaultReset FaultKind = "reset"
	// FaultDropReplies lets requests through a link and drops every
	// reply, so the client cannot tell whether its request was applied.
	FaultDropReplies FaultKind = "drop-replies"
	// FaultPartition lets nothing through a link in either direction.
	FaultPartition FaultKind = "partition"
	// FaultClockSkew sets a client's clock ahead or behind true time by
	// an offset, so that it judges leases by a wrong clock.
	FaultClockSkew FaultKind = "clock-skew"
)

// FaultKinds lists every FaultKind, in a fixed order: faults of an
// execution or process first, then of a server, then of a link.
var FaultKinds = []FaultKind{FaultCrash, FaultPause, FaultKill, FaultStop, FaultRestart, FaultFailover,
	FaultLatency, FaultReset, FaultDropReplies, FaultPartition, FaultClockSkew}

// Valid reports whether k is one of FaultKinds; the zero FaultKind is
// not.
func (k FaultKind) Valid() bool { return slices.Contains(FaultKinds, k) }

// Network reports whether k is a fault of a link (latency, reset,
// drop-replies, partition), which a fault proxy injects.
func (k FaultKind) Network() bool {
	return k == FaultLatency || k == FaultReset || k == FaultDropReplies || k == FaultPartition
}

// String returns k's name as scenario files and flags spell it.
func (k FaultKind) String() string { return string(k) }

// ParseFaultKind returns the kind named s, or an error that lists the
// names of want (every kind when want is empty).
func ParseFaultKind(s string, want ...FaultKind) (FaultKind, error) {
	if len(want) == 0 {
		want = FaultKinds
	}
	if k := FaultKind(s); slices.Contains(want, k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown fault kind %q (want %s)", s, JoinFaultKinds(want))
}

// JoinFaultKinds returns the names of ks, comma-separated, for messages
// and help texts.
func JoinFaultKinds(ks []FaultKind) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Fault returns the operation of one fault window: kind says what the
// fault did, label describes it for a reader, and it lasts from start to
// end on the run's timeline (end == start for an instant, such as a
// crash; NoReturn for one that never healed). It belongs to no client and
// no worker; OnWorker, OnClient and OnKey say whom it hit. Every fault
// window of a history is built here.
func Fault(kind FaultKind, label string, start, end int64) Op {
	return Op{Kind: KindFault, Fault: kind, Client: -1, Worker: -1, Label: label, Call: start, Return: end}
}

// OnWorker returns op as it happened to worker process i.
func (op Op) OnWorker(i int) Op {
	op.Worker = i
	return op
}

// OnClient returns op as it happened to client (or consumer) i, run by
// the worker of the same number.
func (op Op) OnClient(i int) Op {
	op.Client, op.Worker = i, i
	return op
}

// OnKey returns op as it hit the holder of key with the given fencing token.
func (op Op) OnKey(key string, token uint64) Op {
	op.Key, op.Token = key, token
	return op
}

// FaultCounts counts the fault ops of a history by kind; the fault ops
// without a kind (histories written before kinds were recorded) count
// under the zero FaultKind.
type FaultCounts map[FaultKind]int

// CountFaults returns the fault ops of ops by kind, or nil when there is
// none.
func CountFaults(ops []Op) FaultCounts {
	var c FaultCounts
	for i := range ops {
		if ops[i].Kind != KindFault {
			continue
		}
		if c == nil {
			c = FaultCounts{}
		}
		c[ops[i].Fault]++
	}
	return c
}

// String returns the counts in the order of FaultKinds, as "crash 6,
// pause 5", with the faults of no kind last as "other N"; "" for none.
func (c FaultCounts) String() string {
	var parts []string
	for _, k := range FaultKinds {
		if n := c[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	other := 0
	for k, n := range c {
		if !k.Valid() {
			other += n
		}
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("other %d", other))
	}
	return strings.Join(parts, ", ")
}
