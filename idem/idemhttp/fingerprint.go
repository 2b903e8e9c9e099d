package idemhttp

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/idembench/idembench/idem"
)

// FingerprintFunc computes the fingerprint of a request whose body has been
// read into body (r.Body must not be read). Requests that carry the same key
// must have equal fingerprints exactly when they are the same request. An
// error refuses the request with 400 (reason fingerprint_failed).
type FingerprintFunc func(r *http.Request, body []byte) (idem.Fingerprint, error)

// FingerprintOptions configures NewFingerprinter. The zero value is the
// default fingerprint of the middleware.
type FingerprintOptions struct {
	// Headers lists request headers whose values are part of the
	// fingerprint (names are case-insensitive; values in order; an absent
	// header differs from an empty one). Nil means none.
	Headers []string
	// RawJSON turns off JSON canonicalization: JSON bodies are then
	// compared byte for byte like any other body.
	RawJSON bool
	// IgnoreQuery leaves the query string out of the fingerprint.
	IgnoreQuery bool
	// Query, when not nil, keeps only these query parameters (names are
	// case-sensitive; values in order; an absent parameter differs from
	// an empty one). IgnoreQuery wins over it.
	Query []string
	// JSONInclude, when not nil, keeps only these members of a JSON body,
	// as JSON pointers (RFC 6901: "/amount", "/card/last4"), in this
	// order: a member that is absent differs from one that is null.
	// JSONExclude removes members (object members only) before that, or
	// from the whole body when JSONInclude is nil: "/metadata/trace_id".
	// Both apply only to a body that is JSON and that CanonicalJSON
	// accepts (otherwise the body counts byte for byte, as without a
	// policy), and not with RawJSON. A malformed pointer makes
	// NewFingerprinter panic; NewFingerprintPolicy returns an error.
	JSONInclude, JSONExclude []string
	// Policy names the policy and its version ("payments/v2"). It is part
	// of every fingerprint, so two policies never produce the same
	// fingerprint by accident; when the policy changes, give it a new name
	// and list the previous one in Options.PriorFingerprints, so that keys
	// stored under it are still recognised (no false 422). Empty means the
	// middleware's built-in policy.
	Policy string
}

// NewFingerprinter returns a FingerprintFunc over the method, the escaped
// path, the query (parameters sorted by name, values in order; a query that
// does not parse is taken as is), the media type of Content-Type (lowercase,
// without parameters), the body and the headers of o.
//
// A body whose media type is application/json or ends in +json is
// canonicalized with CanonicalJSON unless o.RawJSON is set, so reordered
// members and changed whitespace do not make a different request. A body
// that CanonicalJSON refuses is taken byte for byte, in a separate domain:
// a raw body never equals a canonical one.
func NewFingerprinter(o FingerprintOptions) FingerprintFunc {
	f, err := NewFingerprintPolicy(o)
	if err != nil {
		panic(err.Error())
	}
	return f
}

// NewFingerprintPolicy is NewFingerprinter that returns an error for a
// malformed JSON pointer instead of panicking: for policies read from
// configuration.
func NewFingerprintPolicy(o FingerprintOptions) (FingerprintFunc, error) {
	headers := make([]string, len(o.Headers))
	for i, h := range o.Headers {
		headers[i] = http.CanonicalHeaderKey(h)
	}
	sel, err := newJSONSelection(o.JSONInclude, o.JSONExclude)
	if err != nil {
		return nil, err
	}
	domain := "idemhttp/v1"
	if o.Policy != "" || sel != nil || o.Query != nil {
		domain = "idemhttp/policy/v1:" + o.Policy
	}
	return func(r *http.Request, body []byte) (idem.Fingerprint, error) {
		parts := make([]string, 0, 8+2*len(headers))
		parts = append(parts, domain, r.Method, r.URL.EscapedPath())
		switch {
		case o.IgnoreQuery:
			parts = append(parts, "")
		case o.Query != nil:
			parts = append(parts, selectedQuery(r.URL.RawQuery, o.Query)...)
		default:
			parts = append(parts, canonicalQuery(r.URL.RawQuery))
		}
		media := mediaType(r.Header.Get("Content-Type"))
		parts = append(parts, media)
		if !o.RawJSON && isJSON(media) {
			c, err := CanonicalJSON(body)
			var sp []string
			if err == nil && sel != nil {
				sp, err = sel.parts(c)
			}
			switch {
			case err != nil:
				parts = append(parts, "raw", string(body))
			case sel != nil:
				parts = append(parts, sp...)
			default:
				parts = append(parts, "json", string(c))
			}
		} else {
			parts = append(parts, "raw", string(body))
		}
		for _, h := range headers {
			vs, ok := r.Header[h]
			if !ok {
				parts = append(parts, h, "absent")
				continue
			}
			parts = append(parts, h, "present")
			parts = append(parts, vs...)
			parts = append(parts, "end")
		}
		return idem.FingerprintString(parts...), nil
	}, nil
}

// selectedQuery returns the fingerprint parts of the parameters names of
// raw: each name with "absent", or the number of its values and the
// values. A query that does not parse counts as is.
func selectedQuery(raw string, names []string) []string {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return []string{"raw:" + raw}
	}
	out := make([]string, 0, 1+3*len(names))
	out = append(out, "selected")
	for _, n := range names {
		vs, ok := q[n]
		if !ok {
			out = append(out, n, "absent")
			continue
		}
		out = append(out, n, strconv.Itoa(len(vs)))
		out = append(out, vs...)
	}
	return out
}

// defaultFingerprint is the FingerprintFunc used when Options.Fingerprint is
// nil.
var defaultFingerprint = NewFingerprinter(FingerprintOptions{})

// canonicalQuery sorts the parameters of raw by name; a query that does not
// parse is returned as is, marked so it cannot equal a parsed one.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "raw:" + raw
	}
	return "parsed:" + q.Encode()
}

// mediaType returns the lowercase media type of a Content-Type value, or the
// trimmed value itself if it does not parse.
func mediaType(ct string) string {
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "unparsed:" + strings.TrimSpace(ct)
	}
	return mt
}

// isJSON reports whether media is a JSON media type.
func isJSON(media string) bool {
	return media == "application/json" || strings.HasSuffix(media, "+json")
}
