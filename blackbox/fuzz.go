package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fingerprint fuzzer's rows of the conformance table, by id. They are
// in the table only when Spec.FuzzFingerprint is above 0.
const (
	// ProbeFingerprintSame sends requests equivalent to the first one of a
	// key (members reordered, whitespace changed, number forms when the
	// target declares them equal) and expects the first answer replayed;
	// a 422 is a false 422.
	ProbeFingerprintSame = "fingerprint-equivalent"
	// ProbeFingerprintDifferent sends materially different requests (one
	// field changed, a number or boolean sent as a string, a query
	// parameter added) and expects 422; the first answer replayed is a
	// false replay.
	ProbeFingerprintDifferent = "fingerprint-different"
)

// FuzzProbeIDs lists the fuzzer's rows, in report order. Each may be
// declared in Conformance.Deviations like a probe of ProbeIDs.
var FuzzProbeIDs = []string{ProbeFingerprintSame, ProbeFingerprintDifferent}

// MaxFuzzCases bounds Spec.FuzzFingerprint.
const MaxFuzzCases = 1000

// FuzzFile is the run directory's list of fuzzer cases (JSON), written
// when Spec.FuzzFingerprint is above 0.
const FuzzFile = "fingerprint.json"

// Values of FingerprintRules.
const (
	FingerprintCanonical = "canonical"
	FingerprintRaw       = "raw"
	NumbersLiteral       = "literal"
	NumbersValue         = "value"
	QueryIncluded        = "included"
	QueryIgnored         = "ignored"
)

// FingerprintRules declare which requests the target's fingerprint takes
// for the same request, so the fuzzer knows what to expect. The zero value
// is the common case: JSON compared as values, numbers by their literal
// text, the query part of the request.
type FingerprintRules struct {
	// JSON is FingerprintCanonical (empty means it): a JSON body with its
	// members reordered or its whitespace changed is the same request. Or
	// FingerprintRaw: the body is compared byte for byte, and the fuzzer
	// sends no such variant.
	JSON string
	// Numbers is NumbersLiteral (empty means it): 100 and 100.0 may
	// differ, and the fuzzer sends no other number form. Or NumbersValue:
	// another form of the same number (100.0, 1e2) is the same request.
	Numbers string
	// Query is QueryIncluded (empty means it): a query parameter added
	// makes another request, which must get 422. Or QueryIgnored: the
	// fuzzer adds none.
	Query string
	// Excluded lists the members of a JSON body the fingerprint leaves out
	// (a subset policy), as JSON pointers (RFC 6901: "/meta",
	// "/client_ref"): a request that differs only under one of them is
	// the same request (the fuzzer sends "excluded member changed" and
	// expects a replay), and the fuzzer's different variants never change
	// them. Nil means the whole body counts.
	Excluded []string
}

