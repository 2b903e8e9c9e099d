package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// workerSpec is what the coordinator of `idembench run --workers N` tells
// one worker process (one incarnation of worker Index) to do.
type workerSpec struct {
	Scenario    string         `json:"scenario"`
	Backend     string         `json:"backend"`
	RedisURL    string         `json:"redis_url,omitempty"`
	PostgresURL string         `json:"postgres_url,omitempty"`
	Sink        string         `json:"sink"`
	Recovery    bool           `json:"recovery"`
	Seed        int64          `json:"seed"`
	Duration    time.Duration  `json:"duration"`
	Clients     int            `json:"clients"`
	ClientBase  int            `json:"client_base"`
	Rate        float64        `json:"rate"`
	Prefix      string         `json:"prefix"`
	Header      history.Header `json:"header"`
	// Out is the file the worker writes its history stream to: at the end
	// of its run, or right before it kills itself at a crash point.
	Out string `json:"out"`
	// Crash, when set, is the crash fault of this incarnation: at its point
	// the worker saves its history and sends itself SIGKILL.
	Crash *chaos.Fault `json:"crash,omitempty"`
	Index int          `json:"index"`
	// ClientTimeout, when positive, replaces the scenario's client timeout
	// (a run with network faults).
	ClientTimeout time.Duration `json:"client_timeout,omitempty"`
	// LedgerURL, when set, is the server of the effect ledger (plain and
	// fenced sinks), apart from the store's: a run with backend faults
	// keeps its effects where the faults do not reach them.
	LedgerURL string `json:"ledger_url,omitempty"`
}

// workerCmd is the hidden `idembench worker` subcommand: one worker process
// of a multi-process run.
type workerCmd struct {
	Spec string `help:"JSON worker spec." required:""`
}

func (c *workerCmd) Run(ctx context.Context, std stdio) error {
	var ws workerSpec
	if err := json.Unmarshal([]byte(c.Spec), &ws); err != nil {
		return usageErr("worker: spec: %v", err)
	}
	return runWorker(ctx, &ws)
}

func runWorker(ctx context.Context, ws *workerSpec) error {
	sc, err := scenarios.Load(ws.Scenario)
	if err != nil {
		return usageErr("worker: %v", err)
	}
	st, err := openStore(ctx, ws.Backend, engineIdem, ws.RedisURL, ws.PostgresURL)
	if err != nil {
		return err
	}
	defer st.close()
	sink, closeSink, err := openLedger(ctx, st, ws.Backend, ws.Sink, ws.RedisURL, ws.LedgerURL)
	if err != nil {
		return err
	}
	defer closeSink()
	cfg := sc.Workload(ws.Duration)
	if ws.ClientTimeout > 0 {
		cfg.Retry.Timeout = ws.ClientTimeout
	}
	cfg.Seed = ws.Seed
	cfg.Store = st.store
	cfg.Sink = sink
	cfg.Engine.Recovery = ws.Recovery
	cfg.Clients = ws.Clients
	cfg.ClientBase = ws.ClientBase
	if ws.Rate >= 0 {
		cfg.Rate = ws.Rate // this worker's share
	}
	cfg.Keys.Prefix = ws.Prefix
	cfg.Recorder = history.NewRecorder()
	cfg.Now = history.Now
	var faults []chaos.Fault
	if ws.Crash != nil {
		faults = append(faults, *ws.Crash)
	}
	inj, err := chaos.New(chaos.Config{Seed: ws.Seed + int64(ws.ClientBase), Faults: faults, RunFor: ws.Duration, Now: history.Now})
	if err != nil {
		return usageErr("worker: %v", err)
	}
	cfg.Faults = &suicideFaults{Injector: inj, ws: ws, rec: cfg.Recorder}
	if _, err := workload.Run(ctx, cfg); err != nil {
		return err
	}
	return saveStream(ws, cfg.Recorder, nil)
}

