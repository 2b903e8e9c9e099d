package netfault

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Kind names a network fault.
type Kind string

// The network faults. The package doc says what each does to a request.
const (
	// KindLatency delays every reply by Fault.Latency ± Fault.Jitter.
	KindLatency Kind = "latency"
	// KindReset resets every connection as soon as a byte flows on it.
	KindReset Kind = "reset"
	// KindDropReplies lets requests reach the server and drops every reply.
	KindDropReplies Kind = "drop-replies"
	// KindPartition lets nothing pass in either direction.
	KindPartition Kind = "partition"
)

// Kinds lists every Kind, in a fixed order.
var Kinds = []Kind{KindLatency, KindReset, KindDropReplies, KindPartition}

// Fault is one network fault to switch on.
type Fault struct {
	// Kind is the fault.
	Kind Kind
	// Latency is the delay added to each reply, for KindLatency only. It
	// must be positive.
	Latency time.Duration
	// Jitter, for KindLatency only, makes each delay uniform in
	// [Latency-Jitter, Latency+Jitter), drawn from the proxy's seeded
	// generator. Zero means none; it must not exceed Latency.
	Jitter time.Duration
}

// Validate reports the first rule f breaks, or nil.
func (f Fault) Validate() error {
	switch f.Kind {
	case KindLatency:
		switch {
		case f.Latency <= 0:
			return fmt.Errorf("netfault: latency %s: want a positive delay", f.Latency)
		case f.Jitter < 0 || f.Jitter > f.Latency:
			return fmt.Errorf("netfault: jitter %s: want between 0 and the latency %s", f.Jitter, f.Latency)
		}
	case KindReset, KindDropReplies, KindPartition:
		if f.Latency != 0 || f.Jitter != 0 {
			return fmt.Errorf("netfault: %s takes no latency or jitter", f.Kind)
		}
	default:
		return fmt.Errorf("netfault: unknown fault kind %q (want one of %v)", f.Kind, Kinds)
	}
	return nil
}

// Label describes f for a fault window: "latency 50ms±10ms" (or
// "latency 50ms" without jitter), "reset", "drop-replies" or "partition".
func (f Fault) Label() string {
	switch {
	case f.Kind != KindLatency:
		return string(f.Kind)
	case f.Jitter == 0:
		return fmt.Sprintf("latency %s", f.Latency)
	}
	return fmt.Sprintf("latency %s±%s", f.Latency, f.Jitter)
}

// Window is the time one fault was on, on the clock of Options.Clock. Open
// is true while the fault is still on; End is then zero.
type Window struct {
	Kind  Kind
	Label string
	Start int64
	End   int64
	Open  bool
}

// Latency delays every reply by d ± jitter until Off(KindLatency) or Heal;
// see Fault for the limits. Requests reach the server undelayed, so a client
// that gives up on a delayed reply does not know that its request was
// applied. Replies keep their order. Calling Latency while a latency fault is
// on changes the delay in place (replies already queued get the new delay)
// and starts a new window. When the fault ends, queued replies go out at
// once.
func (p *Proxy) Latency(d, jitter time.Duration) error {
	return p.On(Fault{Kind: KindLatency, Latency: d, Jitter: jitter})
}

// Reset resets connections until Off(KindReset) or Heal: as soon as a byte
// flows on a connection, in either direction, the byte is dropped and the
// connection is closed (with a TCP RST for connections opened during the
// window, an orderly close for older ones). A request sent during the
// window never reaches the server; one whose reply is caught was applied.
func (p *Proxy) Reset() error { return p.On(Fault{Kind: KindReset}) }

// DropRepliesAfterApply switches on the ambiguous fault until
// Off(KindDropReplies) or Heal: requests still reach the server and are
// applied, every reply is dropped, and connections stay open, so the client
// times out without knowing the outcome. Connection handshakes lose their
// replies too, so new connections hang. When the fault ends, every
// connection that was open during it is closed: its reply stream lost bytes.
func (p *Proxy) DropRepliesAfterApply() error { return p.On(Fault{Kind: KindDropReplies}) }

// Partition cuts the link until Off(KindPartition) or Heal: nothing passes in
// either direction and nothing is closed, so clients time out; requests sent
// during it never reach the server. New connections are still accepted by
// the proxy (which dials the upstream) but carry no bytes. When the fault
// ends, every connection that was open during it is closed.
func (p *Proxy) Partition() error { return p.On(Fault{Kind: KindPartition}) }

// On switches f on and opens its window. Faults of different kinds stack.
// Switching on a kind that is already on does nothing, except for
// KindLatency with a different delay or jitter, which is changed in place
// (ending the old window and opening a new one). On returns ErrClosed after
// Close.
func (p *Proxy) On(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
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
	if f.Kind == KindLatency {
		p.sh.setLatency(f.Latency, f.Jitter)
	}
	p.active[f.Kind] = &active{fault: f, toxics: ts, window: p.openWindow(f, p.clock())}
	return nil
}

// Off switches the fault of kind k off and closes its window. It does
// nothing if k is not on; it returns ErrClosed after Close.
func (p *Proxy) Off(k Kind) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.offLocked(k, p.clock())
}

func (p *Proxy) offLocked(k Kind, now int64) error {
	a, ok := p.active[k]
	if !ok {
		return nil
	}
	delete(p.active, k)
	p.closeWindow(a.window, now)
	if k == KindLatency {
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

// Inject switches f on, waits d or until ctx is done, and switches it off.
// It returns f's validation error, ErrClosed, or ctx's error if the wait was
// cut short (the fault is switched off all the same). If f's kind was
// already on, Inject switches it off at the end anyway.
func (p *Proxy) Inject(ctx context.Context, f Fault, d time.Duration) error {
	if err := p.On(f); err != nil {
		return err
	}
	t := time.NewTimer(d)
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
func (p *Proxy) Active() []Kind {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ks []Kind
	for _, k := range Kinds {
		if _, ok := p.active[k]; ok {
			ks = append(ks, k)
		}
	}
	return ks
}

// Windows returns a copy of every fault window so far, in the order the
// faults were switched on; those still on have Open set.
func (p *Proxy) Windows() []Window {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.windows)
}

func (p *Proxy) openWindow(f Fault, now int64) int {
	p.windows = append(p.windows, Window{Kind: f.Kind, Label: f.Label(), Start: now, Open: true})
	return len(p.windows) - 1
}

func (p *Proxy) closeWindow(i int, now int64) {
	p.windows[i].End, p.windows[i].Open = max(now, p.windows[i].Start), false
}
