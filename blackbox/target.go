package blackbox

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/idembench/idembench/history"
)

// Target describes the HTTP service under test: where it is (or how to
// start it), the operation that must be idempotent, how to tell success,
// replays and resource ids apart, and which effects oracle counts what must
// happen at most once. ParseTarget reads it from strict YAML; Validate
// fills in defaults.
type Target struct {
	// Name names the service in reports; required, at most MaxNameLen
	// bytes, no control bytes.
	Name string
	// BaseURL is the service's root, "http://127.0.0.1:8089". It must be on
	// loopback when faults are injected (the fault proxy only forwards
	// there). With Start it may use {{.Addr}}; empty with Start means
	// "http://{{.Addr}}". Required without Start.
	BaseURL string
	// Start, when set, is how the harness starts the service (and kills,
	// pauses and restarts it for process faults).
	Start *Start
	// Operation is the request under test.
	Operation Operation
	// Oracle says how effects are counted.
	Oracle Oracle
	// Conformance tunes the protocol probes.
	Conformance Conformance
	// Source names where the target came from (a file name), for errors.
	Source string
}

// Start is how to start the service. Every string of Command, Env and Ready
// is a template with the fields {{.Addr}} (127.0.0.1:PORT, a free port the
// harness picked), {{.Port}} and {{.DownstreamURL}} (the mock downstream's
// root URL, empty unless Oracle.Kind is "downstream").
type Start struct {
	// Command is the argv; required, at most MaxEntries arguments, none
	// with a NUL byte. Command[0] is looked up in PATH, or, with a slash,
	// taken relative to Dir.
	Command []string
	// Env is added to the harness's own environment; at most MaxEntries
	// variables.
	Env map[string]string
	// Dir is the working directory, where a relative Command[0] (one
	// with a slash) is found too. LoadTarget resolves it against the
	// target file's directory (empty means that directory); with
	// ParseTarget, empty means the harness's.
	Dir string
	// Ready is the path (or full URL) polled with GET until it answers
	// below 500; empty means any HTTP answer at BaseURL counts.
	Ready string
	// ReadyTimeout bounds the wait for readiness at each start; zero means
	// DefaultReadyTimeout (30 s), at most MaxWait (10 min).
	ReadyTimeout time.Duration
}

// Operation is the idempotent request the workload sends. Path, Body and
// header values are templates with the per-request fields of Fields.
type Operation struct {
	// Method is the HTTP method, an HTTP token (no space or control
	// byte); empty means POST.
	Method string
	// Path is the request path, "/payments"; required.
	Path string
	// Headers are sent with every request (templates); at most
	// MaxEntries, each name an HTTP token, no value with a control byte
	// other than a tab.
	Headers map[string]string
	// Body is the request body template, for example
	// `{"amount": {{.Amount}}, "ref": "{{.Key}}"}`.
	Body string
	// KeyHeader carries the idempotency key, an HTTP token; empty means
	// Idempotency-Key.
	KeyHeader string
	// Success lists the statuses that mean the operation succeeded, each
	// a 2xx, at most MaxEntries; empty means 200 and 201.
	Success []int
	// ResourceID reads the id of the created resource from a successful
	// answer: a JSON pointer into the body ("/id") or "header:NAME"
	// ("header:Location"). Empty means none (the response-derived oracle
	// then compares whole bodies).
	ResourceID string
	// ReplayHeader is the header a replayed answer carries: "NAME" (any
	// non-empty value) or "NAME: VALUE". Empty means the service marks no
	// replay; the first success of a key is then taken as its execution.
	ReplayHeader string
	// AmountMin and AmountMax bound {{.Amount}}; both zero means 1 and
	// 10000. Each is within ±MaxAmount.
	AmountMin, AmountMax int64
	// Statuses says what the service's other answers mean. A status that
	// is neither a success nor declared there is reported as undeclared
	// and recorded as an unknown outcome, never guessed at.
	Statuses Statuses

	pathT, bodyT *tmpl
	headerT      map[string]*tmpl
	headerNames  []string // sorted keys of headerT
	replayName   string
	replayValue  string
}

