package multiproc

import (
	"sync"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
)

// A worker shows its progress to the coordinator with a progress event
// every progressEvery: the count of calls it recorded so far. The
// coordinator sums the last count of every incarnation for the run's
// progress line.
const progressEvery = 250 * time.Millisecond

// reportCalls sends progress events on c until stop is called, and once
// more then.
func reportCalls(c *Conn, rec *history.Recorder) (stop func()) {
	var mu sync.Mutex // serialises the sends; guards stopped
	stopped := false
	send := func() { _ = c.Notify(MethodProgress, rec.LenKind(history.KindCall)) }
	var t *time.Timer
	mu.Lock() // the timer's func reads t: assign it first
	defer mu.Unlock()
	t = time.AfterFunc(progressEvery, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			send()
			t.Reset(progressEvery)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			t.Stop()
			send()
		}
	}
}

// watch shows the run's progress (calls across the workers, calls()) to
// pr, if any, until the returned stop.
func watch(pr harness.Progress, calls func() int, traffic time.Duration) (stop func()) {
	if pr == nil {
		return func() {}
	}
	return pr.Watch(func() harness.LiveStats {
		n := calls()
		return harness.LiveStats{Ops: n, Calls: n}
	}, traffic)
}
