package backendfault

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

// Proxy is the network side of a plan: a TCP proxy on loopback between
// the store and its server that turns network faults on and off and
// records a window for each. *netfault.Proxy implements it.
type Proxy interface {
	// Addr is where the proxy listens, 127.0.0.1:PORT.
	Addr() string
	// On turns network fault f on until Off is called for its kind.
	On(f chaos.Fault) error
	// Off turns the fault of kind k off, closing its window.
	Off(k history.FaultKind) error
	// Heal turns every fault off.
	Heal() error
	// Windows returns the recorded fault windows.
	Windows() []history.Op
	// Close heals and stops the proxy.
	Close() error
}

// ProxyStarter starts the Proxy of a plan with network faults, listening
// on loopback and forwarding to upstream ("host:port"), its windows on the
// history's clock (history.Now); seed seeds its latency jitter.
type ProxyStarter func(ctx context.Context, upstream string, seed uint64) (Proxy, error)

// ErrNoProxy is wrapped (with ErrPlan) by Open for a plan with network
// faults when the program links no ProxyStarter.
var ErrNoProxy = errors.New("network faults need a proxy, and this program links none (import github.com/idembench/idembench/chaos/backendfault/netproxy)")

var proxyStarter atomic.Pointer[ProxyStarter]

// RegisterProxy makes start the ProxyStarter of the network faults of
// every plan Open opens, and returns the one it replaces (nil when there
// was none); nil removes it. Package chaos/backendfault/netproxy registers
// chaos/netfault's proxy when it is imported, as the idembench CLI does.
// The harness does not import it, so that a program that injects no
// network fault (a store author's test through harness/harnesstest) does
// not link the embedded toxiproxy.
func RegisterProxy(start ProxyStarter) (previous ProxyStarter) {
	var old *ProxyStarter
	if start == nil {
		old = proxyStarter.Swap(nil)
	} else {
		old = proxyStarter.Swap(&start)
	}
	if old == nil {
		return nil
	}
	return *old
}

// RegisteredProxy returns the ProxyStarter of network faults, nil when
// the program links none.
func RegisteredProxy() ProxyStarter {
	if p := proxyStarter.Load(); p != nil {
		return *p
	}
	return nil
}
