package idemhttp

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
)

// Header names and defaults.
const (
	// DefaultHeader is the request header that carries the key.
	DefaultHeader = "Idempotency-Key"
	// ReplayedHeader is the default name of the marker added, with the
	// value "true", to every replayed response (Options.ReplayedHeader).
	// It is never stored.
	ReplayedHeader = "Idempotency-Replayed"
	// DefaultMaxRequestBody is the default limit on a buffered request body.
	DefaultMaxRequestBody = 1 << 20
	// DefaultRetryAfter is the default Retry-After of 409 and 503 answers.
	DefaultRetryAfter = time.Second
)

// DefaultReplayHeaders are the response headers stored and replayed when
// Options.ReplayHeaders is nil: what a client acts on, byte for byte.
var DefaultReplayHeaders = []string{"Content-Type", "Location", "ETag"}

// AllHeaders, as Options.ReplayHeaders, stores and replays every header
// the handler set except hop-by-hop headers and trailers, so that a replay
// is byte-identical to the first response (apart from the marker).
const AllHeaders = "*"

// Options configures Middleware. The zero value is usable: a required
// Idempotency-Key on POST and PATCH, the default fingerprint, 2xx..4xx
// stored, 1 MiB limits.
type Options struct {
	// Header is the request header that carries the key. Empty means
	// DefaultHeader. Names are case-insensitive.
	Header string
	// Optional lets guarded requests without the header pass through to the
	// handler untouched (no buffering, no idempotency). Otherwise they get
	// 400 missing_key. A header that is present but invalid is refused
	// either way. Use two middlewares for routes that differ.
	Optional bool
	// Methods lists the guarded methods (case-sensitive, as HTTP methods
	// are). Nil means POST and PATCH; an empty non-nil slice guards nothing.
	// Requests with other methods pass through untouched.
	Methods []string
	// Scope, when set, returns a namespace for the request (a tenant or
	// account id) in which its key lives (idem.Engine.DoScoped), so that
	// clients cannot see each other's keys. Requests whose scope is "" live
	// in the unscoped namespace, which no scoped key can reach and which
	// reaches no scoped key, whatever the header holds. It is applied
	// inside the engine's idem.WithScope. The scopes shorten the longest
	// key a client may send (see the package doc); a key above that limit
	// gets 400 invalid_key naming the limit, never the scope. A scope that
	// holds idem.ScopeSeparator or leaves no room for a key gets 400
	// invalid_key without details, and the error goes to OnError.
	Scope func(r *http.Request) string
	// Fingerprint identifies the request. Nil means NewFingerprinter with
	// zero FingerprintOptions (method, path, query, media type and body,
	// JSON canonicalized).
	Fingerprint FingerprintFunc
	// FingerprintPolicy is the id of Fingerprint's policy (its
	// FingerprintOptions.Policy, "payments/v2"), stored with every new
	// record on a store that keeps ids (idem.PolicyStore: the memory,
	// Redis, PostgreSQL and DynamoDB stores), so that a request is always
	// compared with a key under the policy the key was stored with. Change
	// it whenever the policy changes, and list the previous policy in
	// PriorPolicies for as long as its keys are retained. It must satisfy
	// idem.ValidatePolicy (Middleware panics otherwise). Empty means not
	// named.
	FingerprintPolicy string
	// PriorPolicies are the fingerprint policies used before, by id. A
	// request whose key is stored under id P (not FingerprintPolicy) is
	// fingerprinted with PriorPolicies[P]: the same request under P is
	// answered as it was then (the stored response replayed), a different
	// one gets 422. A key stored under an id that is neither
	// FingerprintPolicy nor listed here gets 409 policy_changed: never a
	// replay of what may be another request's response, never a 422 that
	// may be false. Nil means none.
	PriorPolicies map[string]FingerprintFunc
	// PriorFingerprints are earlier policies for keys stored without a
	// policy id (before ids were kept, by a store that keeps none, or
	// while FingerprintPolicy was empty): such a key is checked against
	// each of them in order, and one that gives the stored fingerprint
	// answers the request as it would have been under that policy (the
	// stored response replayed), not with 422. Nil means none.
	PriorFingerprints []FingerprintFunc
	// MaxRequestBody limits the buffered request body in bytes; a larger one
	// gets 413 body_too_large before the handler runs. Zero means
	// DefaultMaxRequestBody; negative means no limit.
	MaxRequestBody int64
	// MaxResponseSize caps the stored response (body plus stored header
	// names and values, as idem.Response.Size counts). Zero means
	// idem.DefaultMaxResponseSize; negative means no cap. See the package
	// doc for what happens above it.
	MaxResponseSize int
	// ReplayHeaders lists the response headers that are stored and
	// replayed byte for byte (case-insensitive). Nil means
	// DefaultReplayHeaders (Content-Type, Location, ETag); a list holding
	// AllHeaders ("*") means every header the handler set except
	// hop-by-hop headers and trailers. The first client always gets every
	// header the handler set.
	ReplayHeaders []string
	// ExpiresHeader, when set, names a response header that tells the
	// client until when its key is kept: the HTTP-date of the stored
	// record's expiry on a replay, and the time of the answer plus the
	// engine's retention on the first response of a request whose
	// response was stored as completed. A retry after it runs as a new request. Empty means no such
	// header. "Idempotency-Key-Expires" is a fitting name.
	ExpiresHeader string
	// ReplayedHeader names the marker added, with the value "true", to
	// every replayed response. Empty means ReplayedHeader
	// ("Idempotency-Replayed"); Stripe's clients look for
	// "Idempotent-Replayed".
	ReplayedHeader string
	// ReplayPolicy names which responses are stored and replayed:
	// PolicyIETF (the default: 2xx and 4xx), PolicyStripe (everything,
	// errors included) or PolicyCache2xxOnly. An unknown policy panics in
	// Middleware (use ParseReplayPolicy for user input).
	ReplayPolicy ReplayPolicy
	// StoreStatus, when set, overrides ReplayPolicy: it decides from the
	// handler's status code whether the response is stored and replayed
	// (true) or the key is released so that the client can retry (false).
	StoreStatus func(status int) bool
	// UncertainStatus, when set, names the handler's status codes that mean
	// the handler cannot tell whether its effect happened (a 504 from a
	// payment provider that timed out, say). Such a response is not
	// stored: the key is recorded uncertain (idem.ErrUncertain; on a store
	// without idem.UncertainStore, or with a recovery hook, it stays in
	// progress for a take-over instead), and this client and every later
	// one get 409 operation_uncertain until an operator resolves the key
	// (idemctl resolve). It is asked before StoreStatus. Nil means no
	// status is uncertain.
	UncertainStatus func(status int) bool
	// RetryAfter is sent, rounded up to whole seconds (at least 1), with
	// 409 in_progress and 503 unavailable. Zero means DefaultRetryAfter.
	RetryAfter time.Duration
	// DocsURL, when set, is sent as `Link: <DocsURL>; rel="describedby"`
	// with every 400, 409 and 422 the middleware answers, as the IETF
	// Idempotency-Key draft suggests, so that clients find what the error
	// means. Spaces, '<', '>', '"', control and non-ASCII bytes in it are
	// percent-encoded.
	DocsURL string
	// OnError, when set, is told about errors the client does not see in
	// full: store failures (answered with 503), failures to record the
	// outcome of a handler that ran (the client got the handler's
	// response), a scope under which no key can be stored (Scope), and a
	// stored key the store refused as invalid (both answered with 400). It
	// is not called for other refusals (400, 409, 413, 422) or when the
	// client went away. It must be safe for concurrent use.
	OnError func(r *http.Request, err error)
}

