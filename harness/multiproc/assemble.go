package multiproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// assemble merges the streams, adds the coordinator's fault windows and
// the effects only the backend ledger knows (their worker died before
// recording them), and resolves every effect from the ledger.
func (co *coordinator) assemble(ctx context.Context, streams []string, lr workload.LedgerReader, hdr history.Header) (*history.History, workload.LedgerStats, error) {
	var st workload.LedgerStats
	h, err := merge(streams)
	if err != nil {
		return nil, st, err
	}
	h.Header.Start = hdr.Start
	co.mu.Lock()
	h.Ops = append(h.Ops, co.windows...)
	co.mu.Unlock()
	idx := index(h)
	entries, err := lr.ReadLedger(ctx, co.base.Prefix, idx.keys())
	if err != nil {
		return nil, st, harness.EnvironmentError(err)
	}
	led := workload.NewLedgerOf(entries)
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

// merge decodes and merges the workers' history streams.
func merge(streams []string) (*history.History, error) {
	if len(streams) == 0 {
		return nil, harness.EnvironmentError(errors.New("no worker wrote a history"))
	}
	hs := make([]*history.History, len(streams))
	for i, p := range streams {
		f, err := os.Open(p)
		if err != nil {
			return nil, harness.EnvironmentError(err)
		}
		hs[i], err = history.Decode(f)
		f.Close()
		if err != nil {
			return nil, harness.EnvironmentError(fmt.Errorf("worker stream %s: %w", filepath.Base(p), err))
		}
	}
	h, err := history.Merge(hs...)
	if err != nil {
		return nil, harness.EnvironmentError(err)
	}
	return h, nil
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

// savePartial writes to dir the history of a run cut short by its ctx: the
// workers' streams as far as they got (a worker killed by the interrupt
// may have left its last line half written; what precedes it is kept) and
// the fault windows (the workers', the coordinator's and the backend's),
// unresolved against the ledger. It returns cause,
// wrapped with what was written.
func (co *coordinator) savePartial(dir string, streams []string, hdr history.Header, cause error) error {
	var hs []*history.History
	for _, p := range streams {
		if h := readPrefix(p); h != nil {
			hs = append(hs, h)
		}
	}
	h, err := history.Merge(hs...)
	if err != nil || len(hs) == 0 {
		return fmt.Errorf("%w (history so far not written: no worker stream could be read: %v)", cause, err)
	}
	h.Header.Start = hdr.Start
	co.mu.Lock()
	h.Ops = append(h.Ops, co.windows...)
	co.mu.Unlock()
	h.Ops = append(h.Ops, co.p.Faults.Windows()...) // the backend's
	return harness.SavePartial(dir, h, cause)
}

// readPrefix decodes the stream at path up to its first unreadable line;
// nil if not even its header can be read.
func readPrefix(path string) *history.History {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	d, err := history.NewReader(f)
	if err != nil {
		return nil
	}
	h := &history.History{Header: d.Header()}
	for {
		var op history.Op
		if d.Read(&op) != nil {
			return h
		}
		h.Ops = append(h.Ops, op)
	}
}
