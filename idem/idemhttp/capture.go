package idemhttp

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// hopByHop are response headers that describe one connection, not the
// response; they are never stored (RFC 9110, section 7.6.1).
var hopByHop = map[string]bool{
	"Connection":          true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Proxy-Connection":    true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
}

// capture is the http.ResponseWriter the handler writes to. It buffers the
// response until the handler returns. Once the response crosses the size
// cap it flushes what it has to the real writer and streams the rest
// (spilled), so the client gets it in full and nothing is truncated.
//
// It is used by the handler's goroutine only, as a ResponseWriter is.
type capture struct {
	w      http.ResponseWriter // the real writer
	header http.Header         // what the handler sets
	limit  int                 // size cap; <0: none
	keep   func(name string) bool

	status  int         // 0 until WriteHeader or the first Write
	sent    http.Header // snapshot of header at WriteHeader
	stored  http.Header // the part of sent that is stored
	size    int         // stored header bytes plus body bytes so far
	body    bytes.Buffer
	spilled bool // the response went to w; body is no longer kept
	werr    error
}

func newCapture(w http.ResponseWriter, limit int, keep func(string) bool) *capture {
	return &capture{w: w, header: make(http.Header), limit: limit, keep: keep}
}

// Header returns the handler's header map. It starts empty: headers that
// middleware outside this one set on the real writer are not stored.
func (c *capture) Header() http.Header { return c.header }

// WriteHeader records the status and snapshots the headers, as net/http
// does: changes to the map afterwards are ignored. Informational codes
// (1xx) are dropped; a second call is ignored; a code outside 100..999
// panics like net/http's.
func (c *capture) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("idemhttp: invalid WriteHeader code %d", code))
	}
	if c.status != 0 || code < 200 {
		return
	}
	c.status = code
	c.sent = c.header.Clone()
	if c.sent == nil {
		c.sent = make(http.Header)
	}
	c.stored = make(http.Header, len(c.sent))
	for k, vs := range c.sent {
		if c.keep(k) {
			c.stored[k] = vs
			c.size += len(k)
			for _, v := range vs {
				c.size += len(v)
			}
		}
	}
}

// Write buffers p, or streams it once the response is above the cap. Like
// net/http it sends an implicit 200 first, sniffs a missing Content-Type
// from the first bytes (unless a Content-Encoding or Transfer-Encoding is
// set), and refuses a body for 204 and 304.
func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(c.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.spilled {
		return c.w.Write(p)
	}
	if _, ok := c.sent["Content-Type"]; !ok && c.sent.Get("Content-Encoding") == "" && c.sent.Get("Transfer-Encoding") == "" {
		c.setSent("Content-Type", http.DetectContentType(p))
	}
	if c.limit >= 0 && c.size+len(p) > c.limit {
		c.spill()
		if c.werr != nil {
			return 0, c.werr
		}
		return c.w.Write(p)
	}
	c.size += len(p)
	return c.body.Write(p)
}

// setSent adds a header to the snapshot, as net/http adds the ones it
// computes itself.
func (c *capture) setSent(name, value string) {
	c.sent[name] = []string{value}
	if c.keep(name) {
		c.stored[name] = []string{value}
		c.size += len(name) + len(value)
	}
}

// spill sends the status, the headers and the buffered body to the real
// writer; later writes go there directly.
func (c *capture) spill() {
	c.spilled = true
	copyHeader(c.w.Header(), c.sent)
	c.w.WriteHeader(c.status)
	_, c.werr = c.w.Write(c.body.Bytes())
	c.body = bytes.Buffer{}
}

// finish ends the handler's response: a handler that wrote nothing sent an
// empty 200.
func (c *capture) finish() {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
}

// send writes the buffered response to the real writer with every header
// the handler set. It does nothing after a spill.
func (c *capture) send() {
	if c.spilled {
		return
	}
	copyHeader(c.w.Header(), c.sent)
	if _, ok := c.sent["Content-Length"]; !ok && bodyAllowed(c.status) {
		c.w.Header().Set("Content-Length", strconv.Itoa(c.body.Len()))
	}
	c.w.WriteHeader(c.status)
	_, _ = c.w.Write(c.body.Bytes())
}

// bodyAllowed reports whether a response with status may have a body.
func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

// copyHeader sets every header of src on dst, replacing values dst had, and
// copying the value slices so that later Adds on dst cannot reach src.
func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
}

// storedHeader reports whether a response header is stored by default:
// anything but hop-by-hop headers, trailers and the replay marker.
func storedHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	return !hopByHop[name] && !strings.HasPrefix(name, http.TrailerPrefix) && name != ReplayedHeader
}
