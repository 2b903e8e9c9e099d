package main

// Recovery after a crash: the pattern this example shows.
//
// A payment is claimed (the key's lease), then charged at the provider,
// then recorded (Complete). A server killed between the charge and the
// record leaves the key in progress with the money taken. Two things close
// that window, with a durable store (Redis, PostgreSQL):
//
//  1. A short lease, renewed by the engine's heartbeat while the request
//     runs (every third of it): a live request keeps its key, a dead one
//     lets it go within a second, so the key is not stuck.
//  2. The provider is the ledger of charges, fenced by the lease's token.
//     Every charge carries the key and the token (Fencing-Token); on a
//     take-over the engine's recovery hook (idem.WithRecovery) asks the
//     provider for the key's charges with the new token, which in the same
//     step refuses any later charge with an older token. A charge found is
//     the dead holder's: the key completes with that payment, nothing is
//     charged again. None found: the handler charges under the new token,
//     and a holder that was only slow can no longer land its charge.
//
// With the memory store a crash loses the records and the fencing tokens
// with the process: the restarted server's tokens start again from 1, so
// they cannot fence anything, and a key in flight at the crash is charged
// again. The example then neither fences nor recovers, and keeps the
// engine's 30 s lease.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// fencingTokenHeader carries the lease's fencing token on every call to
// the provider (blackbox.FencingTokenHeader for idembench's mock).
const fencingTokenHeader = "Fencing-Token"

// durableLease is the default lease on a durable store: how long a
// crashed request's key stays in progress before a retry takes it over.
const durableLease = time.Second

// leaseTTL returns the engine's lease for --lease and --backend: the flag
// when set, else durableLease on Redis and PostgreSQL and the engine's
// default on memory, where a take-over cannot be recovered.
func leaseTTL(flag time.Duration, backend string) time.Duration {
	switch {
	case flag > 0:
		return flag
	case backend == "memory":
		return idem.DefaultLeaseTTL
	}
	return durableLease
}

// checkLease refuses a --lease that is negative or too short to renew.
func checkLease(d time.Duration) error {
	if d < 0 || (d > 0 && d < 100*time.Millisecond) {
		return fmt.Errorf("--lease %v: want 0 (the default) or at least 100ms", d)
	}
	return nil
}

// paymentProvider is the payment provider at --downstream. It is safe for
// concurrent use.
type paymentProvider struct {
	base   string
	client *http.Client
	// fenced: every charge carries the lease's token, and the provider
	// refuses a token older than the newest it saw for the key.
	fenced bool
}

func newProvider(base string, fenced bool) *paymentProvider {
	return &paymentProvider{base: strings.TrimRight(base, "/"), client: &http.Client{Timeout: 10 * time.Second}, fenced: fenced}
}

// resource returns the provider's resource for an API path: a payment is
// a charge, a transfer a transfer. The provider fences and looks up each
// resource apart, as the idempotency layer scopes keys by path.
func resource(apiPath string) string {
	if apiPath == "/transfers" {
		return "/transfers"
	}
	return "/charges"
}

// providerCharge is a charge as the provider's lookup answers it.
type providerCharge struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// charge charges amount for key and returns the provider's charge id ("" if
// its answer names none). With p.fenced, the call carries the token of the
// lease in ctx.
func (p *paymentProvider) charge(ctx context.Context, res, key string, amount int64, currency string) (string, error) {
	body, _ := json.Marshal(map[string]any{"amount": amount, "currency": currency})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+res, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemhttp.DefaultHeader, key)
	if l, ok := idem.LeaseFrom(ctx); ok && p.fenced {
		req.Header.Set(fencingTokenHeader, strconv.FormatUint(uint64(l.Token), 10))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("provider answered %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var c providerCharge
	_ = json.Unmarshal(b, &c) // a provider that names no charge id still charged
	return c.ID, nil
}

// lookup returns key's charges on res, after fencing them with token: a
// charge with an older token is refused from now on.
func (p *paymentProvider) lookup(ctx context.Context, res, key string, token idem.Token) ([]providerCharge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+res, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(idemhttp.DefaultHeader, key)
	req.Header.Set(fencingTokenHeader, strconv.FormatUint(uint64(token), 10))
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("provider lookup answered %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var v struct {
		Charges []providerCharge `json:"charges"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("provider lookup: %w", err)
	}
	return v.Charges, nil
}

// recoverPayment is the engine's recovery hook (idem.WithRecovery). On a
// take-over it asks the provider, fencing with the new lease's token,
// whether the dead holder's charge landed. If it did, the key completes
// with the payment of that charge (the first, were there several) and the
// handler does not run; if not, the handler runs and charges. An error
// (provider unreachable) leaves the key in progress, for the next
// take-over to ask again. logf tells what each take-over found.
func recoverPayment(p *paymentProvider, l *ledger, logf func(format string, args ...any)) idem.RecoverFunc {
	return func(ctx context.Context, lease idem.Lease) (idem.Response, bool, error) {
		path, key, err := splitStorageKey(lease.Key)
		if err != nil {
			return idem.Response{}, false, err
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		charges, err := p.lookup(ctx, resource(path), key, lease.Token)
		switch {
		case err != nil:
			return idem.Response{}, false, err
		case len(charges) == 0:
			logf("take-over of %s key %q (token %d after %d): no charge landed, charging", path, key, lease.Token, lease.PrevToken)
			return idem.Response{}, false, nil
		}
		c := charges[0]
		pay := l.create(c.Amount, c.Currency, c.ID)
		logf("take-over of %s key %q (token %d after %d): recovered charge %s as %s", path, key, lease.Token, lease.PrevToken, c.ID, pay.ID)
		return paymentResponse(pay), true, nil
	}
}

// splitStorageKey returns the API path and the client's key of a key the
// middleware stored under its path (idem.StorageKey(key, path)).
func splitStorageKey(stored string) (path, key string, err error) {
	i := strings.IndexByte(stored, idem.ScopeSeparator)
	if i <= 0 {
		return "", "", fmt.Errorf("stored key %q is not scoped by a path", stored)
	}
	path, key = stored[:i], stored[i+1:]
	if strings.IndexByte(key, idem.ScopeSeparator) >= 0 {
		key = key[1:] // a key with ':' is stored with one more, in front
	}
	if again, err := idem.StorageKey(key, path); err != nil || again != stored {
		return "", "", errors.Join(fmt.Errorf("stored key %q does not decode", stored), err)
	}
	return path, key, nil
}
