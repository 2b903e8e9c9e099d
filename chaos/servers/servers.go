//go:build unix

package servers

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotFound means a server binary was not found. The error names the
	// binary and where it was looked for.
	ErrNotFound = errors.New("servers: binary not found")
	// ErrStopped is returned by Restart after Stop (or StopAll).
	ErrStopped = errors.New("servers: server stopped")
	// ErrNoUser means PostgreSQL cannot be started: this process runs as
	// root, which PostgreSQL refuses, and the unprivileged user to run it as
	// does not exist.
	ErrNoUser = errors.New("servers: no unprivileged user to run PostgreSQL as")
	// ErrDown is returned by Health for a server that is down without this
	// package having brought it down: killed from outside or crashed, or
	// stopped with SIGSTOP.
	ErrDown = errors.New("servers: server down")
)

// stopper is a live server, tracked for StopAll.
type stopper interface{ Stop() error }

var live = struct {
	sync.Mutex
	servers map[stopper]struct{}
}{servers: map[stopper]struct{}{}}

func register(s stopper) {
	live.Lock()
	live.servers[s] = struct{}{}
	live.Unlock()
}

func unregister(s stopper) {
	live.Lock()
	delete(live.servers, s)
	live.Unlock()
}

// stopGuard is the lock of a server or topology and whether it was
// stopped: its methods that must not run after Stop (Restart, Failover,
// Kill, ...) check stopped under mu.
type stopGuard struct {
	mu      sync.Mutex
	stopped bool
}

// adopt appends v, a part of a topology being started, to *list under g's
// lock, unless the topology was stopped meanwhile: then it stops v and
// returns an error wrapping ErrStopped.
func adopt[T any](g *stopGuard, list *[]T, v T, stop func() error) error {
	g.mu.Lock()
	stopped := g.stopped
	if !stopped {
		*list = append(*list, v)
	}
	g.mu.Unlock()
	if stopped {
		return errors.Join(ErrStopped, stop())
	}
	return nil
}

// stopOnce is every Stop: the first call unregisters s and runs stop under
// the lock; later calls return nil.
func (g *stopGuard) stopOnce(s stopper, stop func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return nil
	}
	g.stopped = true
	unregister(s)
	return stop()
}

// StopAll stops every server this process started and has not stopped yet,
// concurrently, and returns their errors joined. It is safe to call from a
// signal handler goroutine while other goroutines use the servers, and more
// than once; a server it stopped answers Restart with ErrStopped and Stop
// with nil. A Restart in progress finishes (bounded by its context) before
// its server is stopped.
func StopAll() error {
	live.Lock()
	all := make([]stopper, 0, len(live.servers))
	for s := range live.servers {
		all = append(all, s)
	}
	live.Unlock()
	return stopAll(all)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// caller must cope with losing a race for it (callers retry on a new port).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("servers: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portAttempts is how many free ports a start tries when the caller left the
// port to it and another process took the one picked.
const portAttempts = 3

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func checkPort(port int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("servers: port %d out of range", port)
	}
	return nil
}
