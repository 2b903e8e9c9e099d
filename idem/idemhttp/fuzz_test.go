package idemhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// fuzzReq is one fuzzed request.
type fuzzReq struct {
	Method, Target, ContentType string
	Body                        []byte
}

// build makes the request by hand: httptest.NewRequest panics on the odd
// methods and targets the fuzzer produces, a server would refuse them
// earlier, and the middleware must not care.
func (q fuzzReq) build(key, hname, hval string) *http.Request {
	u, err := url.Parse(q.Target)
	if err != nil {
		u = &url.URL{Path: q.Target}
	}
	r := (&http.Request{
		Method: q.Method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Host: "example.com", RequestURI: q.Target,
		Body: io.NopCloser(bytes.NewReader(q.Body)), ContentLength: int64(len(q.Body)),
	}).WithContext(context.Background())
	if q.ContentType != "" {
		r.Header.Set("Content-Type", q.ContentType)
	}
	r.Header.Set(idemhttp.DefaultHeader, key)
	if hname != "" {
		r.Header[hname] = append(r.Header[hname], hval)
	}
	return r
}

// echo answers with a description of the request it saw, and a status
// taken from the body's first byte (so some answers are 5xx and released).
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	status := 201
	if len(body) > 0 {
		status = 200 + int(body[0])*400/256 // 200..598
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(fuzzReq{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), body})
})

// equivalent is the test's own, looser notion of "the same request": any
// two requests the middleware replays for each other must pass it.
func equivalent(a, b fuzzReq, au, bu *url.URL) bool {
	if a.Method != b.Method || au.EscapedPath() != bu.EscapedPath() {
		return false
	}
	qa, ea := url.ParseQuery(au.RawQuery)
	qb, eb := url.ParseQuery(bu.RawQuery)
	if ea != nil || eb != nil {
		if au.RawQuery != bu.RawQuery {
			return false
		}
	} else if len(qa)+len(qb) > 0 && !reflect.DeepEqual(qa, qb) {
		return false
	}
	ma, _, ea := mime.ParseMediaType(a.ContentType)
	mb, _, eb := mime.ParseMediaType(b.ContentType)
	if ea != nil || eb != nil {
		ma, mb = strings.TrimSpace(a.ContentType), strings.TrimSpace(b.ContentType)
	}
	if ma != mb {
		return false
	}
	if bytes.Equal(a.Body, b.Body) {
		return true
	}
	return (ma == "application/json" || strings.HasSuffix(ma, "+json")) && jsonEqual(a.Body, b.Body)
}

