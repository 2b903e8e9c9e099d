package consume_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy is a TCP proxy in front of a broker: kill cuts every connection
// through it and refuses new ones, as a broker that died would.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	dead   bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

// newProxy starts a proxy to the host of rawURL and returns it with
// rawURL rewritten to go through it. The proxy is killed at the end of t.
func newProxy(t *testing.T, rawURL string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: u.Host}
	p.wg.Go(p.accept)
	t.Cleanup(p.kill)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.dead {
			p.mu.Unlock()
			c.Close()
			b.Close()
			return
		}
		p.conns = append(p.conns, c, b)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(b, c); b.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, b); c.Close() })
	}
}

// kill closes the listener and every connection, and waits for the
// proxy's goroutines. It is idempotent.
func (p *proxy) kill() {
	p.ln.Close()
	p.mu.Lock()
	p.dead = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
