package multiproc

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// history returns the run's history so far: what the workers sent and
// the coordinator's fault windows, under hdr.
func (co *coordinator) history(hdr history.Header) *history.History {
	co.mu.Lock()
	defer co.mu.Unlock()
	h := &history.History{Header: hdr, Ops: make([]history.Op, 0, len(co.ops)+len(co.windows))}
	h.Ops = append(append(h.Ops, co.ops...), co.windows...)
	return h
}

// assemble merges the workers' histories, adds the coordinator's fault
// windows and the effects only the ledger knows (their worker died before
// recording them), and resolves every effect from the ledger: the
// backend's, or the merge of those memory-backed workers sent.
func (co *coordinator) assemble(ctx context.Context, lr ledgerSource, hdr history.Header) (*history.History, workload.LedgerStats, error) {
	var st workload.LedgerStats
	if !co.sent() {
		return nil, st, harness.EnvironmentError(errors.New("no worker sent a history"))
	}
	h := co.history(hdr)
	idx := index(h)
	entries, err := lr.ReadLedger(ctx, co.base.Prefix, idx.keys())
	if err != nil {
		return nil, st, harness.EnvironmentError(err)
	}
	led := workload.NewLedgerOf(entries)
	if lr == &co.sentLedger {
		// A ledger sent over the protocol must hold every effect the
		// histories sent with it record as applied.
		if err := checkLedgerHolds(h, led); err != nil {
			return nil, st, err
		}
	}
	for _, e := range entries {
		h.Ops = append(h.Ops, idx.missing(e)...)
	}
	history.SortByCall(h.Ops)
	// The backend ledger is the whole truth: an effect it lacks was not
	// applied (rejected, or rolled back with its transaction).
	h.ResolveEffects(func(op *history.Op) (bool, bool) {
		applied, _ := led.Lookup(op.Key, op.Exec)
		return applied, true
	})
	return h, led.Stats(), nil
}

type execID struct{ key, exec string }

type gaveUpKey struct {
	key    string
	client int
}

// opIndex is what the merged history says about each key and execution.
type opIndex struct {
	keySet map[string]struct{}
	fps    map[string]string
	seen   map[execID]struct{}    // effects recorded
	called map[execID]struct{}    // executions a recorded call names
	gaveUp map[gaveUpKey]struct{} // calls a client gave up on (timeout)
}

func index(h *history.History) *opIndex {
	x := &opIndex{keySet: map[string]struct{}{}, fps: map[string]string{}, seen: map[execID]struct{}{},
		called: map[execID]struct{}{}, gaveUp: map[gaveUpKey]struct{}{}}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Key != "" {
			x.keySet[op.Key] = struct{}{}
		}
		switch op.Kind {
		case history.KindEffect:
			x.seen[execID{op.Key, op.Exec}] = struct{}{}
		case history.KindCall:
			if op.Exec != "" && clientOf(op.Exec) == op.Client {
				// The execution's own call (a replay names it too).
				x.called[execID{op.Key, op.Exec}] = struct{}{}
			}
			if op.Outcome == history.Unknown {
				// A call the client gave up on (timeout): it stands for
				// whatever execution it started.
				x.gaveUp[gaveUpKey{op.Key, op.Client}] = struct{}{}
			}
			if _, ok := x.fps[op.Key]; !ok && op.Outcome != history.Mismatch {
				x.fps[op.Key] = op.FP
			}
		}
	}
	return x
}

func (x *opIndex) keys() []string {
	out := make([]string, 0, len(x.keySet))
	for k := range x.keySet {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// missing returns the ops the history lacks for an applied effect e: the
// effect itself when its worker died before recording it, and its call
// when that was in flight as its worker was killed.
func (x *opIndex) missing(e workload.Applied) []history.Op {
	var out []history.Op
	id := execID{e.Key, e.Exec}
	client := clientOf(e.Exec)
	if _, ok := x.seen[id]; !ok {
		out = append(out, history.Op{Kind: history.KindEffect, Client: client, Worker: -1, Key: e.Key,
			Token: uint64(e.Token), Exec: e.Exec, Call: e.At, Return: history.NoReturn, Applied: true,
			Err: "acknowledgement lost with its worker; found in the backend ledger"})
	}
	_, covered := x.gaveUp[gaveUpKey{e.Key, client}]
	if _, ok := x.called[id]; !ok && !covered {
		// The worker saves its history before it dies, while its other
		// clients go on for a moment: the client never got an answer, and
		// the call may have completed.
		out = append(out, history.Op{Kind: history.KindCall, Client: client, Worker: -1, Key: e.Key,
			Attempt: 1, FP: x.fps[e.Key], Exec: e.Exec, Call: e.At - 1, Return: history.NoReturn, Outcome: history.Unknown,
			Err: "call in flight when its worker was killed"})
	}
	return out
}

// clientOf parses the client id out of an execution id "<client>.<seq>".
func clientOf(exec string) int {
	s, _, _ := strings.Cut(strings.TrimPrefix(exec, "p"), ".")
	n, _ := strconv.Atoi(s)
	return n
}

// savePartial writes to dir the history of a run cut short by its ctx:
// what the workers sent (a worker killed by the interrupt may have sent
// nothing) and the fault windows (the coordinator's and the backend's),
// unresolved against the ledger. It returns cause, wrapped with what was
// written.
func (co *coordinator) savePartial(dir string, hdr history.Header, cause error) error {
	h := co.history(hdr)
	h.Ops = append(h.Ops, co.p.Faults.Windows()...) // the backend's
	history.SortByCall(h.Ops)
	return harness.SavePartial(dir, h, cause)
}