// Statuses are the meanings of a service's non-success answers, each a
// list of statuses (at most MaxEntries, each 400 to 599, none in Success
// and none in two lists). Every 5xx not listed keeps its default meaning:
// retry (a stored 5xx is one that carries the replay marker).
type Statuses struct {
	// Mismatch answers a reused key with a different request; empty
	// means 422.
	Mismatch []int
	// InProgress answers a duplicate while the first request still runs
	// (the client waits and retries); empty means 409.
	InProgress []int
	// Conflict answers a key in use by a concurrent request, also retried
	// later; empty means none besides InProgress.
	Conflict []int
	// MissingKey answers a request without the key; empty means 400.
	// Such an answer performed nothing and is final.
	MissingKey []int
	// Retry says the request was not performed and may be sent again
	// (rate limited, overloaded); empty means 429.
	Retry []int
	// Failed is a final failure of the operation, the key's stored
	// result; empty means none.
	Failed []int
}

// meaning returns the history outcome of a declared status, whether that
// answer is final, and false when s declares no meaning for status.
func (s *Statuses) meaning(status int) (history.Outcome, bool, bool) {
	switch {
	case slices.Contains(s.Mismatch, status):
		return history.Mismatch, true, true
	case slices.Contains(s.InProgress, status), slices.Contains(s.Conflict, status):
		return history.InProgress, false, true
	case slices.Contains(s.MissingKey, status):
		return history.Error, true, true
	case slices.Contains(s.Retry, status):
		return history.Released, false, true
	case slices.Contains(s.Failed, status):
		return history.Failed, true, true
	}
	return history.Unknown, true, false
}

func (s *Statuses) validate(success []int) error {
	if len(s.Mismatch) == 0 {
		s.Mismatch = []int{http.StatusUnprocessableEntity}
	}
	if len(s.InProgress) == 0 {
		s.InProgress = []int{http.StatusConflict}
	}
	if len(s.MissingKey) == 0 {
		s.MissingKey = []int{http.StatusBadRequest}
	}
	if len(s.Retry) == 0 {
		s.Retry = []int{http.StatusTooManyRequests}
	}
	seen := map[int]string{}
	for _, l := range []struct {
		field string
		v     []int
	}{{"mismatch_status", s.Mismatch}, {"in_progress_status", s.InProgress}, {"conflict_status", s.Conflict},
		{"missing_key_status", s.MissingKey}, {"retry_status", s.Retry}, {"failed_status", s.Failed}} {
		if err := countLimit(l.field, len(l.v)); err != nil {
			return err
		}
		for _, st := range l.v {
			if st < 400 || st > 599 {
				return fmt.Errorf("%s: %d is not a 4xx or 5xx status", l.field, st)
			}
			if slices.Contains(success, st) {
				return fmt.Errorf("%s: %d is also a success status", l.field, st)
			}
			if other, ok := seen[st]; ok {
				return fmt.Errorf("%s: %d is also in %s", l.field, st, other)
			}
			seen[st] = l.field
		}
	}
	return nil
}

// Oracle kinds, strongest first.
const (
	// OracleDownstream runs a mock downstream on loopback; the service
	// gets its URL through {{.DownstreamURL}} and must send the key with
	// every call. Every call is an effect, with its time.
	OracleDownstream = "downstream"
	// OracleHTTP reads effect counts per key from an HTTP endpoint after
	// the run.
	OracleHTTP = "http"
	// OracleSQL reads effect counts per key with a PostgreSQL query after
	// the run.
	OracleSQL = "sql"
	// OracleResponse derives effects from the answers: more than one
	// distinct resource id among a key's successes is a double execution.
	OracleResponse = "response"
)

// Oracle says how the effects (what must happen at most once per key) are
// observed.
type Oracle struct {
	// Kind is OracleDownstream, OracleHTTP, OracleSQL or OracleResponse;
	// empty means OracleResponse.
	Kind string
	// KeyHeader is the header that carries the key on downstream calls;
	// empty means Operation.KeyHeader.
	KeyHeader string
	// Latency delays every downstream answer (it widens race windows, as
	// a real provider does); zero means none, at most MaxWait.
	Latency time.Duration
	// URL is the OracleHTTP endpoint. GET URL answers a JSON object of
	// key to count, or {"counts": {...}}; keys absent count 0.
	URL string
	// PostgresURL and Query are the OracleSQL connection and query; the
	// query returns rows of (key text, count integer).
	PostgresURL string
	Query       string
}

// The policy profiles a target can claim (Conformance.Profile): what its
// service stores and replays, which published APIs differ on. The
// error-policy probe grades the service against the one claimed.
const (
	// ProfileIETF is the draft's: a retry after an error gets the earlier
	// result ("success or an error") or executes; both pass.
	ProfileIETF = "ietf"
	// ProfileStripe stores errors and replays them: a retry after a 5xx
	// must get the same 5xx without executing. A request without a key
	// is executed (missing-key is a MAY).
	ProfileStripe = "stripe"
	// ProfileCache2xx stores successes only: a retry after a 5xx must
	// execute.
	ProfileCache2xx = "cache-2xx-only"
)

