package netlag

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer answers every line with the same line, until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

// TestProxyForwardsAndCounts sends lines through the proxy one at a time
// and then pipelined: every byte comes back in order, each awaited line is
// one round trip and the pipelined ones are one together, and no answer
// comes back sooner than the round-trip time the proxy adds.
func TestProxyForwardsAndCounts(t *testing.T) {
	for _, rtt := range []time.Duration{0, 2 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			p, err := Start(echoServer(t), rtt)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for i := range 5 {
				line := strings.Repeat("x", i*100) + "\n"
				t0 := time.Now()
				if _, err := io.WriteString(c, line); err != nil {
					t.Fatal(err)
				}
				got, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(t0); took < rtt {
					t.Errorf("line %d came back in %s, under the round trip of %s", i, took, rtt)
				}
				if got != line {
					t.Fatalf("line %d came back as %d bytes, want %d", i, len(got), len(line))
				}
			}
			if _, err := io.WriteString(c, "a\nb\nc\n"); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"a\n", "b\n", "c\n"} {
				if got, err := r.ReadString('\n'); err != nil || got != want {
					t.Fatalf("pipelined: got %q, %v; want %q", got, err, want)
				}
			}
			// Five awaited lines, then the pipelined three in one flight
			// (the proxy may see them in more than one read, but the
			// server has not answered in between).
			if n := p.RoundTrips(); n != 6 {
				t.Errorf("RoundTrips() = %d, want 6", n)
			}
			if n := p.Conns(); n != 1 {
				t.Errorf("Conns() = %d, want 1", n)
			}
		})
	}
}

// TestAddedRTT measures the proxy on an echo server: the added round
// trip is at least the nominal one. It logs the figure.
func TestAddedRTT(t *testing.T) {
	addr := echoServer(t)
	for _, rtt := range []time.Duration{250 * time.Microsecond, time.Millisecond} {
		p, err := Start(addr, rtt)
		if err != nil {
			t.Fatal(err)
		}
		ping := func(addr string) func() error {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			buf := make([]byte, 1)
			return func() error {
				if _, err := c.Write([]byte{'.'}); err != nil {
					return err
				}
				_, err := io.ReadFull(c, buf)
				return err
			}
		}
		added, err := AddedRTT(50, ping(addr), ping(p.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("nominal %s: added %s", rtt, added)
		if added < rtt*9/10 {
			t.Errorf("nominal %s: measured only %s added", rtt, added)
		}
		_ = p.Close()
	}
}

func TestStartRefusesNegative(t *testing.T) {
	if _, err := Start("127.0.0.1:1", -time.Millisecond); err == nil {
		t.Fatal("Start with a negative round trip: no error")
	}
}
