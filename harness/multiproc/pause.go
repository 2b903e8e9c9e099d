package multiproc

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
// coordinator, with a MethodPause call, to stop it, and waits for
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
//   - the coordinator reads a worker's calls until the worker's end of
//     the connection closes, which its exit does, whatever way it exits;
//   - a worker never asks while another of its requests is open, nor for
//     a pause that would outlast its traffic (the liveness probe needs
//     every worker);
//   - two stops of one worker never overlap (a scheduled one is skipped
//     while an aimed one holds the worker; an aimed one waits for a
//     scheduled one to end), so neither resumes the other's stop early,
//     and the last signal a worker gets is always a SIGCONT.

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

// pauser is the worker side: it asks for its pauses from the engine hook.
type pauser struct {
	ctx    context.Context // the worker's run
	c      *Conn
	pauses []aimedPause // by At
	runFor time.Duration
	slack  time.Duration // ackSlack

	t0      atomic.Pointer[time.Time] // traffic start, set by start
	stopped atomic.Bool

	mu   sync.Mutex // held while a call is open; guards next
	next int
}

// newPauser returns the pauser of a worker's pauses on c; nil when there
// are none.
func newPauser(ctx context.Context, c *Conn, pauses []aimedPause, runFor time.Duration) *pauser {
	if len(pauses) == 0 {
		return nil
	}
	p := &pauser{ctx: ctx, c: c, pauses: slices.Clone(pauses), runFor: runFor, slack: ackSlack}
	slices.SortFunc(p.pauses, func(a, b aimedPause) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID)) })
	return p
}

func (p *pauser) start() {
	now := time.Now()
	p.t0.Store(&now)
}

func (p *pauser) stop() { p.stopped.Store(true) }

// at is the pauser's part of the engine hook: at PointAfterFn of the first
// execution after a pause is armed, it asks to be stopped and returns once
// the coordinator answers (after SIGCONT), the wait's bound passes or the
// worker's run ends.
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
	ctx, cancel := context.WithTimeout(p.ctx, ap.For+p.slack)
	defer cancel()
	_, _ = p.c.Call(ctx, MethodPause, PauseRequest{ID: ap.ID, Key: l.Key, Token: uint64(l.Token)})
}
