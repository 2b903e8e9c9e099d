package blackbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/idembench/idembench/history"
)

// maxBody caps how much of a response body is read and digested.
const maxBody = 1 << 20

// request is one rendered request of the operation.
type request struct {
	method  string
	path    string
	headers [][2]string
	body    []byte
	fp      string // short id of the body, "" when empty
}

// fields returns the template fields of key number seq. Amount is a hash
// (FNV-1a) of the seed and the key, so every delivery of a key sends the
// same body.
func (o *Operation) fields(seed int64, key string, seq int64, mismatch bool, svc *Fields) Fields {
	h := uint64(14695981039346656037)
	for i := range 8 {
		h = (h ^ uint64(byte(seed>>(8*i)))) * 1099511628211
	}
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	span := uint64(o.AmountMax-o.AmountMin) + 1
	amount := o.AmountMin + int64(h%span)
	if mismatch {
		amount++
	}
	f := Fields{Key: key, Seq: seq, Amount: amount}
	if svc != nil {
		f.Addr, f.Port, f.DownstreamURL = svc.Addr, svc.Port, svc.DownstreamURL
	}
	return f
}

// build renders the operation for f. The key header is added by send.
func (o *Operation) build(f *Fields) (request, error) {
	r := request{method: o.Method}
	var err error
	if r.path, err = o.pathT.render(f); err != nil {
		return r, err
	}
	if r.body, err = o.bodyT.appendTo(nil, f); err != nil {
		return r, err
	}
	for _, k := range o.headerNames {
		v, err := o.headerT[k].render(f)
		if err != nil {
			return r, err
		}
		r.headers = append(r.headers, [2]string{k, v})
	}
	if len(r.body) > 0 {
		sum := sha256.Sum256(r.body)
		r.fp = hex.EncodeToString(sum[:8])
	}
	return r, nil
}

// answer is what one attempt got back.
type answer struct {
	status     int
	header     http.Header
	body       []byte
	err        error // transport error; status is 0
	sent       bool  // the request may have reached the service
	retryAfter string
}

// send performs one attempt: the key goes in keyHeader unless key is "".
// The transport's automatic retry of requests with an Idempotency-Key is
// defeated (no GetBody; the header under a non-canonical name when the
// body is empty), so every request that leaves is the one recorded.
//
// With buf set, the body is read into it (reset first) and a.body aliases
// it, so a caller that reuses buffers must be done with the answer before
// it reuses buf; without buf the body is a fresh slice.
func send(ctx context.Context, c *http.Client, base string, r *request, keyHeader, key string, extra map[string]string, path string, buf *bytes.Buffer) answer {
	if path == "" {
		path = r.path
	}
	req, err := http.NewRequestWithContext(ctx, r.method, base+path, bytes.NewReader(r.body))
	if err != nil {
		return answer{err: err}
	}
	req.GetBody = nil
	if len(r.body) == 0 {
		req.Body = nil
	}
	for _, h := range r.headers {
		req.Header.Set(h[0], h[1])
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	if key != "" {
		req.Header[lowerHeader(keyHeader)] = []string{key}
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err, sent: !isDialError(err)}
	}
	defer resp.Body.Close()
	var body []byte
	if buf != nil {
		buf.Reset()
		_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxBody))
		body = buf.Bytes()
	} else {
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: body, sent: true, retryAfter: resp.Header.Get("Retry-After")}
	if err != nil {
		// The status line arrived but the body was cut: the request was
		// processed, its answer is not known in full.
		a.err, a.status = err, 0
	}
	return a
}

// lowerHeader returns name in lower case; the operation's key header is
// looked up once.
var lowerHeaders sync.Map

func lowerHeader(name string) string {
	if v, ok := lowerHeaders.Load(name); ok {
		return v.(string)
	}
	l := strings.ToLower(name)
	lowerHeaders.Store(name, l)
	return l
}

// bodyBufs recycles the driver's response buffers.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// isDialError reports whether err happened before any byte of the request
// left: the connection could not be made.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// digest is Op.Resp for an answer: status and body, hashed. Headers are
// left out (Date changes on every answer).
func digest(status int, body []byte) string {
	b := make([]byte, 0, 8+len(body))
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, '\n')
	b = append(b, body...)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// classify maps an answer to a history outcome and says whether it is a
// final answer (no retry) and whether the target declares its status. An
// undeclared status is an Unknown outcome (it may or may not have
// executed) and final: what it means is not guessed.
func (o *Operation) classify(a *answer) (out history.Outcome, final, declared bool) {
	if a.err != nil {
		if !a.sent {
			return history.Error, false, true
		}
		return history.Unknown, false, true
	}
	replay := o.isReplay(a.header)
	if slices.Contains(o.Success, a.status) {
		if replay {
			return history.Replayed, true, true
		}
		return history.Executed, true, true
	}
	if out, final, ok := o.Statuses.meaning(a.status); ok {
		return out, final, true
	}
	switch {
	case a.status >= 500 && replay:
		return history.Failed, true, true // a stored 5xx, replayed
	case a.status >= 500:
		return history.Released, false, true
	}
	return history.Unknown, true, false
}

// isReplay reports whether h carries the replay marker.
func (o *Operation) isReplay(h http.Header) bool {
	if o.replayName == "" || h == nil {
		return false
	}
	v := h.Get(o.replayName)
	if o.replayValue == "" {
		return v != ""
	}
	return strings.EqualFold(strings.TrimSpace(v), o.replayValue)
}

// resourceID reads the resource id of a successful answer; "" when the
// target declares none or the answer has none.
func (o *Operation) resourceID(a *answer) string {
	switch {
	case o.ResourceID == "":
		return ""
	case strings.HasPrefix(o.ResourceID, "header:"):
		return a.header.Get(strings.TrimPrefix(o.ResourceID, "header:"))
	}
	var v any
	if json.Unmarshal(a.body, &v) != nil {
		return ""
	}
	return jsonPointer(v, o.ResourceID)
}

// jsonPointer resolves an RFC 6901 pointer in v and formats the value it
// finds (a string as is, anything else as JSON); "" when it finds nothing.
func jsonPointer(v any, ptr string) string {
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
