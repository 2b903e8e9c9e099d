package idemhttp_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		value, want string
		bad         bool
	}{
		{value: `abc`, want: "abc"},
		{value: `"abc"`, want: "abc"},
		{value: `  "abc"	`, want: "abc"},
		{value: ` abc `, want: "abc"},
		{value: `8e03978e-40d5-43e8-bc93-6894a57f9324`, want: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{value: `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, want: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{value: `"a\"b\\c"`, want: `a"b\c`},
		{value: `"a b"`, want: "a b"}, // valid sf-string; idem.ValidateKey refuses the space
		{value: `""`, want: ""},
		{value: ``, want: ""},
		{value: `abc==`, want: "abc=="},
		{value: `"a", "b"`, bad: true},
		{value: `a, b`, bad: true},
		{value: `a,b`, bad: true},
		{value: `"a";v=1`, bad: true},
		{value: `a;v=1`, bad: true},
		{value: `("a" "b")`, bad: true},
		{value: `"abc`, bad: true},
		{value: `"ab\c"`, bad: true},
		{value: `"abc\`, bad: true},
		{value: `"abc"x`, bad: true},
		{value: "\"a\x01b\"", bad: true},
		{value: "\"clé\"", bad: true},
		{value: `a"b`, bad: true},
		{value: `a\b`, bad: true},
		{value: `a b`, bad: true},
	}
	for _, tt := range tests {
		got, err := idemhttp.ParseKey(tt.value)
		if tt.bad {
			if !errors.Is(err, idemhttp.ErrKeySyntax) {
				t.Errorf("ParseKey(%q) = %q, %v; want ErrKeySyntax", tt.value, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", tt.value, got, err, tt.want)
		}
	}
}

// TestKeySyntaxRows runs the structured-field rows through the middleware:
// both syntaxes name one record, lists and parameters get 400, and every
// problem says how to retry and links the docs on 400, 409 and 422.
func TestKeySyntaxRows(t *testing.T) {
	const docs = "https://docs.example.com/idempotency"
	const payment = `{"amount":100}`
	tests := []struct {
		name  string
		steps []syntaxStep
	}{
		{"quoted then bare", []syntaxStep{
			{key: `"pay-1"`, status: 201, runs: 1},
			{key: `pay-1`, status: 201, replayed: true, runs: 1},
			{key: ` "pay-1" `, status: 201, replayed: true, runs: 1},
		}},
		{"escapes name the unescaped key", []syntaxStep{
			{key: `"a\\b"`, status: 201, runs: 1},
			{key: `"a\\b"`, status: 201, replayed: true, runs: 1},
			{key: `a\b`, status: 400, reason: idemhttp.ReasonInvalidKey, retry: idemhttp.RetryNewKey, link: true, runs: 1},
		}},
		{"list refused", []syntaxStep{
			{key: `"a", "b"`, status: 400, reason: idemhttp.ReasonInvalidKey, retry: idemhttp.RetryNewKey, link: true},
			{key: `a, b`, status: 400, reason: idemhttp.ReasonInvalidKey, retry: idemhttp.RetryNewKey, link: true},
		}},
		{"parameters refused", []syntaxStep{
			{key: `"a";v=1`, status: 400, reason: idemhttp.ReasonInvalidKey, retry: idemhttp.RetryNewKey, link: true},
			{key: `a;v=1`, status: 400, reason: idemhttp.ReasonInvalidKey, retry: idemhttp.RetryNewKey, link: true},
		}},
		{"quoted space breaks the key rules", []syntaxStep{
			{key: `"a b"`, status: 400, reason: idemhttp.ReasonInvalidKey, retry: idemhttp.RetryNewKey, link: true},
		}},
		{"mismatch says new key", []syntaxStep{
			{key: `"k"`, status: 201, runs: 1},
			{key: `k`, body: `{"amount":101}`, status: 422, reason: idemhttp.ReasonFingerprintMismatch, retry: idemhttp.RetryNewKey, link: true, runs: 1},
		}},
		{"missing key says new key", []syntaxStep{
			{key: "", status: 400, reason: idemhttp.ReasonMissingKey, retry: idemhttp.RetryNewKey, link: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &counter{}
			mw := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{DocsURL: docs})(h)
			for i, s := range tt.steps {
				body := s.body
				if body == "" {
					body = payment
				}
				w := serve(mw, request("POST", "/p", s.key, body))
				if w.Code != s.status {
					t.Fatalf("step %d: status %d, want %d (%s)", i, w.Code, s.status, w.Body)
				}
				if s.reason != "" {
					p := problem(t, w)
					if p.Reason != s.reason || p.Retry != s.retry {
						t.Fatalf("step %d: reason %q retry %q, want %q %q", i, p.Reason, p.Retry, s.reason, s.retry)
					}
				}
				wantLink := ""
				if s.link {
					wantLink = "<" + docs + `>; rel="describedby"`
				}
				if got := w.Header().Get("Link"); got != wantLink {
					t.Fatalf("step %d: Link %q, want %q", i, got, wantLink)
				}
				if got := w.Header().Get(idemhttp.ReplayedHeader) == "true"; got != s.replayed {
					t.Fatalf("step %d: replayed %v, want %v", i, got, s.replayed)
				}
				if got := h.runs.Load(); got != s.runs {
					t.Fatalf("step %d: %d runs, want %d", i, got, s.runs)
				}
			}
		})
	}
}

type syntaxStep struct {
	key, body string
	status    int
	reason    string
	retry     string
	link      bool
	replayed  bool
	runs      int64
}

// TestLinkAndRetryAdvice checks the Link header on 409 and its absence on a
// 503 and without DocsURL, and the retry advice of those answers.
func TestLinkAndRetryAdvice(t *testing.T) {
	const docs = "https://docs.example.com/a b<c>"
	const wantLink = `<https://docs.example.com/a%20b%3Cc%3E>; rel="describedby"`
	release := make(chan struct{})
	started := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		w.WriteHeader(201)
	})
	eng := idem.New(newStore(t))
	mw := idemhttp.Middleware(eng, idemhttp.Options{DocsURL: docs})(slow)
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(mw, request("POST", "/p", "k", "x"))
	}()
	<-started
	w := serve(mw, request("POST", "/p", `"k"`, "x"))
	close(release)
	<-done
	if w.Code != http.StatusConflict {
		t.Fatalf("status %d (%s)", w.Code, w.Body)
	}
	if p := problem(t, w); p.Retry != idemhttp.RetrySameKey {
		t.Fatalf("409 retry %q", p.Retry)
	}
	if got := w.Header().Get("Link"); got != wantLink {
		t.Fatalf("Link %q, want %q", got, wantLink)
	}

	plain := idemhttp.Middleware(eng, idemhttp.Options{})(slow)
	if w := serve(plain, request("POST", "/p", "a;b", "x")); w.Code != 400 || w.Header().Get("Link") != "" {
		t.Fatalf("without DocsURL: %d Link %q", w.Code, w.Header().Get("Link"))
	}
}
