// Package idemhttp is net/http middleware that makes unsafe requests
// idempotent with an Idempotency-Key header, on top of an *idem.Engine. It
// works with any router: Middleware returns a func(http.Handler)
// http.Handler. It uses the standard library only.
//
//	eng := idem.New(memstore.New(memstore.Options{}))
//	mux.Handle("POST /payments", idemhttp.Middleware(eng, idemhttp.Options{})(createPayment))
//
// # What happens to a request
//
// Requests whose method is not guarded (Options.Methods, default POST and
// PATCH) pass through untouched. A guarded request without the header is
// refused, or passes through untouched when Options.Optional is set. Any
// other guarded request has its body read into memory (up to
// Options.MaxRequestBody), is fingerprinted (Options.Fingerprint) and is run
// through Engine.Do under its key: the handler runs at most once per key, and
// every later request with the same key and fingerprint gets the stored
// response again.
//
// The handler gets the request with the buffered body and a context that
// carries the lease (idem.LeaseFrom) and is cancelled if the lease is lost.
// Its response is buffered while it runs and sent when it returns, after the
// outcome has been recorded, so a client that received a response can rely
// on its retry replaying it.
//
// # The key header
//
// The Idempotency-Key header is an RFC 8941 string, as the IETF draft
// defines it: `Idempotency-Key: "8e03978e-40d5"`. A bare value names the
// same key as its quoted form (`8e03978e-40d5`), for the many clients that
// send it unquoted. Lists, parameters and malformed strings are refused
// with 400 invalid_key; ParseKey states the exact rules. The key then
// follows idem.ValidateKey.
//
// # Key length and scopes
//
// The store keeps a key under idem.StorageKey(key, engine scope, request
// scope), and that stored key counts against idem.MaxKeyLen (255 bytes).
// So the longest key a client may send is MaxKeyLen less len(scope)+1 for
// each scope that is set (the engine's idem.WithScope, the request's
// Options.Scope), less 1 more when the key contains ':' (StorageKey
// escapes such a key with one byte): 255 bytes without scopes (254 with
// ':'), 235 under a 19-byte tenant id (234 with ':'). A longer key gets
// 400 invalid_key whose detail states the limit that applies to this
// request, `key too long: 236 bytes, at most 235`. No answer to a client
// ever names a scope or the stored key. A scope the key cannot be stored
// under (it holds ':', or leaves no room for a key) is the server's
// fault: the client gets 400 invalid_key ("the key cannot be stored in
// this request's namespace") and Options.OnError gets the error.
//
// # Status codes
//
// Error responses of the middleware itself are small JSON problem documents
// (RFC 9457, Content-Type application/problem+json) whose "reason" member
// names the cause and whose "retry" member tells the client what it may do
// next: "same_key" (send the request again with the same key, after
// Retry-After when given), "new_key" (this key cannot serve this request)
// or "none" (the request was processed but its response cannot be
// replayed). With Options.DocsURL, every 400, 409 and 422 carries
// `Link: <DocsURL>; rel="describedby"`:
//
//	status  reason                when
//	400     missing_key           guarded method, no key header, Optional not set
//	400     invalid_key           empty, too long (idem.MaxKeyLen less the scopes, see
//	                              "Key length and scopes"), not printable ASCII,
//	                              not one RFC 8941 string (a list, parameters),
//	                              or the header repeated
//	400     unreadable_body       reading the request body failed
//	400     fingerprint_failed    a custom Options.Fingerprint returned an error
//	413     body_too_large        request body above Options.MaxRequestBody
//	422     fingerprint_mismatch  key already used by a different request
//	409     in_progress           key held by a running request (with Retry-After);
//	                              with idem.WithConflictWait the engine first waits
//	                              up to its bound and replays if the first finishes
//	503     unavailable           the idempotency store failed (with Retry-After);
//	                              the middleware fails closed, the handler did not run
//	503     aborted               an idem fault hook aborted the execution (tests)
//	500     unreplayable_response the stored response has a status code that
//	                              cannot be written (not 200..599)
//	any     (replay)              stored response, byte for byte, plus
//	                              Idempotency-Replayed: true
//
// # What is stored and replayed
//
// By default (Options.ReplayPolicy PolicyIETF) every response with a
// status below 500 (2xx, 3xx and 4xx) is stored and replayed; a 5xx is sent
// to the client but the key is released, so the client can retry with the
// same key. PolicyStripe stores errors too, PolicyCache2xxOnly only 2xx;
// Options.StoreStatus overrides the policy. A status that
// Options.UncertainStatus names records the key uncertain instead: every
// request for it gets 409 operation_uncertain until it is resolved. Technically the engine function returns a *StatusError for a
// status that is not stored; the engine's default classifier treats it as
// retryable, and a custom one (idem.WithClassifier) must do the same.
//
// The replay carries the stored status, the stored headers
// (Options.ReplayHeaders: by default Content-Type, Location and ETag;
// AllHeaders for every header the handler set except hop-by-hop ones and
// trailers) and the body byte for byte, plus the marker
// Idempotency-Replayed: true (Options.ReplayedHeader renames it). The first response has no such header. A
// response without Content-Type gets the sniffed type stored, as net/http
// would send it. Informational (1xx) responses are not forwarded, and
// Flush and Hijack are not available to the handler: the response is
// buffered.
//
// # Response size cap
//
// A response larger than Options.MaxResponseSize (body plus stored header
// names and values, default idem.DefaultMaxResponseSize) is never truncated.
// From the write that crosses the cap on, the response is streamed to the
// client, so the first client still gets it in full; the key is then stored
// as a failure (status 500, reason response_too_large), so that a retry with
// the same key does not run the handler again but learns that the original
// response cannot be replayed. Keep the cap at or below the engine's
// idem.WithMaxResponseSize; if the engine's cap is lower the engine's own
// rule applies (the first client still gets the full response; replays get
// the engine's plain-text 500).
//
// # Panics
//
// A panic in the handler releases the key (the engine does so before the
// panic leaves Engine.Do) and then continues: the middleware re-panics so
// that net/http, or your recovery middleware, sees it. net/http closes the
// connection; the client can retry with the same key and the handler runs
// again. Nothing of the buffered response is sent.
//
// # Outcome not recorded
//
// If the handler ran but recording its outcome failed (store error, or the
// lease was lost and taken over meanwhile), the client still gets the
// handler's response, because its side effect happened; the error goes to
// Options.OnError.
//
// # Fingerprint
//
// The default fingerprint (NewFingerprinter with zero FingerprintOptions)
// covers the method, the path, the query (parameters sorted), the media type
// and the body. JSON bodies (media type application/json or any +json) are
// canonicalized first (CanonicalJSON), so a retry that reorders object
// members or changes whitespace is the same request; bodies that are not
// valid JSON are compared byte for byte.
package idemhttp