// Profiles lists the policy profiles.
var Profiles = []string{ProfileIETF, ProfileStripe, ProfileCache2xx}

// Conformance tunes the protocol probes.
type Conformance struct {
	// Skip turns the probes off.
	Skip bool
	// Profile is the policy the service claims, one of Profiles; empty
	// means ProfileIETF.
	Profile string
	// Levels overrides, by probe id, the requirement level (MUST, SHOULD
	// or MAY) of a probe's protocol checks: a failed MUST is a protocol
	// deviation, a failed SHOULD or MAY a warning. It never changes a
	// double execution or a broken replay. At most MaxEntries.
	Levels map[string]string
	// IsolationPath and IsolationHeaders address "the same operation
	// elsewhere" (another path, or another tenant through a header): the
	// isolation probe sends a used key there and expects a fresh
	// execution. Both empty skips that probe. At most MaxEntries headers.
	IsolationPath    string
	IsolationHeaders map[string]string
	// Deviations declares probes the service knowingly does not follow,
	// by probe id (see ProbeIDs), with the reason; a protocol deviation or
	// warning of a declared probe is reported as a deviation and does not
	// fail the run (a double execution or broken replay still does).
	Deviations map[string]string
	// Fingerprint declares which requests the service's fingerprint takes
	// for the same one, for the fingerprint fuzzer (Spec.FuzzFingerprint).
	Fingerprint FingerprintRules
}

// Fields are the values a template can use. Every field is a function of
// the key, so every delivery of a key sends the same request (except
// mismatching deliveries, which add 1 to Amount).
type Fields struct {
	// Key is the idempotency key.
	Key string
	// Seq is the key's number in the run, from 1.
	Seq int64
	// Amount is a seeded random integer in [AmountMin, AmountMax].
	Amount int64
	// Addr, Port and DownstreamURL are those of Start.
	Addr          string
	Port          string
	DownstreamURL string
}

// Validate checks t, fills in its defaults and compiles its templates.
// Errors wrap ErrUsage and name the field.
func (t *Target) Validate() error {
	if err := t.validate(); err != nil {
		src := t.Source
		if src == "" {
			src = "target"
		}
		return usagef("%s: %v", src, err)
	}
	return nil
}

func (t *Target) validate() error {
	if t.Name == "" {
		return fmt.Errorf("name: required")
	}
	if len(t.Name) > MaxNameLen {
		return fmt.Errorf("name: %d bytes, above the limit of %d", len(t.Name), MaxNameLen)
	}
	if err := checkText("name", t.Name, false); err != nil {
		return err
	}
	if t.Start == nil && t.BaseURL == "" {
		return fmt.Errorf("base_url: required when there is no start command")
	}
	if t.Start != nil {
		if err := t.Start.validate(); err != nil {
			return fmt.Errorf("start.%v", err)
		}
		if t.BaseURL == "" {
			t.BaseURL = "http://{{.Addr}}"
		}
	}
	if _, err := parseTemplate(t.BaseURL); err != nil {
		return fmt.Errorf("base_url: %v", err)
	}
	if t.Start == nil {
		if err := checkURL(t.BaseURL); err != nil {
			return fmt.Errorf("base_url: %v", err)
		}
	}
	if err := t.Operation.validate(); err != nil {
		return fmt.Errorf("operation.%v", err)
	}
	if err := t.Oracle.validate(t); err != nil {
		return fmt.Errorf("oracle.%v", err)
	}
	if err := t.Conformance.validate(); err != nil {
		return fmt.Errorf("conformance.%v", err)
	}
	return nil
}

// DefaultReadyTimeout is Start.ReadyTimeout when it is zero.
const DefaultReadyTimeout = 30 * time.Second

