package blackbox

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/template"
	"time"
)

// Target describes the HTTP service under test: where it is (or how to
// start it), the operation that must be idempotent, how to tell success,
// replays and resource ids apart, and which effects oracle counts what must
// happen at most once. ParseTarget reads it from strict YAML; Validate
// fills in defaults.
type Target struct {
	// Name names the service in reports; required.
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
	// Command is the argv; required. Command[0] is looked up in PATH.
	Command []string
	// Env is added to the harness's own environment.
	Env map[string]string
	// Dir is the working directory; empty means the harness's.
	Dir string
	// Ready is the path (or full URL) polled with GET until it answers
	// below 500; empty means any HTTP answer at BaseURL counts.
	Ready string
	// ReadyTimeout bounds the wait for readiness at each start; zero means
	// 30 s.
	ReadyTimeout time.Duration
}

// Operation is the idempotent request the workload sends. Path, Body and
// header values are templates with the per-request fields of Fields.
type Operation struct {
	// Method is the HTTP method; empty means POST.
	Method string
	// Path is the request path, "/payments"; required.
	Path string
	// Headers are sent with every request (templates).
	Headers map[string]string
	// Body is the request body template, for example
	// `{"amount": {{.Amount}}, "ref": "{{.Key}}"}`.
	Body string
	// KeyHeader carries the idempotency key; empty means Idempotency-Key.
	KeyHeader string
	// Success lists the statuses that mean the operation succeeded; empty
	// means 200 and 201.
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
	// AmountMin and AmountMax bound {{.Amount}}; zero means 1 and 10000.
	AmountMin, AmountMax int64

	pathT, bodyT *tmpl
	headerT      map[string]*tmpl
	headerNames  []string // sorted keys of headerT
	replayName   string
	replayValue  string
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
	// a real provider does); zero means none.
	Latency time.Duration
	// URL is the OracleHTTP endpoint. GET URL answers a JSON object of
	// key to count, or {"counts": {...}}; keys absent count 0.
	URL string
	// PostgresURL and Query are the OracleSQL connection and query; the
	// query returns rows of (key text, count integer).
	PostgresURL string
	Query       string
}

// Conformance tunes the protocol probes.
type Conformance struct {
	// Skip turns the probes off.
	Skip bool
	// IsolationPath and IsolationHeaders address "the same operation
	// elsewhere" (another path, or another tenant through a header): the
	// isolation probe sends a used key there and expects a fresh
	// execution. Both empty skips that probe.
	IsolationPath    string
	IsolationHeaders map[string]string
	// Deviations declares probes the service knowingly does not follow,
	// by probe id (see ProbeIDs), with the reason; a failed declared probe
	// is reported as a deviation and does not fail the run.
	Deviations map[string]string
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
	if t.Start == nil && t.BaseURL == "" {
		return fmt.Errorf("base_url: required when there is no start command")
	}
	if t.Start != nil {
		if len(t.Start.Command) == 0 || t.Start.Command[0] == "" {
			return fmt.Errorf("start.command: required (an argv list)")
		}
		if t.Start.ReadyTimeout < 0 {
			return fmt.Errorf("start.ready_timeout: negative")
		}
		if t.Start.ReadyTimeout == 0 {
			t.Start.ReadyTimeout = 30 * time.Second
		}
		if t.BaseURL == "" {
			t.BaseURL = "http://{{.Addr}}"
		}
		for i, a := range t.Start.Command {
			if _, err := parseTemplate(a); err != nil {
				return fmt.Errorf("start.command[%d]: %v", i, err)
			}
		}
		for k, v := range t.Start.Env {
			if _, err := parseTemplate(v); err != nil {
				return fmt.Errorf("start.env.%s: %v", k, err)
			}
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
	for id := range t.Conformance.Deviations {
		if !slices.Contains(ProbeIDs, id) {
			return fmt.Errorf("conformance.deviations: unknown probe %q (want one of %s)", id, strings.Join(ProbeIDs, ", "))
		}
	}
	if p := t.Conformance.IsolationPath; p != "" && !strings.HasPrefix(p, "/") {
		return fmt.Errorf("conformance.isolation_path: %q must start with /", p)
	}
	return nil
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
	if o.Path == "" || !strings.HasPrefix(o.Path, "/") {
		return fmt.Errorf("path: required, starting with /")
	}
	if o.KeyHeader == "" {
		o.KeyHeader = "Idempotency-Key"
	}
	if len(o.Success) == 0 {
		o.Success = []int{http.StatusOK, http.StatusCreated}
	}
	for _, s := range o.Success {
		if s < 200 || s > 299 {
			return fmt.Errorf("success: %d is not a 2xx status", s)
		}
	}
	if o.AmountMin == 0 && o.AmountMax == 0 {
		o.AmountMin, o.AmountMax = 1, 10000
	}
	if o.AmountMin > o.AmountMax {
		return fmt.Errorf("amount_min %d above amount_max %d", o.AmountMin, o.AmountMax)
	}
	if r := o.ResourceID; r != "" && !strings.HasPrefix(r, "/") && !strings.HasPrefix(r, "header:") {
		return fmt.Errorf("resource_id: %q: want a JSON pointer (/id) or header:NAME", r)
	}
	o.replayName, o.replayValue = "", ""
	if r := strings.TrimSpace(o.ReplayHeader); r != "" {
		name, value, _ := strings.Cut(r, ":")
		o.replayName, o.replayValue = http.CanonicalHeaderKey(strings.TrimSpace(name)), strings.TrimSpace(value)
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
		if o.headerT[k], err = compile(v); err != nil {
			return fmt.Errorf("headers.%s: %v", k, err)
		}
		o.headerNames = append(o.headerNames, k)
	}
	slices.Sort(o.headerNames)
	// Render once with sample fields, so a template that names an unknown
	// field fails here and not in the middle of a run.
	f := Fields{Key: "k", Seq: 1, Amount: 1, Addr: "127.0.0.1:1", Port: "1"}
	for what, tt := range map[string]*tmpl{"path": o.pathT, "body": o.bodyT} {
		if _, err := tt.render(&f); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
	}
	for _, k := range o.headerNames {
		if _, err := o.headerT[k].render(&f); err != nil {
			return fmt.Errorf("headers.%s: %v", k, err)
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
	if o.Latency < 0 {
		return fmt.Errorf("latency: negative")
	}
	if o.KeyHeader == "" {
		o.KeyHeader = t.Operation.KeyHeader
	}
	return nil
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
