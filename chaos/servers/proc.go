//go:build unix

package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// exitTimeout bounds every wait for a signalled server to exit.
const exitTimeout = 15 * time.Second

// proc is one started server process, the leader of its own process group.
// A goroutine reaps it; done is closed once it has been reaped.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result; read only after done is closed
	log  string
	// ended is set before this package signals the process to end (kill,
	// shutdown, Kill): an exit after it is planned, any other is not.
	ended atomic.Bool
}

// startProc starts bin with args in dir, its stdout and stderr appended to
// logPath, in a new process group that receives SIGKILL when this process
// dies (Linux). cred, when non-nil, runs it as another user.
//
// The child is forked from a fresh goroutine: on Linux the parent-death
// signal fires when the forking OS thread exits, and a new goroutine is never
// locked to a thread that might exit early (runtime.LockOSThread).
func startProc(bin string, args []string, dir, logPath string, cred *syscall.Credential) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("servers: open log: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr(cred)
	started := make(chan error, 1)
	go func() { started <- cmd.Start() }()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("servers: start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process id, which is also the process group id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited and been reaped.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the leader only. It is a no-op once the leader has
// been reaped (os.Process guards against PID reuse).
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// signalGroup sends sig to the whole process group. It does nothing once the
// leader has been reaped: then the group id may in principle be reused.
func (p *proc) signalGroup(sig syscall.Signal) {
	if !p.exited() {
		_ = killGroup(p.pid(), sig)
	}
}

// waitExit waits up to d for the leader to exit and be reaped.
func (p *proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// kill sends SIGKILL to the process group and waits until the leader has been
// reaped and (bounded by exitTimeout) every other process of the server is
// gone (see waitGone). It does
// nothing if the leader had already been reaped: its group was then waited
// for by an earlier kill, or it died on its own and its group id may no
// longer be ours.
func (p *proc) kill() error {
	if p.exited() {
		return nil
	}
	p.ended.Store(true)
	p.signalGroup(syscall.SIGKILL)
	if !p.waitExit(exitTimeout) {
		return fmt.Errorf("servers: process %d did not exit after SIGKILL", p.pid())
	}
	return p.waitGone(exitTimeout)
}

// shutdown sends sig to the leader (a server's own shutdown signal) and
// waits for it and every other process of the server to exit (see
// waitGone), escalating to kill after exitTimeout. It does nothing if the leader had already been reaped.
func (p *proc) shutdown(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	p.ended.Store(true)
	p.signal(sig)
	if !p.waitExit(exitTimeout) {
		return p.kill()
	}
	return p.waitGone(exitTimeout)
}

// waitGone polls until no process of the group and none working in the
// server's directory is left (zombies aside), or d passes; then it kills
// the stragglers one by one and reports them. It is called after the leader
// was reaped, within seconds, so the group id cannot have been reused yet.
func (p *proc) waitGone(d time.Duration) error {
	return waitLeftovers(p.pid(), p.cmd.Dir, d)
}

// waitLeftovers is waitGone for a group and directory.
func waitLeftovers(pgid int, dir string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		left := leftovers(pgid, dir)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return fmt.Errorf("servers: processes %v of %s still alive after %s; killed", left, dir, d)
		}
		time.Sleep(wait)
	}
}

// inDir reports whether path is dir or inside it. A working directory that
// was removed reads as "PATH (deleted)" in /proc.
func inDir(path, dir string) bool {
	path = strings.TrimSuffix(path, " (deleted)")
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// health returns nil while the process runs, or after it exited because
// this package ended it; otherwise an error wrapping ErrDown that names the
// server (name), its process and what happened to it: an exit nobody here
// asked for (a crash, a SIGKILL from outside) or a stop (SIGSTOP).
func (p *proc) health(name string) error {
	if p.exited() {
		if p.ended.Load() {
			return nil
		}
		how := "exited"
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			how = "exited with status " + strconv.Itoa(ee.ExitCode())
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				how = "was killed by " + unix.SignalName(ws.Signal())
			}
		}
		return fmt.Errorf("%w: %s (pid %d) %s, not by this package (killed from outside, or crashed)", ErrDown, name, p.pid(), how)
	}
	if processStopped(p.pid()) {
		return fmt.Errorf("%w: %s (pid %d) is stopped (SIGSTOP): it answers nothing until it gets SIGCONT", ErrDown, name, p.pid())
	}
	return nil
}

// logTail returns the last lines of the server's log for error messages.
func (p *proc) logTail() string { return tailFile(p.log, 2048) }

// tailFile returns up to max trailing bytes of path, trimmed, or "".
func tailFile(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	if i := bytes.IndexByte(b, '\n'); i >= 0 && int64(len(b)) == max {
		b = b[i+1:] // drop the partial first line
	}
	return strings.TrimSpace(string(b))
}

