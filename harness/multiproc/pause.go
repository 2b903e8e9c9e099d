package multiproc

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Aimed process pauses.
//
// A scenario's pause becomes a SIGSTOP of a whole worker process. Two in
// three (all but the third, the sixth...) are aimed at the window between
// an effect and its completion, so that a run finds what a stop there breaks
// on every seed; the rest stop their worker wherever it is at their time
// (coordinator.pause), inside an effect's own ledger write too. An aimed
// pause works so: the coordinator tells every worker incarnation, in its
// spec, when each aimed pause not yet taken is armed; the first execution
// of any worker to reach idem.PointAfterFn after a pause is armed asks the
// coordinator, over its worker's control pipe, to stop it, and waits for
// the answer (a worker asking for a pause another took is refused); the
// coordinator sends SIGSTOP, waits the pause's length, sends SIGCONT and
// answers. The execution's effect happened and its completion is not
// written: a successor in another worker takes the expired lease over
// while the whole holder process, heartbeats included, is stopped.
//
// Why the worker does not stop itself: a process that sends itself
// SIGSTOP cannot resume itself, and a coordinator that resumes it on a
// schedule may send its SIGCONT before the SIGSTOP lands (or after the run
// gave up on the worker), leaving the worker stopped for good and the
// coordinator waiting for it to exit. Here only the coordinator signals,
// SIGSTOP always before SIGCONT from one goroutine, and every wait ends:
//
//   - the coordinator's stop lasts the pause's length, or less when the
//     run is cancelled (killAll resumes and kills every worker too);
//   - the worker waits for the answer at most the pause's length plus
//     ackSlack, or until its run ends; an answer that comes late is
//     recognised by its id and dropped;
//   - the coordinator reads a worker's requests until the worker's end of
//     the pipe closes, which its exit does, whatever way it exits;
//   - a worker never asks while another of its requests is open, nor for
//     a pause that would outlast its traffic (the liveness probe needs
//     every worker);
//   - two stops of one worker never overlap (a scheduled one is skipped
//     while an aimed one holds the worker; an aimed one waits for a
//     scheduled one to end), so neither resumes the other's stop early,
//     and the last signal a worker gets is always a SIGCONT.
//
// A worker's control pipe is its file descriptors 3 (requests, written)
// and 4 (answers, read).

// Control pipe file descriptors in a worker process.
const (
	controlReqFD = 3
	controlAckFD = 4
)

// ackSlack is how much longer than the pause itself a worker waits for the
// coordinator's answer before it goes on (unpaused, or paused late).
const ackSlack = 10 * time.Second

// aimedPause is one pause of a worker incarnation: armed At after its
// traffic starts, it stops the worker For, at the next effect.
type aimedPause struct {
	ID  int           `json:"id"`
	At  time.Duration `json:"at"`
	For time.Duration `json:"for"`
}

// pauseRequest is a worker's request to be stopped for pause ID: the
// execution of Key under Token is right after its effect.
type pauseRequest struct {
	ID    int    `json:"id"`
	Key   string `json:"key"`
	Token uint64 `json:"token"`
}

// pauseAck answers a request: Stopped says whether the worker was stopped
// (false: the pause was refused, e.g. the run is ending).
type pauseAck struct {
	ID      int  `json:"id"`
	Stopped bool `json:"stopped"`
}

// pauser is the worker side: it asks for its pauses from the engine hook.
type pauser struct {
	ctx    context.Context // the worker's run
	pauses []aimedPause    // by At
	runFor time.Duration
	slack  time.Duration // ackSlack
	req    *os.File
	ackF   *os.File
	ack    *bufio.Reader

	t0      atomic.Pointer[time.Time] // traffic start, set by start
	stopped atomic.Bool

	mu   sync.Mutex // held while a request is open; guards next
	next int
}

// newPauser opens the worker's control pipe for pauses; it returns nil
// when there are no pauses.
func newPauser(ctx context.Context, pauses []aimedPause, runFor time.Duration) (*pauser, error) {
	if len(pauses) == 0 {
		return nil, nil
	}
	// Non-blocking, so that every read and write can have a deadline.
	for _, fd := range []int{controlReqFD, controlAckFD} {
		if err := syscall.SetNonblock(fd, true); err != nil {
			return nil, fmt.Errorf("control pipe: %w", err)
		}
	}
	p := &pauser{ctx: ctx, pauses: slices.Clone(pauses), runFor: runFor, slack: ackSlack,
		req: os.NewFile(controlReqFD, "control-requests"), ackF: os.NewFile(controlAckFD, "control-answers")}
	slices.SortFunc(p.pauses, func(a, b aimedPause) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID)) })
	p.ack = bufio.NewReader(p.ackF)
	return p, nil
}

