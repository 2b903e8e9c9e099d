package multiproc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// Worker runs one worker process of a Run from the JSON spec the
// coordinator passed, with the engine the spec names looked up in
// engines. It writes its history stream where the spec says, also right
// before it kills itself at a crash point. Errors wrap harness.ErrConfig or
// harness.ErrEnvironment.
func Worker(ctx context.Context, spec string, engines *harness.Registry) error {
	var ws workerSpec
	if err := json.Unmarshal([]byte(spec), &ws); err != nil {
		return harness.ConfigError("worker: spec: %w", err)
	}
	e, err := engines.Lookup(ws.Engine)
	if err != nil {
		return err
	}
	sc, err := scenarios.Load(ws.Scenario)
	if err != nil {
		return harness.ConfigError("worker: %w", err)
	}
	env := harness.Env{Backend: ws.Backend, URL: ws.URL, Prefix: ws.Prefix, Warn: func(string) {}}
	st, c, err := e.Open(ctx, env)
	if err != nil {
		return harness.EnvironmentError(err)
	}
	defer closeQuietly(c)
	sink, closeSink, err := openSink(ctx, e, ws.Sink, env, ws.SinkURL)
	if err != nil {
		return err
	}
	defer closeSink()
	cfg := harness.WorkloadConfig(sc, ws.Over)
	if ws.ClientTimeout > 0 {
		cfg.Retry.Timeout = ws.ClientTimeout
	}
	cfg.Store, cfg.Sink = st, sink
	cfg.Engine.Recovery = ws.Recovery
	cfg.ClientBase = ws.ClientBase
	cfg.Keys.Prefix = ws.Prefix
	cfg.Recorder = history.NewRecorder()
	cfg.Now = history.Now
	var faults []chaos.Fault
	if ws.Crash != nil {
		faults = append(faults, *ws.Crash)
	}
	inj, err := chaos.New(chaos.Config{Seed: ws.Over.Seed + int64(ws.ClientBase), Faults: faults, RunFor: cfg.Duration, Now: history.Now})
	if err != nil {
		return harness.ConfigError("worker: %w", err)
	}
	pz, err := newPauser(ctx, ws.Pauses, cfg.Duration)
	if err != nil {
		return harness.EnvironmentError(fmt.Errorf("worker: %w", err))
	}
	if pz != nil {
		defer pz.close()
	}
	cfg.Faults = &workerFaults{Injector: inj, ws: &ws, rec: cfg.Recorder, pauser: pz}
	stop := reportCalls(ws.Out, cfg.Recorder)
	_, err = workload.Run(ctx, cfg)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted (the coordinator's SIGTERM): the history so far
			// is still worth keeping.
			_ = saveStream(&ws, cfg.Recorder, nil)
		}
		return err
	}
	return saveStream(&ws, cfg.Recorder, nil)
}

// workerFaults turns the injector's crash into a real one (the worker
// saves what it recorded and sends itself SIGKILL) and asks for the
// worker's aimed pauses.
type workerFaults struct {
	*chaos.Injector
	ws     *workerSpec
	rec    *history.Recorder
	pauser *pauser // nil without pauses
}

func (f *workerFaults) Start() {
	f.Injector.Start()
	if f.pauser != nil {
		f.pauser.start()
	}
}

func (f *workerFaults) Stop() {
	if f.pauser != nil {
		f.pauser.stop()
	}
	f.Injector.Stop()
}

func (f *workerFaults) Hook() idem.Hook {
	h := f.Injector.Hook()
	if h == nil && f.pauser == nil {
		return nil
	}
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		var err error
		if h != nil {
			err = h(ctx, p, l)
		}
		if err == nil && f.pauser != nil {
			f.pauser.at(p, l)
		}
		if chaos.IsCrash(err) {
			now := history.Now()
			w := history.Fault(fmt.Sprintf("SIGKILL worker %d at %s", f.ws.Index, p), now, now).OnWorker(f.ws.Index).OnKey(l.Key, uint64(l.Token))
			_ = saveStream(f.ws, f.rec, &w)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		return err
	}
}

// saveStream writes the worker's history (plus extra, if any) to ws.Out,
// through a temporary file, synced.
func saveStream(ws *workerSpec, rec *history.Recorder, extra *history.Op) error {
	h := rec.History(ws.Header)
	if extra != nil {
		h.Ops = append(h.Ops, *extra)
		history.SortByCall(h.Ops)
	}
	tmp := ws.Out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return harness.EnvironmentError(err)
	}
	err = history.Encode(f, h)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, ws.Out)
	}
	return harness.EnvironmentError(err)
}
