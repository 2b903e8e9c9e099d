package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// The known-bad idempotency designs --flaw selects. Each is a mistake
// found in real services; idembench's black-box mode must catch every one,
// as a violation of an invariant or as a failed conformance probe.
const (
	// flawCheckThenAct claims a key in two steps, read then write, so
	// concurrent duplicates that both read "absent" both run.
	flawCheckThenAct = "check-then-act"
	// flawStored5xx stores and replays a 5xx answer, so a request that
	// failed on a transient error can never succeed with its key.
	flawStored5xx = "stored-5xx"
	// flawUnscopedPath keys records by the key alone, not by path, so the
	// same key on /transfers collides with /payments.
	flawUnscopedPath = "unscoped-path"
	// flawBodyBlind fingerprints method and path only, so the same key
	// with another body replays the first answer instead of 422.
	flawBodyBlind = "body-blind-fingerprint"
	// flawFailOpen runs the handler without idempotency when the store
	// fails (the store here fails one Acquire in three).
	flawFailOpen = "fail-open"
	// flawRerender re-renders replays with a fresh timestamp instead of
	// replaying the stored bytes.
	flawRerender = "rerender-replay"
	// flawEffectBeforeClaim charges the provider before claiming the key,
	// so every retry charges again.
	flawEffectBeforeClaim = "effect-before-claim"
)

// flaw builds the idempotency layer of a known-bad design. It gets the
// correct engine, the correct middleware options and the charge function.
type flaw func(eng *idem.Engine, opts idemhttp.Options, charge chargeFunc) func(http.Handler) http.Handler

var flaws = map[string]flaw{
	flawCheckThenAct: func(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
		store := naive.NewCheckThenAct(naive.Options{Window: 5 * time.Millisecond})
		return idemhttp.Middleware(idem.New(store), opts)
	},
	flawStored5xx: func(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
		opts.StoreStatus = func(int) bool { return true }
		return idemhttp.Middleware(eng, opts)
	},
	flawUnscopedPath: func(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
		opts.Scope = nil
		return idemhttp.Middleware(eng, opts)
	},
	flawBodyBlind: func(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
		opts.Fingerprint = func(r *http.Request, _ []byte) (idem.Fingerprint, error) {
			return idem.FingerprintString(r.Method, r.URL.Path), nil
		}
		return idemhttp.Middleware(eng, opts)
	},
	flawFailOpen:          failOpen,
	flawRerender:          rerender,
	flawEffectBeforeClaim: effectBeforeClaim,
}

func flawNames() []string { return slices.Sorted(maps.Keys(flaws)) }

// flakyStore fails every third Acquire, as a store under load does.
type flakyStore struct {
	idem.Store
	n atomic.Int64
}

var errFlaky = errors.New("store timeout")

func (s *flakyStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key + strconv.FormatInt(s.n.Add(1), 10)))
	if h.Sum32()%3 == 0 {
		return nil, nil, errFlaky
	}
	return s.Store.Acquire(ctx, key, fp, ttl)
}

// failOpen answers a store failure by running the handler anyway, without
// idempotency ("better to serve than to fail").
func failOpen(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
	mw := idemhttp.Middleware(idem.New(&flakyStore{Store: eng.Store()}), opts)
	return func(next http.Handler) http.Handler {
		guarded := mw(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			rec := newBuffered()
			r2 := r.Clone(r.Context())
			r2.Body = io.NopCloser(bytes.NewReader(body))
			guarded.ServeHTTP(rec, r2)
			if rec.status == http.StatusServiceUnavailable && bytes.Contains(rec.body.Bytes(), []byte(`"unavailable"`)) {
				r.Body = io.NopCloser(bytes.NewReader(body))
				next.ServeHTTP(w, r)
				return
			}
			rec.copyTo(w, nil)
		})
	}
}

// rerender adds a fresh "rendered_at" to every JSON answer, replays
// included, as a service that stores the payment and renders the answer
// anew for each request.
func rerender(eng *idem.Engine, opts idemhttp.Options, _ chargeFunc) func(http.Handler) http.Handler {
	mw := idemhttp.Middleware(eng, opts)
	return func(next http.Handler) http.Handler {
		guarded := mw(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := newBuffered()
			guarded.ServeHTTP(rec, r)
			rec.copyTo(w, func(b []byte) []byte {
				var v map[string]any
				if json.Unmarshal(b, &v) != nil {
					return b
				}
				v["rendered_at"] = time.Now().UTC().Format(time.RFC3339Nano)
				out, _ := json.Marshal(v)
				return append(out, '\n')
			})
		})
	}
}

// effectBeforeClaim charges the provider, then hands the request to the
// idempotency middleware: the charge is not protected by the key.
func effectBeforeClaim(eng *idem.Engine, opts idemhttp.Options, charge chargeFunc) func(http.Handler) http.Handler {
	mw := idemhttp.Middleware(eng, opts)
	return func(next http.Handler) http.Handler {
		guarded := mw(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if charge != nil && r.Header.Get(idemhttp.DefaultHeader) != "" {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var req struct {
					Amount   int64  `json:"amount"`
					Currency string `json:"currency"`
				}
				_ = json.Unmarshal(body, &req)
				if _, err := charge(r, req.Amount, req.Currency); err != nil {
					writeJSON(w, http.StatusBadGateway, map[string]string{"error": "payment provider: " + err.Error()})
					return
				}
			}
			guarded.ServeHTTP(w, r)
		})
	}
}

// buffered is a ResponseWriter that keeps the answer for a wrapper to
// inspect before it is sent.
type buffered struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newBuffered() *buffered { return &buffered{header: http.Header{}, status: http.StatusOK} }

func (b *buffered) Header() http.Header         { return b.header }
func (b *buffered) WriteHeader(status int)      { b.status = status }
func (b *buffered) Write(p []byte) (int, error) { return b.body.Write(p) }

// copyTo sends the kept answer to w, its body passed through edit when
// edit is not nil.
func (b *buffered) copyTo(w http.ResponseWriter, edit func([]byte) []byte) {
	body := b.body.Bytes()
	if edit != nil {
		body = edit(body)
	}
	maps.Copy(w.Header(), b.header)
	w.Header().Del("Content-Length")
	w.WriteHeader(b.status)
	_, _ = w.Write(body)
}