// excludes reports whether the body member at pointer path (as
// jsonNode.leaves writes it) is left out of the fingerprint.
func (f *FingerprintRules) excludes(path string) bool {
	for _, p := range f.Excluded {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func (f *FingerprintRules) validate() error {
	for _, c := range []struct {
		field string
		v     *string
		allow [2]string
	}{
		{"json", &f.JSON, [2]string{FingerprintCanonical, FingerprintRaw}},
		{"numbers", &f.Numbers, [2]string{NumbersLiteral, NumbersValue}},
		{"query", &f.Query, [2]string{QueryIncluded, QueryIgnored}},
	} {
		if *c.v == "" {
			*c.v = c.allow[0]
		}
		if !slices.Contains(c.allow[:], *c.v) {
			return fmt.Errorf("fingerprint.%s: unknown %q (want %s or %s)", c.field, *c.v, c.allow[0], c.allow[1])
		}
	}
	for _, p := range f.Excluded {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("fingerprint.excluded: %q is not a JSON pointer to a member (it must start with /)", p)
		}
	}
	if len(f.Excluded) > 0 && f.JSON == FingerprintRaw {
		return fmt.Errorf("fingerprint.excluded: a raw fingerprint (json: raw) leaves no member out")
	}
	return nil
}

// Results of a FuzzCase.
const (
	FuzzPass          = "pass"
	FuzzFalse422      = "false-422"      // an equivalent request refused with 422
	FuzzFalseReplay   = "false-replay"   // a different request answered with the first answer
	FuzzExecutedAgain = "executed-again" // the variant ran as a new request under a used key
	FuzzUnexpected    = "unexpected"     // another answer (its status is in the case)
	FuzzSkipped       = "skipped"        // the first request of the key did not succeed
)

// FuzzCase is one variant the fuzzer sent: the key's first request, then
// the variant with the same key.
type FuzzCase struct {
	Key string `json:"key"`
	// Variant names the change: "members reordered", "whitespace
	// changed", "number forms", "excluded member changed" (under a pointer
	// of FingerprintRules.Excluded), "field changed", "type changed" (a
	// number or boolean sent as a string), "query parameter added", "body
	// changed" (a body that is not JSON).
	Variant string `json:"variant"`
	// Same is true for a variant that is the same request (the first
	// answer must be replayed), false for a different one (422).
	Same bool `json:"same"`
	// Detail says what changed where it is not obvious ("/currency").
	Detail string `json:"detail,omitempty"`
	// Path and Body are the variant as sent.
	Path string `json:"path"`
	Body string `json:"body"`
	// FirstStatus and Status are the statuses of the first request and of
	// the variant (0: no answer).
	FirstStatus int `json:"first_status"`
	Status      int `json:"status"`
	// Result is one of FuzzPass, FuzzFalse422, FuzzFalseReplay,
	// FuzzExecutedAgain, FuzzUnexpected or FuzzSkipped.
	Result string `json:"result"`
}

// fuzzVariant makes one kind of variant of a rendered request; ok is false
// when the request has nothing it can change.
type fuzzVariant struct {
	name string
	same bool
	make func(in *fuzzInput, rng *rand.Rand) (body []byte, path, detail string, ok bool)
}

// fuzzInput is the original request of a key, with its body parsed when it
// is JSON.
type fuzzInput struct {
	r     request
	node  *jsonNode // nil when the body is not JSON
	rules *FingerprintRules
}

// counted returns the indexes of leaves whose paths the fingerprint
// counts (excluded: false) or leaves out (true).
func (in *fuzzInput) counted(paths []string, excluded bool) []int {
	var out []int
	for i, p := range paths {
		if in.rules.excludes(p) == excluded {
			out = append(out, i)
		}
	}
	return out
}

var fuzzVariants = []fuzzVariant{
	{name: "members reordered", same: true, make: rewritten((*jsonNode).reorder)},
	{name: "whitespace changed", same: true, make: func(in *fuzzInput, _ *rand.Rand) ([]byte, string, string, bool) {
		if in.node == nil {
			return nil, "", "", false
		}
		b := in.node.text(spacedStyle)
		return b, in.r.path, "", !bytes.Equal(b, in.r.body)
	}},
	{name: "number forms", same: true, make: rewritten((*jsonNode).renumber)},
	{name: "excluded member changed", same: true, make: leafChanged(true)},
	{name: "field changed", make: leafChanged(false)},
	{name: "type changed", make: func(in *fuzzInput, rng *rand.Rand) ([]byte, string, string, bool) {
		if in.node == nil {
			return nil, "", "", false
		}
		n := in.node.clone()
		leaves, paths := n.leaves()
		var typed []int
		for _, i := range in.counted(paths, false) {
			if l := leaves[i]; l.kind == '0' || l.kind == 't' || l.kind == 'f' {
				typed = append(typed, i)
			}
		}
		if len(typed) == 0 {
			return nil, "", "", false
		}
		i := typed[rng.IntN(len(typed))]
		leaves[i].retype()
		return n.text(compactStyle), in.r.path, paths[i] + " as a string", true
	}},
	{name: "body changed", make: func(in *fuzzInput, _ *rand.Rand) ([]byte, string, string, bool) {
		if in.node != nil || len(in.r.body) == 0 {
			return nil, "", "", false
		}
		return append(slices.Clip(in.r.body), 'x'), in.r.path, "", true
	}},
	{name: "query parameter added", make: func(in *fuzzInput, _ *rand.Rand) ([]byte, string, string, bool) {
		sep := "?"
		if strings.Contains(in.r.path, "?") {
			sep = "&"
		}
		return in.r.body, in.r.path + sep + "idembench_fuzz=1", "idembench_fuzz=1", true
	}},
}

// rewritten is the make of a variant that changes a copy of the JSON body
// with change and sends it compact; change reports whether it changed
// anything.
func rewritten(change func(*jsonNode, *rand.Rand) bool) func(in *fuzzInput, rng *rand.Rand) ([]byte, string, string, bool) {
	return func(in *fuzzInput, rng *rand.Rand) ([]byte, string, string, bool) {
		if in.node == nil {
			return nil, "", "", false
		}
		n := in.node.clone()
		if !change(n, rng) {
			return nil, "", "", false
		}
		return n.text(compactStyle), in.r.path, "", true
	}
}

// leafChanged is the variant that changes one leaf of the JSON body, drawn
// from those the fingerprint leaves out (excluded) or counts (not).
func leafChanged(excluded bool) func(in *fuzzInput, rng *rand.Rand) ([]byte, string, string, bool) {
	return func(in *fuzzInput, rng *rand.Rand) ([]byte, string, string, bool) {
		if in.node == nil {
			return nil, "", "", false
		}
		n := in.node.clone()
		leaves, paths := n.leaves()
		some := in.counted(paths, excluded)
		if len(some) == 0 {
			return nil, "", "", false
		}
		i := some[rng.IntN(len(some))]
		leaves[i].change()
		return n.text(compactStyle), in.r.path, paths[i], true
	}
}

// applies reports whether the target's rules let the fuzzer send v.
func (f *FingerprintRules) applies(v *fuzzVariant) bool {
	switch v.name {
	case "members reordered", "whitespace changed":
		return f.JSON != FingerprintRaw
	case "number forms":
		return f.Numbers == NumbersValue
	case "excluded member changed":
		return len(f.Excluded) > 0
	case "query parameter added":
		return f.Query != QueryIgnored
	}
	return true
}

// fuzz runs the fingerprint fuzzer when the spec asks for it: it adds its
// rows to out.Conformance, its cases to out.Fingerprint and, with a run
// directory, writes FuzzFile.
func (r *runner) fuzz(ctx context.Context, client *http.Client, base, nonce string, out *Outcome) error {
	n := r.spec.FuzzFingerprint
	if n <= 0 {
		return nil
	}
	p := &prober{t: r.t, client: client, base: base, ds: r.ds, svc: &r.fields, seed: r.spec.Seed, prefix: "f" + nonce}
	cases := p.fuzzFingerprint(ctx, n)
	out.Fingerprint = cases
	out.Conformance = append(out.Conformance, p.fuzzRows(cases)...)
	if r.spec.Dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(cases, "", "  ")
	if err != nil {
		return envf("write %s: %v", FuzzFile, err)
	}
	if err := os.MkdirAll(r.spec.Dir, 0o755); err != nil {
		return envf("write the run directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(r.spec.Dir, FuzzFile), append(b, '\n'), 0o644); err != nil {
		return envf("write the run directory: %v", err)
	}
	return nil
}

// fuzzFingerprint sends n variants, each on a key of its own after the
// key's original request. Even cases are equivalent variants, odd ones
// different variants (the other class when the body offers none of one),
// each kind in turn among those the target's FingerprintRules allow and
// the body offers; the choices within a kind (which field, which order)
// come from the seed.
func (p *prober) fuzzFingerprint(ctx context.Context, n int) []FuzzCase {
	rng := rand.New(rand.NewPCG(uint64(p.seed), 0x66757a7a))
	rules := &p.t.Conformance.Fingerprint
	cases := make([]FuzzCase, 0, n)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		key := p.key("fp" + strconv.Itoa(i+1))
		op := &p.t.Operation
		f := op.fields(p.seed, key, 1, false, p.svc)
		r, err := op.build(&f)
		if err != nil {
			continue // Validate rendered the templates already
		}
		in := &fuzzInput{r: r, rules: rules}
		in.node, _ = parseJSON(r.body)
		same := i%2 == 0
		type made struct {
			v            *fuzzVariant
			body         []byte
			path, detail string
		}
		var choices []made
		for pass := range 2 {
			for j := range fuzzVariants {
				v := &fuzzVariants[j]
				if v.same != (same == (pass == 0)) || !rules.applies(v) {
					continue
				}
				if body, path, detail, ok := v.make(in, rng); ok {
					choices = append(choices, made{v, body, path, detail})
				}
			}
			if len(choices) > 0 {
				break // the other class only when this one has nothing to send
			}
		}
		if len(choices) == 0 {
			continue
		}
		m := choices[(i/2)%len(choices)]
		cases = append(cases, p.fuzzCase(ctx, key, &r, m.v, m.body, m.path, m.detail))
	}
	return cases
}

// fuzzCase sends the key's original request, then the variant, and judges
// the variant's answer against the first.
func (p *prober) fuzzCase(ctx context.Context, key string, orig *request, v *fuzzVariant, body []byte, path, detail string) FuzzCase {
	c := FuzzCase{Key: key, Variant: v.name, Same: v.same, Detail: detail, Path: path, Body: string(body)}
	a1 := p.sendPatiently(ctx, key, orig, "")
	c.FirstStatus = a1.status
	if !p.success(a1) {
		c.Result = FuzzSkipped
		return c
	}
	variant := *orig
	variant.body = body
	a2 := p.sendPatiently(ctx, key, &variant, path)
	c.Status = a2.status
	op := &p.t.Operation
	replay := p.success(a2) && (op.isReplay(a2.header) || (a2.status == a1.status && bytes.Equal(a2.body, a1.body)))
	switch {
	case v.same && replay, !v.same && a2.err == nil && a2.status == http.StatusUnprocessableEntity:
		c.Result = FuzzPass
	case v.same && a2.err == nil && a2.status == http.StatusUnprocessableEntity:
		c.Result = FuzzFalse422
	case !v.same && replay:
		c.Result = FuzzFalseReplay
	case p.success(a2):
		c.Result = FuzzExecutedAgain
	default:
		c.Result = FuzzUnexpected
	}
	return c
}

// sendPatiently sends r with key, again (up to three attempts, 100 ms
// apart) while the answer says "not now": no answer, 409, 429 or a 5xx
// without the replay marker. A service that stores its answer just after
// sending it may still hold the key in progress for a moment.
func (p *prober) sendPatiently(ctx context.Context, key string, r *request, path string) answer {
	var a answer
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return a
			case <-time.After(100 * time.Millisecond):
			}
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		a = send(actx, p.client, p.base, r, p.t.Operation.KeyHeader, key, nil, path, nil)
		cancel()
		notNow := a.err != nil || a.status == http.StatusConflict || a.status == http.StatusTooManyRequests ||
			(a.status >= 500 && !p.t.Operation.isReplay(a.header))
		if !notNow {
			return a
		}
	}
	return a
}
