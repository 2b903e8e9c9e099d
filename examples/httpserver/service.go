package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// serviceOptions are the flags that shape the API beyond its store:
// --downstream (the payment provider to charge) and --flaw (a known-bad
// idempotency design, for idembench's black-box mode).
type serviceOptions struct {
	downstream string
	flaw       string
	policy     string // --replay-policy
	fpExclude  string // --fingerprint-exclude: JSON pointers, comma-separated
	fpPolicy   string // --fingerprint-policy: the id stored with each record

	// recovery: charges are fenced by the lease's token (a durable store,
	// no flaw; see recovery.go). Set by run, not a flag.
	recovery bool
}

// addServiceFlags registers --downstream and --flaw on fs.
func addServiceFlags(fs *flag.FlagSet) *serviceOptions {
	o := &serviceOptions{}
	fs.StringVar(&o.downstream, "downstream", "", "payment provider URL charged once per payment (POST URL/charges, URL/transfers for a transfer, with the Idempotency-Key); empty: none")
	fs.StringVar(&o.policy, "replay-policy", "ietf", "which responses are stored and replayed: ietf (2xx and 4xx), stripe (errors too) or cache-2xx-only")
	fs.StringVar(&o.flaw, "flaw", "", "known-bad idempotency design to run instead of the correct one: "+strings.Join(flawNames(), ", "))
	fs.StringVar(&o.fpExclude, "fingerprint-exclude", "", "JSON members the fingerprint leaves out (a subset policy), as comma-separated JSON pointers: /meta,/client_ref")
	fs.StringVar(&o.fpPolicy, "fingerprint-policy", "", "id of the fingerprint policy, stored with each record (empty: payments/exclude-v1 with --fingerprint-exclude, none without)")
	return o
}

// fingerprint returns the middleware's fingerprint and its policy id from
// --fingerprint-exclude and --fingerprint-policy; nil without an exclusion
// (the middleware's default fingerprint).
func (o *serviceOptions) fingerprint() (idemhttp.FingerprintFunc, string, error) {
	id := o.fpPolicy
	if id == "" && o.fpExclude != "" {
		id = "payments/exclude-v1"
	}
	if err := idem.ValidatePolicy(id); err != nil {
		return nil, "", fmt.Errorf("--fingerprint-policy: %w", err)
	}
	if o.fpExclude == "" {
		return nil, id, nil
	}
	f, err := idemhttp.NewFingerprintPolicy(idemhttp.FingerprintOptions{Policy: id, JSONExclude: strings.Split(o.fpExclude, ",")})
	if err != nil {
		return nil, "", fmt.Errorf("--fingerprint-exclude: %w", err)
	}
	return f, id, nil
}

// check reports an unknown flaw.
func (o *serviceOptions) check() error {
	if o.flaw != "" && flaws[o.flaw] == nil {
		return fmt.Errorf("unknown --flaw %q (valid: %s)", o.flaw, strings.Join(flawNames(), ", "))
	}
	if _, err := idemhttp.ParseReplayPolicy(o.policy); err != nil {
		return fmt.Errorf("--replay-policy: %w", err)
	}
	_, _, err := o.fingerprint()
	return err
}

// chargeFunc charges the payment provider for the request's payment and
// returns the provider's charge id.
type chargeFunc func(r *http.Request, amount int64, currency string) (string, error)

// newCharger returns the charge function for the provider at base, or nil
// when base is empty. Every charge carries the request's Idempotency-Key,
// so the provider sees each payment's key, and with fenced the token of
// the request's lease (recovery.go). The charge outlives the client: a
// client that gives up does not abort a charge in flight.
func newCharger(base string, fenced bool) chargeFunc {
	if base == "" {
		return nil
	}
	p := newProvider(base, fenced)
	return func(r *http.Request, amount int64, currency string) (string, error) {
		return p.charge(context.WithoutCancel(r.Context()), resource(r.URL.Path), r.Header.Get(idemhttp.DefaultHeader), amount, currency)
	}
}

// newService returns the payments API: POST /payments and POST /transfers
// (the same operation on two paths) behind the idempotency middleware, the
// key scoped by path so the two never share a key, and GET /payments/{id}
// without it. logger receives the errors the middleware reports (store
// failures). With opts.flaw set, the idempotency layer is the named
// known-bad design instead (flaws.go).
func newService(eng *idem.Engine, l *ledger, logger *log.Logger, opts serviceOptions) http.Handler {
	mwOpts := idemhttp.Options{
		OnError:      func(r *http.Request, err error) { logger.Printf("%s %s: %v", r.Method, r.URL.Path, err) },
		Scope:        func(r *http.Request) string { return r.URL.Path },
		ReplayPolicy: idemhttp.ReplayPolicy(opts.policy),
	}
	mwOpts.Fingerprint, mwOpts.FingerprintPolicy, _ = opts.fingerprint() // checked by check
	charge := newCharger(opts.downstream, opts.recovery)
	create := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		createPayment(w, r, l, charge)
	}))
	guard := idemhttp.Middleware(eng, mwOpts)
	if f := flaws[opts.flaw]; f != nil {
		guard = f(eng, mwOpts, charge)
		if opts.flaw == flawEffectBeforeClaim {
			// The flawed layer charges; the handler must not charge again.
			create = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { createPayment(w, r, l, nil) })
		}
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", guard(create))
	mux.Handle("POST /transfers", guard(create))
	mux.HandleFunc("GET /payments/{id}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := l.get(r.PathValue("id"))
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such payment"})
			return
		}
		writeJSON(w, http.StatusOK, p)
	})
	return mux
}
