package multiproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/idembench/idembench/history"
)

// Proc is a worker process started by StartProc, with the coordinator's
// end of the protocol on the worker's stdin and stdout.
type Proc struct {
	Cmd  *exec.Cmd
	Conn *Conn
	// stderr keeps the end of what the worker wrote to its stderr.
	stderr *tailBuffer
	done   chan struct{} // closed once the process exited
	err    error         // Wait's, set before done is closed
	// remote is set for a worker that joined over NATS (Join): its
	// process is elsewhere, and lost reports that it stopped answering.
	remote *remote
}

// remote is what the coordinator has of a worker process elsewhere.
type remote struct {
	pipe *natsPipe
	lost atomic.Bool
}

// livenessPing is how often the coordinator pings a remote worker, and
// livenessMisses how many unanswered pings in a row lose it.
const (
	livenessPing   = 300 * time.Millisecond
	livenessMisses = 10
	livenessStart  = 30
)

// remoteProc returns the Proc of a worker that joined over NATS. It is
// done once the worker closed its end (it exited: Wait returns nil) or
// stopped answering the pings on subject alive (lost: Killed is true).
func remoteProc(nc *nats.Conn, alive string, pipe *natsPipe) *Proc {
	p := &Proc{Conn: NewConn(pipe), stderr: &tailBuffer{max: 4096}, done: make(chan struct{}), remote: &remote{pipe: pipe}}
	go func() {
		defer close(p.done)
		// The worker subscribes to its pings just after it joined: until
		// its first answer it has livenessStart misses to come.
		misses, allowed := 0, livenessStart
		for {
			if pipe.closedByPeer() {
				return
			}
			if _, err := nc.Request(alive, nil, livenessPing); err != nil {
				if pipe.closedByPeer() {
					return
				}
				if misses++; misses >= allowed {
					p.remote.lost.Store(true)
					p.err = errWorkerLost
					pipe.stop() // the reader sees the end
					return
				}
			} else {
				misses, allowed = 0, livenessMisses
			}
			time.Sleep(livenessPing)
		}
	}()
	return p
}

// StartProc starts cmd as a worker process: its stdin and stdout carry the
// protocol (our own pipes, not exec's, so that its exit and our reading of
// its last frames do not race), its stderr is kept (its last 4 KiB, for
// Stderr), and it runs in its own process group (a Ctrl-C reaches the
// coordinator only, which stops its workers) and is killed by the kernel
// if the coordinator dies, even by SIGKILL (unless cmd sets SysProcAttr).
// cmd's Stdin, Stdout and Stderr must be unset. The caller sends the hello, then runs
// Conn.Serve; Serve returns once the worker exited and the frames it sent
// are read.
func StartProc(cmd *exec.Cmd) (*Proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &Proc{Cmd: cmd, stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = workerProcAttr()
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p.Conn = NewConn(pipes{outR, inW})
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns Wait's error.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Killed reports whether the process, which must have exited, died of
// SIGKILL (a crash it inflicted on itself, or a kill).
func (p *Proc) Killed() bool {
	<-p.done
	if p.remote != nil {
		return p.remote.lost.Load()
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		return false
	}
	s, ok := ee.Sys().(syscall.WaitStatus)
	return ok && s.Signaled() && s.Signal() == syscall.SIGKILL
}

// Stderr returns the end of what the process wrote to its stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// ExitError describes how the process, which must have exited, ended, with
// the end of its stderr.
func (p *Proc) ExitError() error {
	<-p.done
	return fmt.Errorf("%v: %s", p.err, p.stderr.String())
}

// Signal sends sig to the process; an error once it is gone. A remote
// worker gets SIGTERM as a MethodStop event (it ends its traffic and
// sends what it has); SIGCONT does nothing there, SIGKILL tells it to
// stop and drops it, and
// SIGSTOP is an error: a remote process cannot be stopped.
func (p *Proc) Signal(sig os.Signal) error {
	if p.remote == nil {
		return p.Cmd.Process.Signal(sig)
	}
	switch sig {
	case syscall.SIGTERM:
		return p.Conn.Notify(MethodStop, "")
	case syscall.SIGCONT:
		return nil
	case syscall.SIGKILL:
		// It cannot be killed from here: it is told to stop (best
		// effort, so that it does not wait for a run that is over) and
		// dropped.
		_ = p.Conn.Notify(MethodStop, "")
		p.remote.pipe.stop()
		return nil
	}
	return fmt.Errorf("multiproc: cannot send %v to a remote worker", sig)
}

// Pid is the process id; 0 for a remote worker.
func (p *Proc) Pid() int {
	if p.remote != nil {
		return 0
	}
	return p.Cmd.Process.Pid
}

// StopFor stops the process (SIGSTOP) and continues it (SIGCONT) d later,
// as soon as ctx ends or as soon as the process exited: the whole process
// stalls, heartbeats included, as in a long GC pause. It returns when it
// stopped it, on the history clock, and false when the process was gone.
// The last signal it sends is always a SIGCONT.
func (p *Proc) StopFor(ctx context.Context, d time.Duration) (int64, bool) {
	start := history.Now()
	if p.Signal(syscall.SIGSTOP) != nil {
		return 0, false
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-p.done:
	}
	t.Stop()
	_ = p.Signal(syscall.SIGCONT)
	return start, true
}

// Terminate ends the processes: SIGCONT (a stopped one) and SIGTERM (it
// ends its traffic and reports what it has), then SIGKILL for those still
// running grace later. It returns once every one exited.
func Terminate(ps []*Proc, grace time.Duration) {
	for _, p := range ps {
		_ = p.Signal(syscall.SIGCONT)
		_ = p.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	late := false
	for _, p := range ps {
		if !late {
			select {
			case <-p.done:
				continue
			case <-deadline.C:
				late = true
			}
		}
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
