package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Draft is the specification the conformance probes cite.
const Draft = "draft-ietf-httpapi-idempotency-key-header-06"

// The conformance probes, by id.
const (
	ProbeMissingKey  = "missing-key"
	ProbeMismatch    = "different-body"
	ProbeConcurrent  = "concurrent-duplicate"
	ProbeReplay      = "replay"
	ProbeErrorStored = "5xx-not-stored"
	ProbeIsolation   = "isolation"
)

// ProbeIDs lists every probe id, in report order.
var ProbeIDs = []string{ProbeMissingKey, ProbeMismatch, ProbeConcurrent, ProbeReplay, ProbeErrorStored, ProbeIsolation}

// Probe statuses.
const (
	ProbePass      = "pass"
	ProbeFail      = "fail"
	ProbeDeviation = "deviation" // failed, but declared by the target
	ProbeSkipped   = "skipped"
)

// ProbeResult is one line of the conformance table.
type ProbeResult struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Section  string `json:"section"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Status   string `json:"status"`
	// Reason is the target's reason for a declared deviation.
	Reason string `json:"reason,omitempty"`
}

// prober runs the conformance probes against the service.
type prober struct {
	t      *Target
	client *http.Client
	base   string
	ds     *Downstream
	svc    *Fields
	seed   int64
	prefix string
}

var probeInfo = map[string][3]string{
	ProbeMissingKey:  {"request without the key", "§2.7", "400"},
	ProbeMismatch:    {"same key, different body", "§2.7", "422"},
	ProbeConcurrent:  {"concurrent duplicate", "§2.7", "409 with Retry-After, or a wait then the same answer"},
	ProbeReplay:      {"replay of a completed request", "§2.6", "same status, byte-identical body, replay marker"},
	ProbeErrorStored: {"a 5xx is not stored", "§2.6", "after a 5xx the retry with the same key executes"},
	ProbeIsolation:   {"same key on another path or tenant", "§2.2", "isolated: a fresh execution, not a replay or 422"},
}

// run runs every probe and returns the table, in ProbeIDs order.
func (p *prober) run(ctx context.Context) []ProbeResult {
	fns := map[string]func(context.Context) (string, string){
		ProbeMissingKey:  p.missingKey,
		ProbeMismatch:    p.mismatch,
		ProbeConcurrent:  p.concurrent,
		ProbeReplay:      p.replay,
		ProbeErrorStored: p.errorStored,
		ProbeIsolation:   p.isolation,
	}
	var out []ProbeResult
	for _, id := range ProbeIDs {
		info := probeInfo[id]
		r := ProbeResult{ID: id, Title: info[0], Section: Draft + " " + info[1], Expected: info[2]}
		r.Status, r.Observed = fns[id](ctx)
		if reason, ok := p.t.Conformance.Deviations[id]; ok && r.Status == ProbeFail {
			r.Status, r.Reason = ProbeDeviation, reason
		}
		out = append(out, r)
	}
	return out
}

// call sends the operation for key (with a mismatching body when mismatch
// is set) to path (the operation's when empty) with extra headers.
func (p *prober) call(ctx context.Context, key string, mismatch bool, path string, extra map[string]string) answer {
	op := &p.t.Operation
	f := op.fields(p.seed, key, 1, mismatch, p.svc)
	r, err := op.build(&f)
	if err != nil {
		return answer{err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return send(ctx, p.client, p.base, &r, op.KeyHeader, key, extra, path, nil)
}

func (p *prober) key(id string) string { return p.prefix + "-" + id }

func describe(a answer) string {
	if a.err != nil {
		return "no answer (" + a.err.Error() + ")"
	}
	return fmt.Sprintf("%d", a.status)
}

func (p *prober) success(a answer) bool {
	return a.err == nil && containsInt(p.t.Operation.Success, a.status)
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// first sends the first request of a probe's key and checks it succeeded.
func (p *prober) first(ctx context.Context, key string) (answer, string, bool) {
	a := p.call(ctx, key, false, "", nil)
	if !p.success(a) {
		return a, "the first request got " + describe(a) + ", not a success", false
	}
	return a, "", true
}

func (p *prober) missingKey(ctx context.Context) (string, string) {
	a := p.call(ctx, "", false, "", nil)
	if a.err == nil && a.status == http.StatusBadRequest {
		return ProbePass, "400"
	}
	return ProbeFail, describe(a)
}

func (p *prober) mismatch(ctx context.Context) (string, string) {
	k := p.key(ProbeMismatch)
	if _, why, ok := p.first(ctx, k); !ok {
		return ProbeFail, why
	}
	a := p.call(ctx, k, true, "", nil)
	if a.err == nil && a.status == http.StatusUnprocessableEntity {
		return ProbePass, "422"
	}
	obs := describe(a)
	if p.t.Operation.isReplay(a.header) {
		obs += ", a replay of the first answer"
	}
	return ProbeFail, obs
}

func (p *prober) concurrent(ctx context.Context) (string, string) {
	k := p.key(ProbeConcurrent)
	if p.ds != nil {
		p.ds.Hold(k, 600*time.Millisecond)
	}
	const n = 3
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 150 * time.Millisecond)
			answers[i] = p.call(ctx, k, false, "", nil)
		})
	}
	wg.Wait()
	if !p.success(answers[0]) {
		return ProbeFail, "the first request got " + describe(answers[0])
	}
	var executed, conflicts, replays int
	for i, a := range answers {
		switch {
		case a.err == nil && a.status == http.StatusConflict:
			if a.retryAfter == "" {
				return ProbeFail, fmt.Sprintf("request %d got 409 without Retry-After", i+1)
			}
			conflicts++
		case p.success(a) && i > 0 && a.status == answers[0].status && bytes.Equal(a.body, answers[0].body) &&
			(p.t.Operation.replayName == "" || p.t.Operation.isReplay(a.header)):
			replays++
		case p.success(a):
			executed++
		default:
			return ProbeFail, fmt.Sprintf("request %d got %s", i+1, describe(a))
		}
	}
	obs := fmt.Sprintf("%d executed, %d got 409, %d waited and replayed", executed, conflicts, replays)
	if p.ds != nil {
		if c := p.ds.Applied(k); c != 1 {
			return ProbeFail, fmt.Sprintf("%s; the downstream was called %d times", obs, c)
		}
	}
	if executed != 1 {
		return ProbeFail, obs
	}
	return ProbePass, obs
}

func (p *prober) replay(ctx context.Context) (string, string) {
	k := p.key(ProbeReplay)
	a1, why, ok := p.first(ctx, k)
	if !ok {
		return ProbeFail, why
	}
	a2 := p.call(ctx, k, false, "", nil)
	switch {
	case a2.err != nil || a2.status != a1.status:
		return ProbeFail, "the retry got " + describe(a2) + fmt.Sprintf(", the first %d", a1.status)
	case !bytes.Equal(a1.body, a2.body):
		return ProbeFail, "the retry's body differs from the first answer's"
	case p.t.Operation.replayName == "":
		return ProbePass, "byte-identical (no replay marker declared)"
	case !p.t.Operation.isReplay(a2.header):
		return ProbeFail, "byte-identical, but without the replay marker " + p.t.Operation.ReplayHeader
	case p.t.Operation.isReplay(a1.header):
		return ProbeFail, "the first answer already carries the replay marker"
	}
	return ProbePass, "byte-identical, with the replay marker"
}

func (p *prober) errorStored(ctx context.Context) (string, string) {
	if p.ds == nil {
		return ProbeSkipped, "needs the downstream oracle to make the service fail"
	}
	k := p.key(ProbeErrorStored)
	p.ds.FailNext(k, http.StatusServiceUnavailable)
	a1 := p.call(ctx, k, false, "", nil)
	if a1.err != nil || a1.status < 500 {
		return ProbeSkipped, "a failing downstream did not make the service answer 5xx (it answered " + describe(a1) + ")"
	}
	a2 := p.call(ctx, k, false, "", nil)
	switch {
	case a2.err == nil && a2.status >= 500 && p.t.Operation.isReplay(a2.header):
		return ProbeFail, fmt.Sprintf("the %d was stored and replayed", a1.status)
	case a2.err == nil && a2.status == a1.status && bytes.Equal(a1.body, a2.body) && p.ds.Applied(k) == 0:
		return ProbeFail, fmt.Sprintf("the retry got the same %d without reaching the downstream: stored", a1.status)
	case !p.success(a2):
		return ProbeFail, fmt.Sprintf("after %d the retry got %s", a1.status, describe(a2))
	case p.t.Operation.isReplay(a2.header):
		return ProbeFail, "the retry succeeded but is marked as a replay"
	}
	return ProbePass, fmt.Sprintf("%d, then the retry executed (%d)", a1.status, a2.status)
}

func (p *prober) isolation(ctx context.Context) (string, string) {
	c := &p.t.Conformance
	if c.IsolationPath == "" && len(c.IsolationHeaders) == 0 {
		return ProbeSkipped, "no isolation_path or isolation_headers declared"
	}
	k := p.key(ProbeIsolation)
	a1, why, ok := p.first(ctx, k)
	if !ok {
		return ProbeFail, why
	}
	a2 := p.call(ctx, k, false, c.IsolationPath, c.IsolationHeaders)
	op := &p.t.Operation
	switch {
	case a2.err == nil && a2.status == http.StatusUnprocessableEntity:
		return ProbeFail, "422: the key is shared with the first path or tenant"
	case !p.success(a2):
		return ProbeFail, "the second request got " + describe(a2)
	case op.isReplay(a2.header):
		return ProbeFail, "a replay of the first path's or tenant's answer"
	case op.ResourceID != "" && op.resourceID(&a1) == op.resourceID(&a2):
		return ProbeFail, "the same resource id as the first answer"
	case op.ResourceID == "" && bytes.Equal(a1.body, a2.body):
		return ProbeFail, "the same body as the first answer"
	}
	return ProbePass, fmt.Sprintf("a fresh execution (%d)", a2.status)
}
