package idemhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
)

// ServeHTTP guards one request; see the package doc.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.methods[r.Method] {
		h.next.ServeHTTP(w, r)
		return
	}
	values := r.Header.Values(h.opts.Header)
	if len(values) == 0 {
		if h.opts.Optional {
			h.next.ServeHTTP(w, r)
			return
		}
		h.writeProblem(w, http.StatusBadRequest, ReasonMissingKey,
			fmt.Sprintf("%s requests need the %s header", r.Method, h.opts.Header), 0)
		return
	}
	if len(values) > 1 {
		h.writeProblem(w, http.StatusBadRequest, ReasonInvalidKey,
			fmt.Sprintf("the %s header appears %d times", h.opts.Header, len(values)), 0)
		return
	}
	key, err := ParseKey(values[0])
	if err != nil {
		h.writeProblem(w, http.StatusBadRequest, ReasonInvalidKey, err.Error(), 0)
		return
	}
	scope := h.scope(r)
	if detail, err := h.checkKey(key, scope); detail != "" {
		if err != nil {
			h.onError(r, err)
		}
		h.writeProblem(w, http.StatusBadRequest, ReasonInvalidKey, detail, 0)
		return
	}
	body, err := h.readBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.writeProblem(w, http.StatusRequestEntityTooLarge, ReasonBodyTooLarge,
				fmt.Sprintf("request body above %d bytes", tooLarge.Limit), 0)
			return
		}
		h.writeProblem(w, http.StatusBadRequest, ReasonUnreadableBody, "reading the request body failed", 0)
		return
	}
	fp, err := h.opts.Fingerprint(r, body)
	if err != nil {
		h.writeProblem(w, http.StatusBadRequest, ReasonFingerprintFailed, err.Error(), 0)
		return
	}

	var (
		c     *capture
		fnErr error
	)
	fn := func(ctx context.Context) (idem.Response, error) {
		c = newCapture(w, h.opts.MaxResponseSize, h.keep)
		h.next.ServeHTTP(c, withBody(ctx, r, body))
		var resp idem.Response
		resp, fnErr = h.outcome(c)
		return resp, fnErr
	}
	claim := idem.Claim{Fingerprint: fp, Policy: h.opts.FingerprintPolicy}
	if h.opts.PriorPolicies != nil || h.opts.PriorFingerprints != nil {
		claim.Prior = h.prior(r, body)
	}
	res, err := h.engine.DoClaim(r.Context(), scope, key, claim, fn)
	if c != nil {
		h.afterRun(w, r, c, err, fnErr)
		return
	}
	h.respond(w, r, res, err)
}

// prior is idem.Claim.Prior for the request r with body: a record stored
// under id is compared with PriorPolicies[id], one stored without an id
// with each of PriorFingerprints. A policy that cannot fingerprint the
// request counts as unknown (the key is then answered policy_changed,
// never a guessed 422).
func (h *handler) prior(r *http.Request, body []byte) func(id string, stored idem.Fingerprint) (known, same bool) {
	return func(id string, stored idem.Fingerprint) (known, same bool) {
		if id == "" {
			for _, f := range h.opts.PriorFingerprints {
				if pfp, err := f(r, body); err == nil && pfp == stored {
					return true, true
				}
			}
			return len(h.opts.PriorFingerprints) > 0, false
		}
		f, ok := h.opts.PriorPolicies[id]
		if !ok {
			return false, false
		}
		pfp, err := f(r, body)
		if err != nil {
			return false, false
		}
		return true, pfp == stored
	}
}

// checkKey checks the client's key as the engine will store it, under the
// engine's scope and the request's, and returns the problem detail for the
// client, "" when the key can be stored. The detail never names a scope or
// the stored key: a key too long says the limit that applies to this
// request (keyLimit). err is set when the cause is on the server's side (a
// scope that holds idem.ScopeSeparator or leaves no room for a key), for
// Options.OnError.
func (h *handler) checkKey(key, scope string) (detail string, err error) {
	scopes := []string{h.engine.Scope(), scope}
	if _, err := idem.StorageKey("k", scopes...); err != nil {
		return "the key cannot be stored in this request's namespace",
			fmt.Errorf("idemhttp: the request's scope cannot hold keys: %w", err)
	}
	if limit := keyLimit(key, scopes...); len(key) > limit {
		if strings.IndexByte(key, idem.ScopeSeparator) >= 0 {
			return fmt.Sprintf("key too long: %d bytes, at most %d (a key that contains %q has one byte less)",
				len(key), limit, idem.ScopeSeparator), nil
		}
		return fmt.Sprintf("key too long: %d bytes, at most %d", len(key), limit), nil
	}
	if err := idem.ValidateKey(key); err != nil {
		return err.Error(), nil // empty or not printable ASCII: about the key alone
	}
	if _, err := idem.StorageKey(key, scopes...); err != nil {
		return "the key cannot be stored", fmt.Errorf("idemhttp: %w", err)
	}
	return "", nil
}

// scope returns the request's scope (Options.Scope), "" without one. The
// engine keeps the key in that scope (idem.Engine.DoScoped), so no header
// value can name another tenant's record.
func (h *handler) scope(r *http.Request) string {
	if h.opts.Scope == nil {
		return ""
	}
	return h.opts.Scope(r)
}