// StatusError is the error the engine function returns when the handler's
// status is not stored (by default a 5xx). The engine's default classifier
// treats it as retryable and releases the key; a custom classifier given to
// idem.WithClassifier must do the same, or the response is stored as a
// failure and replayed.
type StatusError struct {
	Status int
}

// Error says which status released the key.
func (e *StatusError) Error() string {
	return fmt.Sprintf("idemhttp: handler answered %d; key released for retry", e.Status)
}

// UncertainError is the error the engine function returns, marked
// idem.MarkAmbiguous, when Options.UncertainStatus names the handler's
// status.
type UncertainError struct {
	Status int
}

// Error says which status made the outcome uncertain.
func (e *UncertainError) Error() string {
	return fmt.Sprintf("idemhttp: handler answered %d: outcome uncertain", e.Status)
}

// Middleware returns middleware that runs guarded requests through e, at
// most once per idempotency key, as the package doc describes. It panics if
// e is nil, if a fingerprint policy id of opts is invalid
// (idem.ValidatePolicy; a PriorPolicies id must not be empty either), or,
// when applied, if the handler is nil.
func Middleware(e *idem.Engine, opts Options) func(http.Handler) http.Handler {
	if e == nil {
		panic("idemhttp: Middleware with nil Engine")
	}
	h := &handler{engine: e, opts: opts}
	if h.opts.Header == "" {
		h.opts.Header = DefaultHeader
	}
	methods := opts.Methods
	if methods == nil {
		methods = []string{http.MethodPost, http.MethodPatch}
	}
	h.methods = make(map[string]bool, len(methods))
	for _, m := range methods {
		h.methods[m] = true
	}
	if h.opts.Fingerprint == nil {
		h.opts.Fingerprint = defaultFingerprint
	}
	if err := idem.ValidatePolicy(opts.FingerprintPolicy); err != nil {
		panic("idemhttp: Options.FingerprintPolicy: " + err.Error())
	}
	for id := range opts.PriorPolicies {
		if err := idem.ValidatePolicy(id); err != nil || id == "" {
			panic(fmt.Sprintf("idemhttp: Options.PriorPolicies: id %q: a valid, non-empty policy id is required (%v)", id, err))
		}
	}
	if h.opts.MaxRequestBody == 0 {
		h.opts.MaxRequestBody = DefaultMaxRequestBody
	}
	if h.opts.MaxResponseSize == 0 {
		h.opts.MaxResponseSize = idem.DefaultMaxResponseSize
	}
	if h.opts.ReplayedHeader == "" {
		h.opts.ReplayedHeader = ReplayedHeader
	}
	marker := http.CanonicalHeaderKey(h.opts.ReplayedHeader)
	replayHeaders := opts.ReplayHeaders
	if replayHeaders == nil {
		replayHeaders = DefaultReplayHeaders
	}
	if slices.Contains(replayHeaders, AllHeaders) {
		h.keep = func(name string) bool { return storedHeader(name) && http.CanonicalHeaderKey(name) != marker }
	} else {
		set := make(map[string]bool, len(replayHeaders))
		for _, n := range replayHeaders {
			set[http.CanonicalHeaderKey(n)] = true
		}
		h.keep = func(name string) bool {
			k := http.CanonicalHeaderKey(name)
			return set[k] && k != marker && storedHeader(name)
		}
	}
	if h.opts.StoreStatus == nil {
		p, err := ParseReplayPolicy(string(opts.ReplayPolicy))
		if err != nil {
			panic(err.Error())
		}
		h.opts.StoreStatus = p.StoreStatus
	}
	if h.opts.RetryAfter <= 0 {
		h.opts.RetryAfter = DefaultRetryAfter
	}
	if opts.DocsURL != "" {
		h.link = "<" + linkTarget(opts.DocsURL) + `>; rel="describedby"`
	}
	h.retryAfter = int((h.opts.RetryAfter + time.Second - 1) / time.Second)
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("idemhttp: Middleware applied to nil Handler")
		}
		c := *h
		c.next = next
		return &c
	}
}

// handler is the middleware applied to one http.Handler.
type handler struct {
	engine     *idem.Engine
	opts       Options // with defaults filled in
	methods    map[string]bool
	keep       func(name string) bool
	retryAfter int    // seconds
	link       string // Link header of 400/409/422, "" without DocsURL
	next       http.Handler
}

func (h *handler) onError(r *http.Request, err error) {
	if h.opts.OnError != nil {
		h.opts.OnError(r, err)
	}
}

// linkTarget percent-encodes the bytes of u that cannot stand between the
// angle brackets of a Link header.
func linkTarget(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '"' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(u[i])
	}
	return b.String()
}
