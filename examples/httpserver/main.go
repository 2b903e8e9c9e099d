// Command httpserver is a small payments API that uses the idemhttp
// middleware: POST /payments with {"amount": 100, "currency": "EUR"} and an
// Idempotency-Key header creates a payment (201) exactly once per key;
// retries replay the first answer with Idempotency-Replayed: true.
//
//	go run ./examples/httpserver --addr 127.0.0.1:8089
//	curl -i -X POST localhost:8089/payments -H 'Idempotency-Key: k1' \
//	     -H 'Content-Type: application/json' -d '{"amount":100,"currency":"EUR"}'
//
// Flags: --addr (default 127.0.0.1:8089), --backend memory|redis|postgres
// (default memory), --redis-url and --postgres-url (defaults from
// IDEM_REDIS_URL and IDEM_POSTGRES_URL), --conflict-wait (how long a
// duplicate waits for a request in flight before 409; default 0),
// --downstream (a payment provider charged once per payment), --lease
// (see recovery.go: with redis or postgres and a provider, a server
// killed after a charge is recovered from, not charged twice) and --flaw
// (a known-bad idempotency design, see flaws.go). GET /metrics serves the
// engine's transition counters and durations (idem/idemotel) in the
// Prometheus format.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idembench/idembench/idem"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
}

// run serves the API until ctx ends, then shuts down gracefully. It prints
// the address it listens on to stdout, and errors to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8089", "listen address")
	backend := fs.String("backend", "memory", "idempotency store: memory, redis or postgres")
	redisURL := fs.String("redis-url", os.Getenv("IDEM_REDIS_URL"), "Redis URL for --backend redis")
	postgresURL := fs.String("postgres-url", os.Getenv("IDEM_POSTGRES_URL"), "PostgreSQL URL for --backend postgres")
	conflictWait := fs.Duration("conflict-wait", 0, "how long a duplicate waits for a request in flight (0: answer 409 at once)")
	lease := fs.Duration("lease", 0, "how long a key stays in progress after its request's server died (renewed every third of it while the request runs; 0: 1s with redis or postgres, 30s with memory)")
	configCheck := fs.String("config-check", "refuse", "a store configuration that can lose records (Redis maxmemory-policy other than noeviction, PostgreSQL synchronous_commit=off): refuse to start, warn, or off")
	svcOpts := addServiceFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := svcOpts.check(); err != nil {
		return err
	}
	if err := checkLease(*lease); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch *configCheck {
	case "refuse", "warn", "off":
	default:
		return fmt.Errorf("unknown --config-check %q (refuse, warn or off)", *configCheck)
	}

	store, closeStore, err := openStore(ctx, *backend, *redisURL, *postgresURL)
	if err != nil {
		return err
	}
	defer closeStore()
	startLog := log.New(stderr, "httpserver: ", log.LstdFlags)
	if err := checkStoreConfig(ctx, store, *configCheck, startLog.Printf); err != nil {
		return err
	}
	met, err := newMetrics(*backend)
	if err != nil {
		return err
	}
	defer met.close(context.Background())
	// Recovery (recovery.go) needs a provider, a store that outlives the
	// process and the correct design.
	l := newLedger()
	svcOpts.recovery = svcOpts.downstream != "" && *backend != "memory" && svcOpts.flaw == ""
	engOpts := []idem.Option{idem.WithConflictWait(*conflictWait, 0), met.engineOption(), idem.WithLeaseTTL(leaseTTL(*lease, *backend))}
	if svcOpts.recovery {
		engOpts = append(engOpts, idem.WithRecovery(recoverPayment(newProvider(svcOpts.downstream, true), l, startLog.Printf)))
	}
	eng := idem.New(store, engOpts...)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "httpserver: ", log.LstdFlags)
	srv := &http.Server{
		Handler:           met.mount(newService(eng, l, logger, *svcOpts)),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          logger,
	}
	fmt.Fprintf(stdout, "payments API on http://%s (backend %s)\n", ln.Addr(), *backend)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
