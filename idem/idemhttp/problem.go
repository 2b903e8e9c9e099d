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
)

// Problem is the JSON problem document (RFC 9457) the middleware writes.
// Type is always "about:blank" and Title the status text, as the RFC asks
// for that type; Reason is the machine-readable cause.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Reason string `json:"reason"`
}

// newProblem returns the problem document for status and reason.
func newProblem(status int, reason, detail string) Problem {
	return Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Reason: reason}
}

// body encodes p. Encoding a Problem cannot fail.
func (p Problem) body() []byte {
	b, _ := json.Marshal(p)
	return append(b, '\n')
}

// writeProblem writes a problem document. retryAfter > 0 adds Retry-After
// in whole seconds.
func writeProblem(w http.ResponseWriter, status int, reason, detail string, retryAfter int) {
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	b := newProblem(status, reason, detail).body()
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
