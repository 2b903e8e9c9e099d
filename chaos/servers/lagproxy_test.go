//go:build linux

package servers

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestLagProxy: bytes reach the other side no sooner than the lag, in both
// directions, and bytes still held when the target's side ends are dropped
// and the client's connection is reset.
func TestLagProxy(t *testing.T) {
	const lag = 150 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	p, err := startLagProxy(ln.Addr().String(), lag)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client, err := net.Dial("tcp", loopback(p.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	if server == nil {
		t.Fatal("proxy never connected to the target")
	}

	// client → server and back, each held for the lag.
	start := time.Now()
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("server read %q, %v", buf, err)
	}
	if d := time.Since(start); d < lag {
		t.Errorf("client → server took %v, less than the lag %v", d, lag)
	}
	start = time.Now()
	if _, err := server.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
	if d := time.Since(start); d < lag {
		t.Errorf("server → client took %v, less than the lag %v", d, lag)
	}

	// The target writes, then dies within the lag: the client never sees
	// those bytes, only the end of the connection.
	if _, err := server.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	server.Close()
	_ = client.SetReadDeadline(time.Now().Add(5 * lag))
	n, err := client.Read(buf)
	if n != 0 || err == nil {
		t.Errorf("client read %q, %v after the target died; want nothing and an error", buf[:n], err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	assertPortFree(t, p.Port())
}
