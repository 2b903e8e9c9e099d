//go:build linux

package netns

import (
	"bufio"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostsReachTheBridge: two namespaces, each connects from its own
// address to a listener on the bridge's address; Close leaves none of
// them behind.
func TestHostsReachTheBridge(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	h, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", h.BridgeAddr()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for i := range h.Len() {
		cmd := h.Command(i, "bash", "-c", "exec 3<>/dev/tcp/"+h.BridgeAddr()+"/"+strconv.Itoa(port)+"; echo hello >&3")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("host %d: %v: %s", i, err, out)
		}
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		from := c.RemoteAddr().(*net.TCPAddr).IP.String()
		c.Close()
		if from != h.Addr(i) || line != "hello\n" {
			t.Fatalf("host %d: %q from %s, want hello from %s", i, line, from, h.Addr(i))
		}
	}
	names := []string{h.Name(0), h.Name(1), h.tag + "br"}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	list, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "link", "show").Output()
	for _, n := range names {
		if strings.Contains(string(list), n) || strings.Contains(string(links), n) {
			t.Errorf("%s left after Close", n)
		}
	}
}
