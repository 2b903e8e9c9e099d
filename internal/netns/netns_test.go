//go:build linux

package netns

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestLimitCPU: with a CPU limit, a host's process runs in the host's
// cgroup, whose quota is the limit; Close removes the cgroups.
func TestLimitCPU(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	h, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.LimitCPU(0); err == nil {
		t.Fatal("a limit of 0 cores was taken")
	}
	if err := h.LimitCPU(0.25); errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	for i := range h.Len() {
		out, err := h.Command(i, "cat", "/proc/self/cgroup").CombinedOutput()
		if err != nil {
			t.Fatalf("host %d: %v: %s", i, err, out)
		}
		if !strings.Contains(string(out), "/"+h.Name(i)+"\n") {
			t.Fatalf("host %d's process is not in its cgroup %s:\n%s", i, h.Name(i), out)
		}
	}
	quota := filepath.Join(h.cgroups[0], "cpu.cfs_quota_us")
	if _, v2, _ := cgroupRoot(); v2 {
		quota = filepath.Join(h.cgroups[0], "cpu.max")
	}
	if b, err := os.ReadFile(quota); err != nil || !strings.HasPrefix(string(b), "25000") {
		t.Fatalf("quota %q, %v: want 25000 of 100000 µs", b, err)
	}
	// A busy loop on host 0 for 300 ms at a quarter of a core is
	// throttled in some of its periods.
	if out, err := h.Command(0, "timeout", "0.3", "sh", "-c", "while :; do :; done").CombinedOutput(); err != nil && !strings.Contains(err.Error(), "124") {
		t.Fatalf("busy loop: %v: %s", err, out)
	}
	if periods, throttled, err := h.Throttled(0); err != nil || periods == 0 || throttled == 0 {
		t.Fatalf("host 0 after a busy loop: %d periods, %d throttled, %v: want some throttled", periods, throttled, err)
	}
	if _, _, err := h.Throttled(5); err == nil {
		t.Fatal("Throttled of a host that does not exist: no error")
	}
	dirs := slices.Clone(h.cgroups)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Close: %v", d, err)
		}
	}
}
