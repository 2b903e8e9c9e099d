// Package netlag is a loopback TCP proxy that adds a round-trip delay
// between a client and a server, so that benchmarks on one machine can pay
// what a request pays on a network (0.25 ms in one zone, about 1 ms across
// zones), and that counts the round trips its clients make.
//
// Every chunk of bytes read from one side is written to the other half
// the round-trip time later, in order. A Go timer is too coarse for this:
// an idle Go process sleeps in the runtime's network poller, which counts
// in whole milliseconds, so a 125 µs timer can take over 1 ms. On Linux
// the proxy waits on a timerfd instead, which the poller sees fire within
// microseconds; elsewhere it uses Go timers. Either way, callers that
// quote a figure measure the added round trip as it is (AddedRTT) and
// print it next to the nominal one.
//
// With Options.DropOnServerDeath the proxy is a lagged replication link
// (chaos/servers puts one between a primary and its replicas): when the
// server's side of a connection ends, what is still held towards the client
// is dropped and the client's connection reset, as a crashed host's unsent
// buffers are lost.
package netlag

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from its own loopback port to a target,
// holding every chunk for RTT/2 in each direction.
type Proxy struct {
	ln     net.Listener
	target string
	rtt    time.Duration
	drop   bool

	roundTrips, conns atomic.Int64

	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free loopback port and forwards every connection to
// target (host:port) with rtt added to each round trip. An rtt of zero
// forwards at once (the proxy then only counts); a negative one is an
// error.
func Start(target string, rtt time.Duration) (*Proxy, error) {
	return StartWith(target, rtt, Options{})
}

// Options are StartWith's less common settings.
type Options struct {
	// Listen is the address to listen on; "" is a free loopback port.
	Listen string
	// DropOnServerDeath: when the server's side of a connection ends, the
	// bytes still held towards the client are dropped and the client's
	// connection is reset, as a crashed host's unsent buffers are lost. A
	// replica behind the proxy then never receives what its primary wrote
	// in the last RTT/2 before it died.
	DropOnServerDeath bool
}

// StartWith is Start with opts.
func StartWith(target string, rtt time.Duration, opts Options) (*Proxy, error) {
	if rtt < 0 {
		return nil, fmt.Errorf("netlag: negative round-trip time %s", rtt)
	}
	addr := opts.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netlag: %w", err)
	}
	p := &Proxy{ln: ln, target: target, rtt: rtt, drop: opts.DropOnServerDeath, open: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the host:port clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port returns the port of Addr.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// RTT returns the round-trip time the proxy adds (nominally).
func (p *Proxy) RTT() time.Duration { return p.rtt }

// RoundTrips returns how many times, over all connections so far, a client
// began to send after the server had answered (or for the first time on a
// connection): the round trips the clients waited for. Pipelined requests
// sent before any answer count once.
func (p *Proxy) RoundTrips() int64 { return p.roundTrips.Load() }

// Conns returns how many client connections the proxy has accepted.
func (p *Proxy) Conns() int64 { return p.conns.Load() }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(down) {
			return
		}
		p.conns.Add(1)
		p.wg.Go(func() { p.serve(down) })
	}
}

// serve links one client connection to a new connection to the target.
func (p *Proxy) serve(down net.Conn) {
	defer p.untrack(down)
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(up) {
		return
	}
	defer p.untrack(up)
	// turn is 1 while the client is sending, 2 once the server answered.
	var turn atomic.Int32
	var links sync.WaitGroup
	links.Go(func() {
		p.link(up, down, nil, func() {
			if turn.Swap(1) != 1 {
				p.roundTrips.Add(1)
			}
		})
		_ = up.Close()
	})
	links.Go(func() {
		var upDead chan struct{}
		if p.drop {
			upDead = make(chan struct{})
		}
		p.link(down, up, upDead, func() { turn.Store(2) })
		if tc, ok := down.(*net.TCPConn); ok && p.drop {
			_ = tc.SetLinger(0) // the client sees a reset, not an orderly end
		}
		_ = down.Close()
	})
	links.Wait()
}

// chunk is bytes read at one time, due for delivery at due.
type chunk struct {
	b   []byte
	due time.Time
}

// link copies src to dst, each chunk RTT/2 after it was read; read is
// called as each chunk arrives. With srcDead non-nil, the end of src (the
// server's death) is announced by closing it, and drops the chunks still
// held instead of delivering them.
func (p *Proxy) link(dst, src net.Conn, srcDead chan struct{}, read func()) {
	if p.rtt == 0 {
		_, _ = io.Copy(dst, readNotify{src, read})
		return
	}
	lag := p.rtt / 2
	held := make(chan chunk, 4096)
	var reader sync.WaitGroup
	reader.Go(func() {
		defer close(held)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				read()
				held <- chunk{b: slices.Clone(buf[:n]), due: time.Now().Add(lag)}
			}
			if err != nil {
				if srcDead != nil {
					close(srcDead)
				}
				return
			}
		}
	})
	defer func() {
		_ = dst.Close() // unblocks a reader stuck on a full queue
		for range held {
		}
		reader.Wait()
	}()
	sl := newSleeper()
	defer sl.close()
	for c := range held {
		if d := time.Until(c.due); d > 0 {
			if srcDead == nil {
				sl.sleep(d)
			} else if !sl.sleepUnless(d, srcDead) {
				return
			}
		}
		if srcDead != nil {
			select {
			case <-srcDead:
				return
			default:
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				_ = src.Close()
			}
			return
		}
	}
}

// goTimer waits on one reusable Go timer.
type goTimer struct{ timer *time.Timer }

// sleepUnless waits d, or less if stop is closed first (a nil stop never
// is); it reports whether it waited all of d.
func (g *goTimer) sleepUnless(d time.Duration, stop <-chan struct{}) bool {
	if g.timer == nil {
		g.timer = time.NewTimer(d)
	} else {
		g.timer.Reset(d)
	}
	select {
	case <-g.timer.C:
		return true
	case <-stop:
		g.timer.Stop()
		return false
	}
}

func (g *goTimer) stop() {
	if g.timer != nil {
		g.timer.Stop()
	}
}

// readNotify calls read after every successful read of r.
type readNotify struct {
	net.Conn
	read func()
}

func (r readNotify) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	if n > 0 {
		r.read()
	}
	return n, err
}
