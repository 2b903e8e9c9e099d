package blackbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds the wait for a service to exit after SIGTERM before it
// gets SIGKILL, and after SIGKILL.
const stopTimeout = 5 * time.Second

// service is a service the harness started: a process group it can kill,
// pause, resume and restart on the same address.
type service struct {
	start  *Start
	argv   []string
	env    []string
	addr   string // 127.0.0.1:PORT
	base   string // base URL
	ready  string // readiness URL
	logBuf *tailBuffer
	// log receives the service's stdout and stderr: logBuf, and the run
	// directory's ServiceLogFile when there is one.
	log    io.Writer
	starts int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has been reaped
	// ending is set when the harness signals cmd to end (kill, stop): its
	// exit is then expected.
	ending bool
	// exited is closed, and exitErr set, at the first exit of the service
	// that the harness did not cause.
	exited   chan struct{}
	exitErr  error
	exitOnce sync.Once
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// newService expands the start command with f and returns the service,
// not started.
func newService(t *Target, f *Fields) *service {
	s := &service{start: t.Start, addr: f.Addr, logBuf: newTailBuffer(4096), exited: make(chan struct{})}
	s.log = s.logBuf
	for _, a := range t.Start.Command {
		s.argv = append(s.argv, expand(a, f))
	}
	s.env = os.Environ()
	for k, v := range t.Start.Env {
		s.env = append(s.env, k+"="+expand(v, f))
	}
	s.base = strings.TrimRight(expand(t.BaseURL, f), "/")
	s.ready = s.base
	if r := expand(t.Start.Ready, f); r != "" {
		if strings.HasPrefix(r, "/") {
			r = s.base + r
		}
		s.ready = r
	}
	return s
}

// run starts the process and waits until it is ready. On failure the
// process is killed before run returns.
func (s *service) run(ctx context.Context) error {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = s.env
	cmd.Dir = s.start.Dir
	s.starts++
	fmt.Fprintf(s.log, "--- idembench: start %d of %q at %s\n", s.starts, s.argv[0], time.Now().UTC().Format(time.RFC3339Nano))
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.SysProcAttr = sysProcAttr()
	// Fork from a fresh goroutine: on Linux the parent-death signal is tied
	// to the forking thread.
	started := make(chan error, 1)
	go func() { started <- cmd.Start() }()
	if err := <-started; err != nil {
		return envf("start %q: %v", s.argv[0], err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done, s.ending = cmd, done, false
	s.mu.Unlock()
	go func() {
		werr := cmd.Wait()
		s.mu.Lock()
		unexpected := s.cmd == cmd && !s.ending
		s.mu.Unlock()
		if unexpected {
			s.exitOnce.Do(func() {
				if werr == nil {
					werr = errors.New("exit status 0")
				}
				s.exitErr = fmt.Errorf("%w: %q stopped during the run (%v) although no fault killed it; its output ends with:\n%s",
					ErrServiceExited, s.argv[0], werr, s.logBuf.String())
				close(s.exited)
			})
		}
		close(done)
	}()
	if err := s.waitReady(ctx, done); err != nil {
		s.kill()
		return err
	}
	return nil
}

// waitReady polls the readiness URL until it answers below 500.
func (s *service) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, s.start.ReadyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var last error
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ready, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-exited:
			return envf("service %q exited during start-up; its output ends with:\n%s", s.argv[0], s.logBuf.String())
		case <-ctx.Done():
			if context.Cause(ctx) != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("blackbox: waiting for the service: %w", context.Cause(ctx))
			}
			return envf("service not ready at %s within %s (last attempt: %v); its output ends with:\n%s",
				s.ready, s.start.ReadyTimeout, last, s.logBuf.String())
		case <-time.After(wait):
		}
	}
}

// signal sends sig to the service's process group; it does nothing once
// the leader has been reaped.
func (s *service) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// expectExit marks the running process's exit as the harness's doing.
func (s *service) expectExit() {
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
}

// unexpectedExit returns the ErrServiceExited error of the service's first
// exit that the harness did not cause (kill, stop), or nil.
func (s *service) unexpectedExit() error {
	select {
	case <-s.exited:
		return s.exitErr
	default:
		return nil
	}
}

// kill sends SIGKILL to the group (after SIGCONT, so a paused group dies)
// and waits for the leader to be reaped.
func (s *service) kill() {
	s.expectExit()
	s.signal(syscall.SIGKILL)
	s.wait(stopTimeout)
}

// stop asks the service to exit (SIGTERM to its group, SIGKILL after
// stopTimeout) and waits for it. Once the leader is reaped the group gets
// SIGKILL once more, for children that ignored SIGTERM (a "go run" child
// outlives its go tool). It is idempotent.
func (s *service) stop() {
	s.expectExit()
	s.signal(syscall.SIGCONT)
	s.signal(syscall.SIGTERM)
	if !s.wait(stopTimeout) {
		s.kill()
	}
	if pid := s.pid(); pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // ESRCH when the group is gone
	}
}

func (s *service) wait(d time.Duration) bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// pid returns the leader's pid, 0 if none.
func (s *service) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// running reports whether the leader has not been reaped.
func (s *service) running() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// ServiceLogFile is the run directory's copy of the started service's
// stdout and stderr, every start of it (a line "--- idembench: start N"
// opens each), at most MaxServiceLog bytes.
const ServiceLogFile = "service.log"

// MaxServiceLog caps ServiceLogFile; what the service writes beyond it is
// dropped, and a last line says so.
const MaxServiceLog = 64 << 20

// cappedFile writes to f until max bytes, then drops the rest.
type cappedFile struct {
	mu      sync.Mutex
	f       *os.File
	n, max  int
	dropped bool
}

func (c *cappedFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		if !c.dropped {
			c.dropped = true
			_, _ = fmt.Fprintf(c.f, "\n--- idembench: the log reached %d bytes; the rest is dropped\n", c.max)
		}
		return len(p), nil
	}
	q := p[:min(len(p), c.max-c.n)]
	n, err := c.f.Write(q)
	c.n += n
	if err != nil {
		return n, err
	}
	return len(p), nil
}

func (c *cappedFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.f.Close()
}