func jsonEqual(a, b []byte) bool {
	va, oka := strictJSON(a)
	vb, okb := strictJSON(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// strictJSON decodes b into maps, slices and json.Numbers, refusing what
// makes two different texts decode alike: invalid UTF-8, repeated members,
// and U+FFFD (which the decoder also produces for invalid escapes).
func strictJSON(b []byte) (any, bool) {
	if !utf8.Valid(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var value func() (any, bool)
	value = func() (any, bool) {
		tok, err := d.Token()
		if err != nil {
			return nil, false
		}
		switch t := tok.(type) {
		case string:
			return t, !strings.ContainsRune(t, utf8.RuneError)
		case json.Delim:
			switch t {
			case '[':
				arr := []any{}
				for d.More() {
					v, ok := value()
					if !ok {
						return nil, false
					}
					arr = append(arr, v)
				}
				_, err := d.Token()
				return arr, err == nil
			case '{':
				obj := map[string]any{}
				for d.More() {
					k, ok := value()
					name, isName := k.(string)
					if !ok || !isName {
						return nil, false
					}
					if _, dup := obj[name]; dup {
						return nil, false
					}
					if obj[name], ok = value(); !ok {
						return nil, false
					}
				}
				_, err := d.Token()
				return obj, err == nil
			}
			return nil, false
		}
		return tok, true
	}
	v, ok := value()
	if !ok {
		return nil, false
	}
	_, err := d.Token()
	return v, err == io.EOF
}

// FuzzMiddleware sends two requests with the same key and random methods,
// targets, content types, bodies and one extra header. The middleware must
// never panic, and a replay must only ever answer a request equivalent to
// the one that produced it.
func FuzzMiddleware(f *testing.F) {
	f.Add("POST", "POST", "/p", "/p", "application/json", "application/json", "k", []byte(`{"a":1,"b":2}`), []byte(`{"b":2,"a":1}`), "", "")
	f.Add("POST", "POST", "/p?x=1&y=2", "/p?y=2&x=1", "text/plain", "text/plain", "k", []byte("a"), []byte("a"), "X-Other", "1")
	f.Add("PATCH", "POST", "/p", "/p", "", "", "key-1", []byte{}, []byte{}, "Idempotency-Key", "second")
	f.Add("POST", "POST", "/p", "/p", "application/json", "application/json", "k", []byte(`{"a":1}`), []byte(`{"a":1.0}`), "", "")
	f.Add("GET", "DELETE", "/", "/", "", "", "", []byte("x"), []byte("y"), "idempotency-key", "raw")
	f.Add("POST", "POST", "/p", "/p", "", "", `"a\\b\"c"`, []byte("x"), []byte("x"), "", "")
	f.Add("POST", "POST", "/p", "/p", "", "", `"a", "b"`, []byte("x"), []byte("x"), "", "")
	f.Add("POST", "POST", "/p", "/p", "", "", `abc;v=1`, []byte("x"), []byte("x"), "", "")
	f.Add("POST", "POST", "/p", "/p", "", "", ` "k" `, []byte("x"), []byte("x"), "", "")
	f.Fuzz(func(t *testing.T, m1, m2, t1, t2, ct1, ct2, key string, b1, b2 []byte, hname, hval string) {
		store := memstore.New(memstore.Options{SweepInterval: -1})
		defer store.Close()
		mw := idemhttp.Middleware(idem.New(store), idemhttp.Options{})(echo)

		// The second request names the key in the other syntax when it
		// can: quoted (RFC 8941 sf-string) after a bare key and bare after
		// a quoted one. Both must name the same record.
		key2 := key
		if parsed, err := idemhttp.ParseKey(key); err == nil {
			key2 = otherSyntax(key, parsed)
		}
		q1, q2 := fuzzReq{m1, t1, ct1, b1}, fuzzReq{m2, t2, ct2, b2}
		r1, r2 := q1.build(key, hname, hval), q2.build(key2, hname, hval)
		w1 := httptest.NewRecorder()
		mw.ServeHTTP(w1, r1)
		w2 := httptest.NewRecorder()
		mw.ServeHTTP(w2, r2)

		for i, w := range []*httptest.ResponseRecorder{w1, w2} {
			if w.Code < 200 || w.Code > 599 {
				t.Fatalf("status %d", w.Code)
			}
			checkProblem(t, w, []string{m1, m2}[i], []string{key, key2}[i], hname)
		}
		same := m1 == m2 && t1 == t2 && ct1 == ct2 && bytes.Equal(b1, b2) && hname == ""
		if same && guarded(m1) && w1.Code < 500 && w1.Header().Get("Content-Type") != idemhttp.ProblemContentType &&
			w2.Header().Get(idemhttp.ReplayedHeader) != "true" {
			t.Fatalf("key %q then %q: the stored %d was not replayed: %d %s", key, key2, w1.Code, w2.Code, w2.Body)
		}
		if w1.Header().Get(idemhttp.ReplayedHeader) != "" {
			t.Fatal("first request replayed")
		}
		if w2.Header().Get(idemhttp.ReplayedHeader) != "true" {
			if w2.Code == http.StatusUnprocessableEntity && same {
				t.Fatalf("identical request refused as a mismatch: %s", w2.Body)
			}
			return
		}
		var saw fuzzReq
		if err := json.Unmarshal(w2.Body.Bytes(), &saw); err != nil {
			t.Fatalf("replayed body %q: %v", w2.Body, err)
		}
		if !equivalent(saw, q2, r1.URL, r2.URL) {
			t.Fatalf("replayed the response to %+v for %+v", saw, q2)
		}
		if !bytes.Equal(w1.Body.Bytes(), w2.Body.Bytes()) || w1.Code != w2.Code {
			t.Fatalf("replay %d %q differs from original %d %q", w2.Code, w2.Body, w1.Code, w1.Body)
		}
	})
}

// otherSyntax returns the key in the syntax raw does not use: the sf-string
// of parsed when raw is bare, parsed itself when raw is quoted and parsed
// can stand bare.
func otherSyntax(raw, parsed string) string {
	if !strings.HasPrefix(strings.TrimLeft(raw, " \t"), `"`) {
		return quoteKey(parsed)
	}
	if parsed == "" || strings.ContainsAny(parsed, ",;\"\\( \t") {
		return raw
	}
	return parsed
}

// quoteKey writes k as an RFC 8941 sf-string.
func quoteKey(k string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(k) + `"`
}

// checkProblem checks a middleware answer against the key syntax: on a
// guarded method, a key header ParseKey refuses gets 400 invalid_key
// (unless an extra key header decided first), and every problem carries
// retry advice.
func checkProblem(t *testing.T, w *httptest.ResponseRecorder, method, key, hname string) {
	t.Helper()
	_, perr := idemhttp.ParseKey(key)
	mustRefuse := perr != nil && guarded(method) && hname != idemhttp.DefaultHeader
	if w.Header().Get("Content-Type") != idemhttp.ProblemContentType || w.Header().Get(idemhttp.ReplayedHeader) != "" {
		if mustRefuse {
			t.Fatalf("key %q refused by ParseKey (%v) but answered %d %q", key, perr, w.Code, w.Body)
		}
		return
	}
	var p idemhttp.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem %q: %v", w.Body, err)
	}
	switch p.Retry {
	case idemhttp.RetrySameKey, idemhttp.RetryNewKey, idemhttp.RetryNone:
	default:
		t.Fatalf("problem %q: retry %q", w.Body, p.Retry)
	}
	if mustRefuse && (w.Code != http.StatusBadRequest || p.Reason != idemhttp.ReasonInvalidKey) {
		t.Fatalf("key %q refused by ParseKey (%v) but answered %d %q", key, perr, w.Code, p.Reason)
	}
}

// guarded reports whether the default options guard method.
func guarded(method string) bool { return method == http.MethodPost || method == http.MethodPatch }
