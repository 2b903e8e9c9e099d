package consume

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// natsServer is a private nats-server with JetStream file storage on a
// spare loopback port, for the server restart fault.
type natsServer struct {
	port    int
	dir     string
	mu      sync.Mutex // held by restart and stop, which a run may call at once
	stopped bool       // stop ran: restart must not start it again
	cmd     *exec.Cmd
	done    chan struct{}
}

// startNATSServer runs nats-server from PATH (or /usr/sbin) in a new
// temporary directory.
func startNATSServer(ctx context.Context) (*natsServer, error) {
	dir, err := os.MkdirTemp("", "idembench-nats-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &natsServer{port: port, dir: dir}
	if err := s.start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func natsServerBinary() string {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	return "/usr/sbin/nats-server"
}

func (s *natsServer) url() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *natsServer) start(ctx context.Context) error {
	cmd := exec.Command(natsServerBinary(), "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", s.dir)
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.done:
			return errors.New("nats-server exited at start")
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return errors.New("nats-server did not listen within 10s")
		}
	}
}

// stopGracefully sends SIGTERM (the server flushes its file store) and
// waits for the exit, SIGKILL after 10 s.
func (s *natsServer) stopGracefully() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.kill()
	}
}

func (s *natsServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// restart stops the server gracefully and starts it again on the same
// port and store directory.
func (s *natsServer) restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("nats-server already stopped")
	}
	s.stopGracefully()
	return s.start(ctx)
}

// stop kills the server and removes its directory. It is idempotent.
func (s *natsServer) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			s.kill()
		}
	}
	return os.RemoveAll(s.dir)
}
