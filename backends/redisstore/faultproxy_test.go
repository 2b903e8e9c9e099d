package redisstore

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault modes of faultProxy.
const (
	passThrough  int32 = iota
	dropReplies        // requests reach Redis, replies are discarded
	cutAfterNext       // the next request reaches Redis, then the connection is cut (once)
)

// faultProxy is a TCP proxy on loopback between a client and Redis that
// loses replies on request: the fault-injecting connection the tests use
// instead of mocks.
type faultProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// startFaultProxy proxies to target until t ends.
func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.upstream(c, s) })
		p.wg.Go(func() { p.downstream(c, s) })
	}
}

// upstream copies requests from the client c to the server s.
func (p *faultProxy) upstream(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
			if p.mode.CompareAndSwap(cutAfterNext, passThrough) {
				time.Sleep(20 * time.Millisecond) // let Redis run it
				_ = c.Close()
				_ = s.Close()
				return
			}
		}
		if err != nil {
			_ = s.Close()
			return
		}
	}
}

// downstream copies replies from s to c unless replies are being dropped.
func (p *faultProxy) downstream(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && p.mode.Load() != dropReplies {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = c.Close()
			return
		}
	}
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
