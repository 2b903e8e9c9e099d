//go:build unix

package servers

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// lagProxy forwards TCP connections from its own loopback port to a target,
// holding every chunk of bytes for lag in each direction: a replication
// link with latency. When the target side of a connection ends (its server
// died), the bytes still held towards the client are dropped and the
// client's connection is reset, as a crashed host's unsent buffers are
// lost: a replica behind the proxy never receives what its primary wrote
// in the last lag before it died.
type lagProxy struct {
	ln     net.Listener
	target string
	lag    time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startLagProxy listens on a free loopback port and forwards to target.
func startLagProxy(target string, lag time.Duration) (*lagProxy, error) {
	return startLagProxyOn("127.0.0.1:0", target, lag)
}

// startLagProxyOn listens on addr and forwards to target. A lag of zero
// forwards every chunk at once.
func startLagProxyOn(addr, target string, lag time.Duration) (*lagProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("servers: lag proxy: %w", err)
	}
	p := &lagProxy{ln: ln, target: target, lag: lag, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// port returns the port the proxy listens on.
func (p *lagProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Close stops accepting, closes every connection and waits for every
// goroutine of the proxy. It is idempotent.
func (p *lagProxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track records c for Close; it returns false (and closes c) once the proxy
// is closed.
func (p *lagProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *lagProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *lagProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(down) {
			return
		}
		p.wg.Go(func() { p.serve(down) })
	}
}

// serve links one client connection to a new connection to the target.
func (p *lagProxy) serve(down net.Conn) {
	defer p.untrack(down)
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil || !p.track(up) {
		return
	}
	defer p.untrack(up)
	upDead := make(chan struct{})
	var links sync.WaitGroup
	links.Go(func() {
		// Target → client. The target's end of the link ends it all: drop
		// what is held and reset the client.
		p.link(down, up, upDead)
		if tc, ok := down.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = down.Close()
	})
	links.Go(func() {
		p.link(up, down, nil)
		_ = up.Close()
	})
	links.Wait()
}

// chunk is bytes read at one time, due for delivery at due.
type chunk struct {
	b   []byte
	due time.Time
}

// link copies src to dst, each chunk lag after it was read. With srcDead
// non-nil, the end of src (the target's death) drops the chunks still held
// instead of delivering them.
func (p *lagProxy) link(dst, src net.Conn, srcDead chan struct{}) {
	held := make(chan chunk, 4096)
	var reader sync.WaitGroup
	reader.Go(func() {
		defer close(held)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				held <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.lag)}
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
		_ = dst.Close() // unblocks a reader stuck on a full queue's writer
		for range held {
		}
		reader.Wait()
	}()
	for c := range held {
		if d := time.Until(c.due); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-srcDead: // nil when not asked: blocks forever
				t.Stop()
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
