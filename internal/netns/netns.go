//go:build linux

// Package netns simulates hosts on one Linux machine for tests: each host
// is a network namespace with its own address on a bridge of the root
// namespace, which holds the bridge's own address (where the coordinator,
// NATS and the stores listen). It needs root and the ip command; nothing
// leaves the machine (no route, no NAT). Every name it creates carries the
// creating process's id, so that Sweep removes what a killed test left.
package netns

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// ErrUnavailable means this machine cannot create namespaces here: not
// root, or no ip command. Tests skip on it.
var ErrUnavailable = errors.New("netns: network namespaces unavailable")

// MaxHosts bounds the hosts of one Hosts (addresses .11 to .254 of its
// /24).
const MaxHosts = 200

// Hosts is a bridge and the namespaces on it.
type Hosts struct {
	tag    string   // "ib<pid>x<seq>", the prefix of every name
	subnet string   // "10.213.X"
	names  []string // the namespaces
	// cgroups are the hosts' CPU cgroups (LimitCPU), one per host in
	// order; none without a limit.
	cgroups []string
}

// Available returns nil when New can work here, else an error wrapping
// ErrUnavailable that says why.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip command in PATH", ErrUnavailable)
	}
	return nil
}

// New creates n namespaces (1 to MaxHosts), each with loopback up and a
// veth whose other end is on a new bridge: host i has the address
// Addr(i), the bridge BridgeAddr. A /24 of 10.213.0.0/16 not routed here
// already is picked. It removes what it created if it fails. Call Close
// to remove everything.
func New(n int) (*Hosts, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxHosts {
		return nil, fmt.Errorf("netns: %d hosts, want 1 to %d", n, MaxHosts)
	}
	Sweep()
	routes, _ := exec.Command("ip", "-4", "route", "show").Output()
	h := &Hosts{tag: "ib" + strconv.FormatInt(int64(os.Getpid()), 36) + "x" + strconv.FormatInt(seq.Add(1), 10)}
	for range 50 {
		s := "10.213." + strconv.Itoa(rand.IntN(254)+1)
		if !bytes.Contains(routes, []byte(s+".")) {
			h.subnet = s
			break
		}
	}
	if h.subnet == "" {
		return nil, errors.New("netns: no free /24 in 10.213.0.0/16")
	}
	if err := h.create(n); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func (h *Hosts) create(n int) error {
	br := h.tag + "br"
	if err := ip("link", "add", br, "type", "bridge"); err != nil {
		return err
	}
	if err := ip("addr", "add", h.BridgeAddr()+"/24", "dev", br); err != nil {
		return err
	}
	if err := ip("link", "set", br, "up"); err != nil {
		return err
	}
	for i := range n {
		ns, veth, peer := h.tag+"n"+strconv.Itoa(i), h.tag+"v"+strconv.Itoa(i), h.tag+"p"+strconv.Itoa(i)
		if err := ip("netns", "add", ns); err != nil {
			return err
		}
		h.names = append(h.names, ns)
		for _, args := range [][]string{
			{"link", "add", veth, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", ns},
			{"link", "set", veth, "master", br},
			{"link", "set", veth, "up"},
			{"-n", ns, "addr", "add", h.Addr(i) + "/24", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Len returns the number of hosts.
func (h *Hosts) Len() int { return len(h.names) }

// Name returns host i's namespace name.
func (h *Hosts) Name(i int) string { return h.names[i] }

// Addr returns host i's IPv4 address.
func (h *Hosts) Addr(i int) string { return h.subnet + "." + strconv.Itoa(11+i) }

// BridgeAddr returns the root namespace's address on the bridge: servers
// the hosts reach listen there.
func (h *Hosts) BridgeAddr() string { return h.subnet + ".1" }

// Command returns a command that runs name with args in host i's
// namespace (ip netns exec, which execs it: the process is the program
// itself), in the host's CPU cgroup first when it has one (LimitCPU). It
// dies with this process (SIGKILL).
func (h *Hosts) Command(i int, name string, args ...string) *exec.Cmd {
	argv := append([]string{"netns", "exec", h.names[i], name}, args...)
	if i < len(h.cgroups) {
		// The shell joins the cgroup and execs ip: the same process, in
		// the cgroup before the program runs.
		script := `echo $$ > "$0"/cgroup.procs && exec ip "$@"`
		cmd := exec.Command("sh", append([]string{"-c", script, h.cgroups[i]}, argv...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	cmd := exec.Command("ip", argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Close removes the namespaces (their veth pairs go with them), the
// bridge and the CPU cgroups. Processes still running in a namespace keep running, cut off:
// stop them first. It returns the first error and is idempotent.
func (h *Hosts) Close() error {
	var first error
	for _, ns := range h.names {
		if err := ip("netns", "del", ns); err != nil && first == nil {
			first = err
		}
	}
	h.names = nil
	if linkExists(h.tag + "br") {
		if err := ip("link", "del", h.tag+"br"); err != nil && first == nil {
			first = err
		}
	}
	if err := h.removeCgroups(); err != nil && first == nil {
		first = err
	}
	return first
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", name).Run() == nil
}

// seq tells apart the Hosts of one process.
var seq atomic.Int64

var ownName = regexp.MustCompile(`^ib([0-9a-z]+)x[0-9]+(n[0-9]+|br)$`)

// Sweep removes the namespaces and bridges of processes that no longer
// run (a test killed before its Close). It is best effort.
func Sweep() {
	dead := func(name string) bool {
		m := ownName.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, err := strconv.ParseInt(m[1], 36, 64)
		if err != nil {
			return false
		}
		return syscall.Kill(int(pid), 0) == syscall.ESRCH
	}
	sweepCgroups(dead)
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && dead(f[0]) {
				_ = ip("netns", "del", f[0])
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && dead(strings.TrimSuffix(f[1], ":")) {
				_ = ip("link", "del", strings.TrimSuffix(f[1], ":"))
			}
		}
	}
}