func (p *pauser) start() {
	now := time.Now()
	p.t0.Store(&now)
}

func (p *pauser) stop() { p.stopped.Store(true) }

func (p *pauser) close() {
	p.req.Close()
	p.ackF.Close()
}

// at is the pauser's part of the engine hook: at PointAfterFn of the first
// execution after a pause is armed, it asks to be stopped and returns once
// the coordinator answers (after SIGCONT), or the wait's bound passes.
func (p *pauser) at(pt idem.Point, l idem.Lease) {
	t0 := p.t0.Load()
	if pt != idem.PointAfterFn || t0 == nil || p.stopped.Load() || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if p.next >= len(p.pauses) {
		return
	}
	ap := p.pauses[p.next]
	elapsed := time.Since(*t0)
	if elapsed < ap.At {
		return
	}
	p.next++
	if elapsed+ap.For > p.runFor {
		return // it would outlast the traffic
	}
	b, _ := json.Marshal(pauseRequest{ID: ap.ID, Key: l.Key, Token: uint64(l.Token)})
	_ = p.req.SetWriteDeadline(time.Now().Add(p.slack))
	if _, err := p.req.Write(append(b, '\n')); err != nil {
		return
	}
	p.waitAck(ap.ID, time.Now().Add(ap.For+p.slack))
}

// waitAck reads answers until the one for id, the deadline, or the end of
// the worker's run.
func (p *pauser) waitAck(id int, deadline time.Time) {
	_ = p.ackF.SetReadDeadline(deadline)
	stop := context.AfterFunc(p.ctx, func() { _ = p.ackF.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		line, err := p.ack.ReadBytes('\n')
		if err != nil {
			return
		}
		var a pauseAck
		if json.Unmarshal(line, &a) == nil && a.ID == id {
			return
		}
	}
}

// controlPipe is the coordinator's end of one incarnation's control pipe,
// with the worker's ends to pass as its ExtraFiles.
type controlPipe struct {
	req, ack             *os.File // coordinator: reads requests, writes answers
	workerReq, workerAck *os.File
}

func newControlPipe() (*controlPipe, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	return &controlPipe{req: reqR, ack: ackW, workerReq: reqW, workerAck: ackR}, nil
}

// attach makes the pipe the worker's descriptors 3 and 4 (before any
// ExtraFiles the command has).
func (c *controlPipe) attach(cmd *exec.Cmd) {
	cmd.ExtraFiles = append([]*os.File{c.workerReq, c.workerAck}, cmd.ExtraFiles...)
}

// closeWorkerEnds closes the coordinator's copies of the worker's ends,
// after the worker started (so that its exit ends the requests).
func (c *controlPipe) closeWorkerEnds() {
	c.workerReq.Close()
	c.workerAck.Close()
}

func (c *controlPipe) close() {
	c.closeWorkerEnds()
	c.req.Close()
	c.ack.Close()
}

// serve answers the pause requests of worker i's incarnation cmd until the
// worker exits, then closes the pipe.
func (co *coordinator) serve(ctx context.Context, i int, cmd *exec.Cmd, c *controlPipe) {
	defer c.close()
	sc := bufio.NewScanner(c.req)
	for sc.Scan() {
		var r pauseRequest
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		a := pauseAck{ID: r.ID, Stopped: co.stopWorker(ctx, i, cmd, r)}
		b, _ := json.Marshal(a)
		_ = c.ack.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.ack.Write(append(b, '\n'))
	}
}

// stopWorker carries out a pause request of worker i: SIGSTOP, the pause's
// length (less if ctx ends), SIGCONT, and the window in the history; a
// scheduled stop of the same worker under way ends first. It refuses a
// pause it does not know or that a worker already took, and any pause once
// the run is stopping.
func (co *coordinator) stopWorker(ctx context.Context, i int, cmd *exec.Cmd, r pauseRequest) bool {
	co.mu.Lock()
	p, ok := co.pending[r.ID]
	ok = ok && !co.stopping && ctx.Err() == nil
	if ok {
		delete(co.pending, r.ID)
	}
	co.mu.Unlock()
	if !ok {
		return false
	}
	co.stopMu[i].Lock() // a scheduled stop of the worker ends first
	start, stopped := stopFor(ctx, cmd, p.For)
	co.stopMu[i].Unlock()
	if !stopped {
		return false // it exited meanwhile
	}
	w := history.Fault(fmt.Sprintf("SIGSTOP worker %d (pid %d) for %s, aimed after the effect of %s", i, cmd.Process.Pid, p.For, r.Key),
		start, history.Now()).OnWorker(i).OnKey(r.Key, r.Token)
	co.mu.Lock()
	co.windows = append(co.windows, w)
	co.mu.Unlock()
	return true
}