// readBody reads the whole request body within the limit; a body above it
// returns an error wrapping *http.MaxBytesError.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := h.opts.MaxRequestBody
	if limit < 0 {
		return io.ReadAll(r.Body)
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// withBody returns r with ctx and the buffered body, readable again.
func withBody(ctx context.Context, r *http.Request, body []byte) *http.Request {
	r2 := r.WithContext(ctx)
	if body == nil && (r.Body == nil || r.Body == http.NoBody) {
		return r2
	}
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r2
}

// outcome turns the handler's response into the engine function's result.
func (h *handler) outcome(c *capture) (idem.Response, error) {
	c.finish()
	resp := idem.Response{Status: c.status, Header: c.stored, Body: c.body.Bytes()}
	if c.spilled {
		p := newProblem(http.StatusInternalServerError, ReasonResponseTooLarge, fmt.Sprintf(
			"the response to the original request (status %d) was above the replay limit of %d bytes; "+
				"the request was processed but its response cannot be replayed", c.status, h.opts.MaxResponseSize))
		resp = idem.Response{
			Status: p.Status,
			Header: map[string][]string{"Content-Type": {ProblemContentType}},
			Body:   p.body(),
		}
	}
	if h.opts.UncertainStatus != nil && !c.spilled && h.opts.UncertainStatus(c.status) {
		return resp, idem.MarkAmbiguous(&UncertainError{Status: c.status})
	}
	if !h.opts.StoreStatus(c.status) {
		return resp, &StatusError{Status: c.status}
	}
	if c.spilled {
		return resp, idem.Permanent(fmt.Errorf("idemhttp: %w: limit %d bytes", idem.ErrResponseTooLarge, h.opts.MaxResponseSize))
	}
	return resp, nil
}

// afterRun answers a request whose handler ran: with the handler's response,
// unless a fault hook aborted the execution.
func (h *handler) afterRun(w http.ResponseWriter, r *http.Request, c *capture, err, fnErr error) {
	if errors.Is(err, idem.ErrAborted) {
		if !c.spilled {
			h.writeProblem(w, http.StatusServiceUnavailable, ReasonAborted, "execution aborted by a fault hook", h.retryAfter)
		}
		return
	}
	if errors.Is(err, idem.ErrUncertain) && !c.spilled {
		h.writeUncertain(w)
		return
	}
	if err == nil && h.opts.ExpiresHeader != "" && !c.spilled {
		w.Header().Set(h.opts.ExpiresHeader, time.Now().Add(h.engine.Retention()).UTC().Format(http.TimeFormat))
	}
	c.send()
	if err != nil && err != fnErr {
		h.onError(r, err)
	}
}

// respond answers a request whose handler did not run.
func (h *handler) respond(w http.ResponseWriter, r *http.Request, res idem.Result, err error) {
	switch {
	case err == nil:
		if h.opts.ExpiresHeader != "" && !res.ExpiresAt.IsZero() {
			w.Header().Set(h.opts.ExpiresHeader, res.ExpiresAt.UTC().Format(http.TimeFormat))
		}
		h.replay(w, res.Response)
	case errors.Is(err, idem.ErrInvalidKey):
		// checkKey passed, so the store refused the stored key: its error
		// names it, and maybe a scope; only OnError sees it.
		h.onError(r, err)
		h.writeProblem(w, http.StatusBadRequest, ReasonInvalidKey, "the key cannot be stored", 0)
	case errors.Is(err, idem.ErrFingerprintMismatch):
		h.writeProblem(w, http.StatusUnprocessableEntity, ReasonFingerprintMismatch,
			"this key was already used by a different request (method, path, query or body differ)", 0)
	case errors.Is(err, idem.ErrInProgress):
		h.writeProblem(w, http.StatusConflict, ReasonInProgress,
			"a request with this key is still being processed; retry later", h.retryAfter)
	case errors.Is(err, idem.ErrAborted):
		h.writeProblem(w, http.StatusServiceUnavailable, ReasonAborted, "execution aborted by a fault hook", h.retryAfter)
	case errors.Is(err, idem.ErrUncertain):
		h.writeUncertain(w)
	case errors.Is(err, idem.ErrPolicyChanged):
		h.writeProblem(w, http.StatusConflict, ReasonPolicyChanged,
			"this key was stored under a fingerprint policy the server no longer knows, so the request cannot be "+
				"compared with the one that used it; it was not processed, and the key cannot be used until it expires", 0)
	default:
		if r.Context().Err() == nil {
			h.onError(r, err)
		}
		h.writeProblem(w, http.StatusServiceUnavailable, ReasonUnavailable,
			"the idempotency store is unavailable; the request was not processed", h.retryAfter)
	}
}

// writeUncertain answers for a key whose outcome is uncertain.
func (h *handler) writeUncertain(w http.ResponseWriter) {
	h.writeProblem(w, http.StatusConflict, ReasonOperationUncertain,
		"the request with this key may or may not have been processed; it will not be processed again "+
			"until the operator resolves it, and a request with a new key may be processed twice", 0)
}

// replay writes a stored response and the replay marker.
func (h *handler) replay(w http.ResponseWriter, resp idem.Response) {
	if resp.Status < 200 || resp.Status > 599 {
		h.writeProblem(w, http.StatusInternalServerError, ReasonUnreplayableResponse,
			fmt.Sprintf("the stored response has status %d", resp.Status), 0)
		return
	}
	copyHeader(w.Header(), resp.Header)
	w.Header().Set(h.opts.ReplayedHeader, "true")
	if _, ok := resp.Header["Content-Length"]; !ok && bodyAllowed(resp.Status) {
		w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}
