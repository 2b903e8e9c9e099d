package idemhttp

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ProblemContentType is the media type of the middleware's error responses.
const ProblemContentType = "application/problem+json"

// Reasons name why the middleware answered instead of the handler; they are
// the "reason" member of its problem documents.
const (
	ReasonMissingKey           = "missing_key"
	ReasonInvalidKey           = "invalid_key"
	ReasonUnreadableBody       = "unreadable_body"
	ReasonFingerprintFailed    = "fingerprint_failed"
	ReasonBodyTooLarge         = "body_too_large"
	ReasonFingerprintMismatch  = "fingerprint_mismatch"
	ReasonInProgress           = "in_progress"
	ReasonUnavailable          = "unavailable"
	ReasonAborted              = "aborted"
	ReasonUnreplayableResponse = "unreplayable_response"
	// ReasonResponseTooLarge is the reason of the 500 stored in place of a
	// response above the size cap; clients see it on replay.
	ReasonResponseTooLarge = "response_too_large"
	// ReasonOperationUncertain is the reason of the 409 answered for a key
	// whose execution may or may not have performed its effect
	// (idem.ErrUncertain), with Type ProblemTypeUncertain and SafeNewKey
	// false: until an operator resolves the key, the same key gets this
	// answer again and a new key may perform the effect twice.
	ReasonOperationUncertain = "operation_uncertain"
	// ReasonPolicyChanged is the reason of the 409 answered for a key
	// stored under a fingerprint policy the middleware no longer knows
	// (idem.ErrPolicyChanged: neither Options.FingerprintPolicy nor one of
	// Options.PriorPolicies), with Type ProblemTypePolicyChanged and
	// SafeNewKey false: the request cannot be compared with the one that
	// used the key, so it is neither replayed nor refused as different, and
	// a new key may perform the effect twice if it was the same request.
	ReasonPolicyChanged = "policy_changed"
)

// ProblemTypePolicyChanged is the problem type of a key stored under an
// unknown fingerprint policy (ReasonPolicyChanged).
const ProblemTypePolicyChanged = "urn:idembench:problem:fingerprint-policy-changed"

// ProblemTypeUncertain is the problem type of an uncertain outcome
// (ReasonOperationUncertain).
const ProblemTypeUncertain = "urn:idembench:problem:operation-uncertain"

// Retry advice, the "retry" member of a problem document: what a client
// may do next with its key.
const (
	// RetrySameKey: nothing was stored under the key (or a running request
	// holds it); the client may send the request again with the same key,
	// after Retry-After when present.
	RetrySameKey = "same_key"
	// RetryNewKey: the key cannot be used for this request (missing,
	// malformed, or already used by a different request); a request must
	// carry a new key.
	RetryNewKey = "new_key"
	// RetryNone: the request was processed and its outcome is stored but
	// cannot be replayed; neither the same key (the same answer) nor a new
	// key (a second execution) helps.
	RetryNone = "none"
)

// retryAdvice maps each reason to its Retry advice.
var retryAdvice = map[string]string{
	ReasonMissingKey:           RetryNewKey,
	ReasonInvalidKey:           RetryNewKey,
	ReasonFingerprintMismatch:  RetryNewKey,
	ReasonUnreadableBody:       RetrySameKey,
	ReasonFingerprintFailed:    RetrySameKey,
	ReasonBodyTooLarge:         RetrySameKey,
	ReasonInProgress:           RetrySameKey,
	ReasonUnavailable:          RetrySameKey,
	ReasonAborted:              RetrySameKey,
	ReasonUnreplayableResponse: RetryNone,
	ReasonResponseTooLarge:     RetryNone,
	ReasonOperationUncertain:   RetryNone,
	ReasonPolicyChanged:        RetryNone,
}

// Problem is the JSON problem document (RFC 9457) the middleware writes.
// Type is "about:blank" and Title the status text, as the RFC asks for that
// type, except for an uncertain outcome (ProblemTypeUncertain); Reason is
// the machine-readable cause and Retry says whether the client may retry
// with the same key (RetrySameKey), must use a new one (RetryNewKey), or
// should not retry (RetryNone). SafeNewKey is present only when the answer
// is about the outcome of an execution: false says that a request with a
// new key may perform the effect a second time.
type Problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail,omitempty"`
	Reason     string `json:"reason"`
	Retry      string `json:"retry"`
	SafeNewKey *bool  `json:"safe_new_key,omitempty"`
}

// newProblem returns the problem document for status and reason.
func newProblem(status int, reason, detail string) Problem {
	p := Problem{
		Type: "about:blank", Title: http.StatusText(status), Status: status,
		Detail: detail, Reason: reason, Retry: retryAdvice[reason],
	}
	switch reason {
	case ReasonOperationUncertain:
		p.Type, p.Title, p.SafeNewKey = ProblemTypeUncertain, "Operation outcome uncertain", new(false)
	case ReasonPolicyChanged:
		p.Type, p.Title, p.SafeNewKey = ProblemTypePolicyChanged, "Fingerprint policy changed", new(false)
	}
	return p
}

// body encodes p. Encoding a Problem cannot fail.
func (p Problem) body() []byte {
	b, _ := json.Marshal(p)
	return append(b, '\n')
}

// writeProblem writes a problem document. retryAfter > 0 adds Retry-After
// in whole seconds. A 400, 409 or 422 carries a Link to Options.DocsURL
// (rel="describedby") when one is configured.
func (h *handler) writeProblem(w http.ResponseWriter, status int, reason, detail string, retryAfter int) {
	hd := w.Header()
	hd.Set("Content-Type", ProblemContentType)
	hd.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		hd.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if h.link != "" {
		switch status {
		case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
			hd.Add("Link", h.link)
		}
	}
	b := newProblem(status, reason, detail).body()
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
