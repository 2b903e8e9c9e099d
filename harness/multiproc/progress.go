package multiproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
)

// A worker shows its progress to the coordinator through a small file
// beside its history stream, rewritten every progressEvery with the count
// of calls it recorded; the coordinator sums the files of every
// incarnation for the run's progress line.
const (
	progressEvery  = 250 * time.Millisecond
	progressSuffix = ".calls"
)

// reportCalls rewrites the progress file of the worker writing stream out
// until stop is called, and once more then.
func reportCalls(out string, rec *history.Recorder) (stop func()) {
	write := func() {
		tmp := out + progressSuffix + ".tmp"
		if os.WriteFile(tmp, []byte(strconv.Itoa(rec.LenKind(history.KindCall))), 0o644) == nil {
			_ = os.Rename(tmp, out+progressSuffix)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				write()
				return
			case <-t.C:
				write()
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// callsIn sums the progress files in dir: the calls every worker
// incarnation recorded so far.
func callsIn(dir string) int {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+progressSuffix))
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if c, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			n += c
		}
	}
	return n
}

// watch shows the run's progress (calls across the workers) to pr, if
// any, until the returned stop.
func watch(pr harness.Progress, dir string, traffic time.Duration) (stop func()) {
	if pr == nil {
		return func() {}
	}
	return pr.Watch(func() harness.LiveStats {
		n := callsIn(dir)
		return harness.LiveStats{Ops: n, Calls: n}
	}, traffic)
}