func (s *Start) validate() error {
	if len(s.Command) == 0 || s.Command[0] == "" {
		return fmt.Errorf("command: required (an argv list)")
	}
	if err := countLimit("command", len(s.Command)); err != nil {
		return err
	}
	if err := countLimit("env", len(s.Env)); err != nil {
		return err
	}
	if err := waitLimit("ready_timeout", s.ReadyTimeout); err != nil {
		return err
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = DefaultReadyTimeout
	}
	for i, a := range s.Command {
		field := fmt.Sprintf("command[%d]", i)
		if err := checkNoNUL(field, a); err != nil {
			return err
		}
		if _, err := parseTemplate(a); err != nil {
			return fmt.Errorf("%s: %v", field, err)
		}
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env: %q is not a variable name", k)
		}
		if err := checkNoNUL("env."+k, v); err != nil {
			return err
		}
		if _, err := parseTemplate(v); err != nil {
			return fmt.Errorf("env.%s: %v", k, err)
		}
	}
	if err := checkNoNUL("dir", s.Dir); err != nil {
		return err
	}
	return checkText("ready", s.Ready, false)
}

func (c *Conformance) validate() error {
	switch {
	case c.Profile == "":
		c.Profile = ProfileIETF
	case !slices.Contains(Profiles, c.Profile):
		return fmt.Errorf("profile: unknown %q (want one of %s)", c.Profile, strings.Join(Profiles, ", "))
	}
	var err error
	if c.Deviations, err = probeMap("deviations", c.Deviations); err != nil {
		return err
	}
	if c.Levels, err = probeMap("levels", c.Levels); err != nil {
		return err
	}
	for id, lv := range c.Levels {
		up := strings.ToUpper(strings.TrimSpace(lv))
		if up != LevelMust && up != LevelShould && up != LevelMay {
			return fmt.Errorf("levels.%s: %q (want MUST, SHOULD or MAY)", id, lv)
		}
		c.Levels[id] = up
	}
	if err := c.Fingerprint.validate(); err != nil {
		return err
	}
	if p := c.IsolationPath; p != "" && !strings.HasPrefix(p, "/") {
		return fmt.Errorf("isolation_path: %q must start with /", p)
	}
	if err := checkText("isolation_path", c.IsolationPath, false); err != nil {
		return err
	}
	if err := countLimit("isolation_headers", len(c.IsolationHeaders)); err != nil {
		return err
	}
	for k, v := range c.IsolationHeaders {
		if err := checkToken("isolation_headers", k); err != nil {
			return err
		}
		if err := checkText("isolation_headers."+k, v, true); err != nil {
			return err
		}
	}
	return nil
}

// probeMap checks that every key of m is a probe id (an old id is renamed)
// and returns m with the current ids.
func probeMap(field string, m map[string]string) (map[string]string, error) {
	if err := countLimit(field, len(m)); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return m, nil
	}
	out := make(map[string]string, len(m))
	for id, v := range m {
		if cur, ok := oldProbeIDs[id]; ok {
			id = cur
		}
		if !slices.Contains(ProbeIDs, id) && !slices.Contains(FuzzProbeIDs, id) {
			return nil, fmt.Errorf("%s: unknown probe %q (want one of %s)", field, id, strings.Join(slices.Concat(ProbeIDs, FuzzProbeIDs), ", "))
		}
		out[id] = v
	}
	return out, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("%q: want http://host:port", s)
	}
	return nil
}