// suicideFaults turns the injector's crash into a real one: the worker
// saves what it recorded and sends itself SIGKILL.
type suicideFaults struct {
	*chaos.Injector
	ws  *workerSpec
	rec *history.Recorder
}

func (f *suicideFaults) Hook() idem.Hook {
	h := f.Injector.Hook()
	if h == nil {
		return nil
	}
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		err := h(ctx, p, l)
		if chaos.IsCrash(err) {
			now := history.Now()
			w := history.Op{Kind: history.KindFault, Client: -1, Worker: f.ws.Index, Key: l.Key, Token: uint64(l.Token),
				Call: now, Return: now, Label: fmt.Sprintf("SIGKILL worker %d at %s", f.ws.Index, p)}
			_ = saveStream(f.ws, f.rec, &w)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		return err
	}
}

// saveStream writes the worker's history (plus extra, if any) to ws.Out.
func saveStream(ws *workerSpec, rec *history.Recorder, extra *history.Op) error {
	h := rec.History(ws.Header)
	if extra != nil {
		h.Ops = append(h.Ops, *extra)
		history.SortByCall(h.Ops)
	}
	tmp := ws.Out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return envErr(err)
	}
	if err := history.Encode(f, h); err != nil {
		f.Close()
		return envErr(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return envErr(err)
	}
	if err := f.Close(); err != nil {
		return envErr(err)
	}
	return envErr2(os.Rename(tmp, ws.Out))
}

func envErr2(err error) error {
	if err == nil {
		return nil
	}
	return envErr(err)
}

// openLedger opens the effect sink of a worker process or of the
// coordinator: on the store's connections (st; redisURL is the store's
// Redis), or, when ledgerURL is set and the sink is not the transactional
// one (whose effects must commit with the store's records), on the server
// at ledgerURL. The returned function closes what it opened.
func openLedger(ctx context.Context, st *openedStore, backend, sink, redisURL, ledgerURL string) (backendLedger, func(), error) {
	if ledgerURL == "" || sink == workload.SinkTx {
		l, err := openBackendSink(ctx, st, backend, sink, redisURL)
		return l, func() {}, err
	}
	lst, err := openStore(ctx, backend, engineIdem, ledgerURL, ledgerURL)
	if err != nil {
		return nil, func() {}, err
	}
	l, err := openBackendSink(ctx, lst, backend, sink, ledgerURL)
	if err != nil {
		lst.close()
		return nil, func() {}, err
	}
	return l, func() { lst.close() }, nil
}

// openBackendSink returns the effect sink of a worker: a ledger in the
// backend (or the transactional sink on PostgreSQL), so that an effect
// outlives the process that applied it.
func openBackendSink(ctx context.Context, st *openedStore, backend, sink, redisURL string) (backendLedger, error) {
	fenced := sink == workload.SinkFenced
	switch {
	case backend == backendPostgres && sink == workload.SinkTx:
		s, err := newPgTxSink(ctx, st.pg, st.pool)
		if err != nil {
			return nil, envErr(err)
		}
		return s, nil
	case backend == backendPostgres:
		l, err := newPgLedger(ctx, st.pg, st.pool, fenced)
		if err != nil {
			return nil, envErr(err)
		}
		return l, nil
	case backend == backendRedis && sink != workload.SinkTx:
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, usageErr("--redis-url: %v", err)
		}
		opt.PoolSize = max(opt.PoolSize, redisMinPool)
		// No client-side retry: a ledger write whose reply was lost and
		// that the client sent again would be an effect applied twice.
		opt.MaxRetries = -1
		client := redis.NewClient(opt)
		prev := st.close
		st.close = func() { prev(); client.Close() }
		return &redisLedger{client: client, fenced: fenced, ttl: time.Hour}, nil
	}
	return nil, usageErr("--workers: sink %s on backend %s is not supported (redis: plain, fenced; postgres: plain, fenced, tx)", sink, backend)
}
