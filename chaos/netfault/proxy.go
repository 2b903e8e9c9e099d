package netfault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotLoopback means the upstream address is not on this machine's
	// loopback interface. The proxy only ever forwards to 127.0.0.0/8, ::1
	// or "localhost".
	ErrNotLoopback = errors.New("netfault: upstream is not a loopback address")
	// ErrClosed is returned by every fault method after Close.
	ErrClosed = errors.New("netfault: proxy closed")
)

// Options configures New. The zero value is usable.
type Options struct {
	// Clock returns the current time, in nanoseconds, on the timeline the
	// fault windows are recorded on; successive calls must not decrease. A
	// harness passes the clock of its history (history.Now) so that windows
	// and operations share one timeline. Nil means nanoseconds since New on
	// this process's monotonic clock, plus one.
	Clock func() int64
	// Seed seeds the generator that draws latency jitter. Zero is a valid
	// seed.
	Seed uint64
}

// Proxy is a TCP proxy on 127.0.0.1 that forwards every connection to one
// upstream server and injects faults into the traffic. Its methods are safe
// for concurrent use.
type Proxy struct {
	clock    func() int64
	upstream string
	addr     string
	tp       *toxiproxy.Proxy
	sh       *shared

	mu      sync.Mutex
	active  map[history.FaultKind]*active
	windows []history.Op
	closed  bool
}

// active is a fault that is on: its toxics and the index of its open window.
type active struct {
	fault  chaos.Fault
	toxics []toxic
	window int
}

// New starts a proxy listening on 127.0.0.1 on a free port and forwarding
// every accepted connection to upstream ("host:port"). upstream must be on
// the loopback interface: an IP literal in 127.0.0.0/8 or ::1, or
// "localhost" (resolved with ctx, every address must be loopback); anything
// else fails with ErrNotLoopback before any traffic. New does not connect to
// upstream: the proxy dials it once per accepted connection, and a client
// whose upstream is down sees its connection closed.
//
// No fault is on at first. Close stops the proxy.
func New(ctx context.Context, upstream string, opts Options) (*Proxy, error) {
	if err := checkLoopback(ctx, upstream); err != nil {
		return nil, err
	}
	clock := opts.Clock
	if clock == nil {
		start := time.Now()
		clock = func() int64 { return int64(time.Since(start)) + 1 }
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	tp := toxiproxy.NewProxy(server, "netfault", "127.0.0.1:0", upstream)
	sh := newShared(opts.Seed)
	// The guards go in before Start, so every connection has them right
	// after toxiproxy's head stub; fault toxics are appended after them.
	for _, stream := range []string{"upstream", "downstream"} {
		tx, err := addToxic(tp, toxic{Name: "netfault_guard_" + stream, Type: guardType, Stream: stream, Toxicity: 1})
		if err != nil {
			return nil, err
		}
		g := tx.(*guard)
		g.sh, g.delay = sh, stream == "downstream"
	}
	if err := tp.Start(); err != nil {
		return nil, fmt.Errorf("netfault: listen: %w", err)
	}
	return &Proxy{
		clock:    clock,
		upstream: upstream,
		addr:     tp.Listen, // the bound address, set by Start
		tp:       tp,
		sh:       sh,
		active:   map[history.FaultKind]*active{},
	}, nil
}

// checkLoopback returns nil if hostport names a loopback address.
func checkLoopback(ctx context.Context, hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port == "" {
		return fmt.Errorf("netfault: upstream %q: want host:port", hostport)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%w: %s", ErrNotLoopback, hostport)
		}
		return nil
	}
	if host != "localhost" {
		return fmt.Errorf("%w: %s (use an IP literal or localhost)", ErrNotLoopback, hostport)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("netfault: resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("%w: %s resolves to %s", ErrNotLoopback, host, ip)
		}
	}
	return nil
}

// Addr returns the proxy's listening address, 127.0.0.1:PORT. Clients
// connect here instead of to the upstream.
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Close removes every fault (ending its window), stops accepting, and closes
// every proxied connection. It is idempotent; Windows still answers after
// it, and every fault method returns ErrClosed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	err := p.healLocked()
	p.closed = true
	p.sh.close() // guards drop what they hold and close their connections
	p.tp.Stop()  // stops accepting and closes every connection
	return err
}