// errExited is returned while waiting for a server that exited on its own.
var errExited = errors.New("server process exited during start-up")

// pollReady calls ready until it returns nil, the process exits, or ctx is
// done. Retries back off from 10 to 100 milliseconds.
func pollReady(ctx context.Context, p *proc, ready func(ctx context.Context) error) error {
	var last error
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		if p.exited() {
			return errExited
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), last)
		case <-p.done:
			t.Stop()
			return errExited
		case <-t.C:
		}
	}
}

// withStartTimeout bounds ctx by d when it has no deadline of its own.
func withStartTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// server is what Postgres and Redis share: one server process on a
// loopback port fixed at start, in a directory of its own or the caller's.
type server struct {
	dir     string
	tempDir bool // made by makeTempDir: removed by Stop and by a failed start
	port    int  // fixed at start; Restart reuses it

	stopGuard // serializes Restart and Stop
	p         atomic.Pointer[proc]
}

// spawnFunc starts a server's process on port and waits until it is ready;
// on error the process is gone.
type spawnFunc func(ctx context.Context, port int) (*proc, error)

// useDir sets the server's directory: a new temporary one when dir is
// empty, else dir made absolute and created with perm if missing.
func (s *server) useDir(kind, dir string, perm os.FileMode) error {
	if dir == "" {
		d, err := makeTempDir(kind)
		if err != nil {
			return err
		}
		s.dir, s.tempDir = d, true
		return nil
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("servers: %s dir: %w", kind, err)
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("servers: %s dir: %w", kind, err)
	}
	s.dir = d
	return nil
}

// start spawns the server on port, or on a free port when port is 0 (a
// process that exits at once, another program having taken the port in
// between, is tried again on another, portAttempts times), and registers
// self. On error nothing runs and a temporary directory is removed.
func (s *server) start(ctx context.Context, self stopper, port int, spawn spawnFunc) error {
	var err error
	for attempt := 1; ; attempt++ {
		at := port
		if at == 0 {
			if at, err = freePort(); err != nil {
				break
			}
		}
		var p *proc
		if p, err = spawn(ctx, at); err == nil {
			s.port = at
			s.p.Store(p)
			register(self)
			return nil
		}
		if port != 0 || !errors.Is(err, errExited) || attempt == portAttempts {
			break
		}
	}
	s.removeTempDir()
	return err
}

// removeTempDir removes the server's directory if it is a temporary one.
func (s *server) removeTempDir() error {
	if !s.tempDir {
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("servers: remove %s: %w", s.dir, err)
	}
	return nil
}

// launch starts bin with args in the server's directory (its output to
// logPath, as cred when set), writes the marker of a temporary directory
// and waits until ready answers for the new process; kind names the
// server in the error. On error the process is gone.
func (s *server) launch(ctx context.Context, kind string, port int, bin string, args []string, logPath string, cred *syscall.Credential,
	ready func(ctx context.Context, p *proc) error) (*proc, error) {
	p, err := startProc(bin, args, s.dir, logPath, cred)
	if err != nil {
		return nil, err
	}
	if s.tempDir {
		if err := writeMarker(filepath.Join(s.dir, serverFile), p.pid()); err != nil {
			_ = p.kill()
			return nil, err
		}
	}
	err = pollReady(ctx, p, func(ctx context.Context) error { return ready(ctx, p) })
	if err != nil {
		_ = p.kill()
		return nil, fmt.Errorf("servers: %s on port %d did not come up: %w; log: %s", kind, port, err, p.logTail())
	}
	return p, nil
}

// restart ends the running process with end and spawns a new one on the
// same port, waiting at most timeout when ctx has no deadline; after stop
// it returns ErrStopped.
func (s *server) restart(ctx context.Context, end func(*proc) error, timeout time.Duration, spawn spawnFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if err := end(s.p.Load()); err != nil {
		return err
	}
	ctx, cancel := withStartTimeout(ctx, timeout)
	defer cancel()
	p, err := spawn(ctx, s.port)
	if err != nil {
		return err
	}
	s.p.Store(p)
	return nil
}

// running runs f on the server's process under the lock that Restart
// and Stop take; after Stop it returns nil without running f.
func (s *server) running(f func(*proc) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	return f(s.p.Load())
}

// stop is every Stop of self: the first call ends the process with end and
// removes a temporary directory; later calls return nil.
func (s *server) stop(self stopper, end func(*proc) error) error {
	return s.stopOnce(self, func() error {
		return errors.Join(end(s.p.Load()), s.removeTempDir())
	})
}

// Addr returns the server's address, 127.0.0.1:port.
func (s *server) Addr() string { return loopback(s.port) }

// Port returns the TCP port the server listens on.
func (s *server) Port() int { return s.port }

// PID returns the process id of the running server; it changes on Restart.
// After Stop it is the id of the last, exited, process.
func (s *server) PID() int { return s.p.Load().pid() }
