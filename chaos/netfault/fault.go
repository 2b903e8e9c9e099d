package netfault

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

// Kinds lists the fault kinds a Proxy injects, in a fixed order.
var Kinds = []history.FaultKind{history.FaultLatency, history.FaultReset, history.FaultDropReplies, history.FaultPartition}

// validate checks that the proxy can switch f on: a network kind with
// valid parameters. The timing fields of f (Start, Point, Duration) are
// its caller's.
func validate(f chaos.Fault) error {
	if !f.Kind.Network() {
		return fmt.Errorf("netfault: a proxy injects %s, not %q", history.JoinFaultKinds(Kinds), f.Kind)
	}
	return f.Validate(0)
}

// link returns what the proxy keeps of f: its kind and parameters.
func link(f chaos.Fault) chaos.Fault {
	return chaos.Fault{Kind: f.Kind, Latency: f.Latency, Jitter: f.Jitter}
}

// Latency delays every reply by d ± jitter until Off(history.FaultLatency)
// or Heal; see chaos.Fault for the limits. Requests reach the server undelayed, so a client
// that gives up on a delayed reply does not know that its request was
// applied. Replies keep their order. Calling Latency while a latency fault is
// on changes the delay in place (replies already queued get the new delay)
// and starts a new window. When the fault ends, queued replies go out at
// once.
func (p *Proxy) Latency(d, jitter time.Duration) error {
	return p.On(chaos.Fault{Kind: history.FaultLatency, Latency: d, Jitter: jitter})
}

// Reset resets connections until Off(history.FaultReset) or Heal: as soon as a byte
// flows on a connection, in either direction, the byte is dropped and the
// connection is closed (with a TCP RST for connections opened during the
// window, an orderly close for older ones). A request sent during the
// window never reaches the server; one whose reply is caught was applied.
func (p *Proxy) Reset() error { return p.On(chaos.Fault{Kind: history.FaultReset}) }

// DropRepliesAfterApply switches on the ambiguous fault until
// Off(history.FaultDropReplies) or Heal: requests still reach the server and are
// applied, every reply is dropped, and connections stay open, so the client
// times out without knowing the outcome. Connection handshakes lose their
// replies too, so new connections hang. When the fault ends, every
// connection that was open during it is closed: its reply stream lost bytes.
func (p *Proxy) DropRepliesAfterApply() error {
	return p.On(chaos.Fault{Kind: history.FaultDropReplies})
}

// Partition cuts the link until Off(history.FaultPartition) or Heal: nothing passes in
// either direction and nothing is closed, so clients time out; requests sent
// during it never reach the server. New connections are still accepted by
// the proxy (which dials the upstream) but carry no bytes. When the fault
// ends, every connection that was open during it is closed.
func (p *Proxy) Partition() error { return p.On(chaos.Fault{Kind: history.FaultPartition}) }

// On switches f on and opens its window; only f's kind, latency and
// jitter matter (its timing is the caller's), and the kind must be one of
// Kinds. Faults of different kinds stack. Switching on a kind that is
// already on does nothing, except for a latency with a different delay or
// jitter, which is changed in place (ending the old window and opening a
// new one). On returns ErrClosed after Close.
func (p *Proxy) On(f chaos.Fault) error {
	if err := validate(f); err != nil {
		return err
	}
	f = link(f)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if a, ok := p.active[f.Kind]; ok {
		if a.fault == f {
			return nil
		}
		p.sh.setLatency(f.Latency, f.Jitter) // only latency has parameters
		now := p.clock()
		p.closeWindow(a.window, now)
		a.fault, a.window = f, p.openWindow(f, now)
		return nil
	}
	ts := toxicsFor(f)
	for i, t := range ts {
		if err := p.addToxic(t); err != nil {
			for _, added := range ts[:i] {
				_ = p.removeToxic(added)
			}
			return err
		}
	}
	if f.Kind == history.FaultLatency {
		p.sh.setLatency(f.Latency, f.Jitter)
	}
	p.active[f.Kind] = &active{fault: f, toxics: ts, window: p.openWindow(f, p.clock())}
	return nil
}

// Off switches the fault of kind k off and closes its window. It does
// nothing if k is not on; it returns ErrClosed after Close.
func (p *Proxy) Off(k history.FaultKind) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.offLocked(k, p.clock())
}

func (p *Proxy) offLocked(k history.FaultKind, now int64) error {
	a, ok := p.active[k]
	if !ok {
		return nil
	}
	delete(p.active, k)
	p.closeWindow(a.window, now)
	if k == history.FaultLatency {
		p.sh.setLatency(0, 0)
	}
	var first error
	for _, t := range a.toxics {
		if err := p.removeToxic(t); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Heal switches every fault off, closing their windows at one instant. It
// returns ErrClosed after Close.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.healLocked()
}

func (p *Proxy) healLocked() error {
	now := p.clock()
	var first error
	for _, k := range Kinds {
		if err := p.offLocked(k, now); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Inject switches f on, waits f.Duration or until ctx is done, and
// switches it off. It returns f's validation error, ErrClosed, or ctx's
// error if the wait was cut short (the fault is switched off all the
// same). If f's kind was already on, Inject switches it off at the end
// anyway.
func (p *Proxy) Inject(ctx context.Context, f chaos.Fault) error {
	if err := p.On(f); err != nil {
		return err
	}
	t := time.NewTimer(f.Duration)
	defer t.Stop()
	var werr error
	select {
	case <-t.C:
	case <-ctx.Done():
		werr = context.Cause(ctx)
	}
	if err := p.Off(f.Kind); err != nil {
		return err
	}
	return werr
}

// Active returns the kinds of the faults that are on, in the order of Kinds.
func (p *Proxy) Active() []history.FaultKind {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ks []history.FaultKind
	for _, k := range Kinds {
		if _, ok := p.active[k]; ok {
			ks = append(ks, k)
		}
	}
	return ks
}

// Windows returns every fault window so far, in the order the faults were
// switched on, as the fault ops of the history (history.Fault of the
// fault's kind, labelled "net " and the fault's Label, on the clock of
// Options.Clock). A fault still on has Return history.NoReturn.
func (p *Proxy) Windows() []history.Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.windows)
}

func (p *Proxy) openWindow(f chaos.Fault, now int64) int {
	p.windows = append(p.windows, history.Fault(f.Kind, "net "+f.Label(), now, history.NoReturn))
	return len(p.windows) - 1
}

func (p *Proxy) closeWindow(i int, now int64) {
	p.windows[i].Return = max(now, p.windows[i].Call)
}
