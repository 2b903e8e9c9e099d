package idemhttp

import (
	"mime"
	"net/http"
	"net/url"
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
	headers := make([]string, len(o.Headers))
	for i, h := range o.Headers {
		headers[i] = http.CanonicalHeaderKey(h)
	}
	return func(r *http.Request, body []byte) (idem.Fingerprint, error) {
		parts := make([]string, 0, 8+2*len(headers))
		parts = append(parts, "idemhttp/v1", r.Method, r.URL.EscapedPath())
		if o.IgnoreQuery {
			parts = append(parts, "")
		} else {
			parts = append(parts, canonicalQuery(r.URL.RawQuery))
		}
		media := mediaType(r.Header.Get("Content-Type"))
		parts = append(parts, media)
		if !o.RawJSON && isJSON(media) {
			if c, err := CanonicalJSON(body); err == nil {
				parts = append(parts, "json", string(c))
			} else {
				parts = append(parts, "raw", string(body))
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
	}
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