func (o *Operation) validate() error {
	if o.Method == "" {
		o.Method = http.MethodPost
	}
	if err := checkToken("method", o.Method); err != nil {
		return err
	}
	if o.Path == "" || !strings.HasPrefix(o.Path, "/") {
		return fmt.Errorf("path: required, starting with /")
	}
	if o.KeyHeader == "" {
		o.KeyHeader = "Idempotency-Key"
	}
	if err := checkToken("key_header", o.KeyHeader); err != nil {
		return err
	}
	if len(o.Success) == 0 {
		o.Success = []int{http.StatusOK, http.StatusCreated}
	}
	if err := countLimit("success", len(o.Success)); err != nil {
		return err
	}
	for _, s := range o.Success {
		if s < 200 || s > 299 {
			return fmt.Errorf("success: %d is not a 2xx status", s)
		}
	}
	if o.AmountMin == 0 && o.AmountMax == 0 {
		o.AmountMin, o.AmountMax = 1, 10000
	}
	for _, a := range []struct {
		field string
		v     int64
	}{{"amount_min", o.AmountMin}, {"amount_max", o.AmountMax}} {
		if a.v < -MaxAmount || a.v > MaxAmount {
			return fmt.Errorf("%s: %d is beyond the limit of ±%d", a.field, a.v, int64(MaxAmount))
		}
	}
	if o.AmountMin > o.AmountMax {
		return fmt.Errorf("amount_min %d above amount_max %d", o.AmountMin, o.AmountMax)
	}
	if err := o.Statuses.validate(o.Success); err != nil {
		return err
	}
	if r := o.ResourceID; r != "" && !strings.HasPrefix(r, "/") && !strings.HasPrefix(r, "header:") {
		return fmt.Errorf("resource_id: %q: want a JSON pointer (/id) or header:NAME", r)
	}
	if name, ok := strings.CutPrefix(o.ResourceID, "header:"); ok {
		if err := checkToken("resource_id", name); err != nil {
			return err
		}
	}
	o.replayName, o.replayValue = "", ""
	if r := strings.TrimSpace(o.ReplayHeader); r != "" {
		name, value, _ := strings.Cut(r, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if err := checkToken("replay_header", name); err != nil {
			return err
		}
		if err := checkText("replay_header", value, true); err != nil {
			return err
		}
		o.replayName, o.replayValue = http.CanonicalHeaderKey(name), value
	}
	if err := countLimit("headers", len(o.Headers)); err != nil {
		return err
	}
	var err error
	if o.pathT, err = compile(o.Path); err != nil {
		return fmt.Errorf("path: %v", err)
	}
	if o.bodyT, err = compile(o.Body); err != nil {
		return fmt.Errorf("body: %v", err)
	}
	o.headerT = make(map[string]*tmpl, len(o.Headers))
	o.headerNames = o.headerNames[:0]
	for k, v := range o.Headers {
		if err := checkToken("headers", k); err != nil {
			return err
		}
		if o.headerT[k], err = compile(v); err != nil {
			return fmt.Errorf("headers.%s: %v", k, err)
		}
		o.headerNames = append(o.headerNames, k)
	}
	slices.Sort(o.headerNames)
	// Render once with sample fields, so a template that names an unknown
	// field fails here and not in the middle of a run.
	// The rendered path and header values are checked for control bytes
	// too: the fields a template can add (keys, numbers, addresses) hold
	// none, so a control byte comes from the target file.
	f := Fields{Key: "k", Seq: 1, Amount: 1, Addr: "127.0.0.1:1", Port: "1"}
	if _, err := o.bodyT.render(&f); err != nil {
		return fmt.Errorf("body: %v", err)
	}
	p, err := o.pathT.render(&f)
	if err != nil {
		return fmt.Errorf("path: %v", err)
	}
	if err := checkText("path", p, false); err != nil {
		return err
	}
	for _, k := range o.headerNames {
		v, err := o.headerT[k].render(&f)
		if err != nil {
			return fmt.Errorf("headers.%s: %v", k, err)
		}
		if err := checkText("headers."+k, v, true); err != nil {
			return err
		}
	}
	return nil
}

func (o *Oracle) validate(t *Target) error {
	switch o.Kind {
	case "":
		o.Kind = OracleResponse
	case OracleDownstream:
		if t.Start == nil {
			return fmt.Errorf("kind: downstream needs a start command (the service learns the URL from {{.DownstreamURL}})")
		}
		if !usesDownstream(t.Start) {
			return fmt.Errorf("kind: downstream, but no start.command or start.env value uses {{.DownstreamURL}}")
		}
	case OracleHTTP:
		if err := checkURL(o.URL); err != nil {
			return fmt.Errorf("url: %v", err)
		}
	case OracleSQL:
		if o.PostgresURL == "" || o.Query == "" {
			return fmt.Errorf("kind: sql needs postgres_url and query")
		}
	case OracleResponse:
	default:
		return fmt.Errorf("kind: unknown %q (want downstream, http, sql or response)", o.Kind)
	}
	if err := waitLimit("latency", o.Latency); err != nil {
		return err
	}
	if o.KeyHeader == "" {
		o.KeyHeader = t.Operation.KeyHeader
	}
	return checkToken("key_header", o.KeyHeader)
}

func usesDownstream(s *Start) bool {
	for _, a := range s.Command {
		if strings.Contains(a, ".DownstreamURL") {
			return true
		}
	}
	for _, v := range s.Env {
		if strings.Contains(v, ".DownstreamURL") {
			return true
		}
	}
	return false
}

func parseTemplate(s string) (*template.Template, error) {
	return template.New("").Option("missingkey=error").Parse(s)
}

func render(t *template.Template, f *Fields) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, f); err != nil {
		return "", err
	}
	return b.String(), nil
}

// expand renders s with f; s was checked by Validate.
func expand(s string, f *Fields) string {
	t, err := parseTemplate(s)
	if err != nil {
		return s
	}
	out, err := render(t, f)
	if err != nil {
		return s
	}
	return out
}
