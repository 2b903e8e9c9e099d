package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// LeanRecord is the "replay re-rendered from a lean record" design: a
// completed or failed record keeps the response body only, and a replay
// derives the rest from the record's state: status 200 for a completed
// key, 500 for a failed one, no headers. A request answered 201 Created
// with a Location header replays as a bare 200; an ETag or a Content-Type
// is lost. Clients that act on the status or follow the Location break on
// a retry, though no effect ran twice. Found by I3 wherever a request is
// replayed: the simulation and the real-time workload both answer 201 with
// Location, ETag and Content-Type, 422 or 409 (run: scenario duplicates).
//
// Fencing, tokens, take-over, retention and fingerprints are sound.
type LeanRecord struct {
	mapStore
}

// NewLeanRecord returns a LeanRecord store.
func NewLeanRecord(opts Options) *LeanRecord {
	return newDesign[LeanRecord](opts)
}

// lean is what LeanRecord keeps of resp: the body, with the status its
// state implies. Dropping the rest is the flaw.
func lean(resp idem.Response, st idem.Status) idem.Response {
	status := 200
	if st == idem.StatusFailed {
		status = 500
	}
	return idem.Response{Status: status, Body: resp.Body}
}

// Complete stores the lean form of resp; it is fenced.
func (s *LeanRecord) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusCompleted, lean(resp, idem.StatusCompleted), retention, s.fenced)
}

// Fail stores the lean form of resp; it is fenced.
func (s *LeanRecord) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusFailed, lean(resp, idem.StatusFailed), retention, s.fenced)
}
