package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
)

// DefaultMaxResponseSize is the default cap on a stored response (1 MiB),
// counting the body and every header name and value.
const DefaultMaxResponseSize = 1 << 20

// Response is what an execution produced and what a replay returns: an
// HTTP-like status code, headers and body. Stores keep it byte for byte.
// A Response handed to a store must not be modified afterwards.
type Response struct {
	Status int
	Header map[string][]string
	Body   []byte
}

// Size returns the bytes the response occupies against the size cap: the
// body plus every header name and value.
func (r *Response) Size() int {
	n := len(r.Body)
	for k, vs := range r.Header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

// CheckSize returns an error wrapping ErrResponseTooLarge when r is larger
// than limit bytes. A limit of 0 means DefaultMaxResponseSize; a negative
// limit means unlimited.
func (r *Response) CheckSize(limit int) error {
	if limit == 0 {
		limit = DefaultMaxResponseSize
	}
	if limit > 0 {
		if n := r.Size(); n > limit {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, limit)
		}
	}
	return nil
}

// Equal reports whether r and o have the same status, headers and body.
func (r *Response) Equal(o *Response) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.Digest() == o.Digest()
}

// Digest returns a SHA-256 of the canonical encoding of r (headers sorted),
// used to compare responses without keeping them.
func (r *Response) Digest() [32]byte {
	return sha256.Sum256(EncodeResponse(r))
}

const responseEncodingVersion = 1

// EncodeResponse returns the canonical binary form of r: a version byte, the
// status, the headers sorted by name (values in order), then the body.
// DecodeResponse reverses it.
func EncodeResponse(r *Response) []byte {
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	b := make([]byte, 0, 16+r.Size()+8*len(names))
	b = append(b, responseEncodingVersion)
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = appendBytes(b, k)
		vs := r.Header[k]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendBytes(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.Body)))
	return append(b, r.Body...)
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeResponse parses the output of EncodeResponse. Any malformed input
// (truncated, trailing bytes, unknown version, absurd lengths, a form
// EncodeResponse does not write, such as a padded number or headers out of
// order) returns an error wrapping ErrCorruptRecord; it never panics. So
// whatever decodes re-encodes to the same bytes.
func DecodeResponse(b []byte) (Response, error) {
	d := decoder{b: b}
	if v := d.byte(); v != responseEncodingVersion && d.err == nil {
		return Response{}, fmt.Errorf("%w: response encoding version %d", ErrCorruptRecord, v)
	}
	var r Response
	st := d.uvarint()
	if st > 999 {
		d.fail("status %d out of range", st)
	}
	r.Status = int(st)
	nh := d.count()
	if nh > 0 {
		r.Header = make(map[string][]string, nh)
	}
	prev := ""
	for i := 0; i < nh && d.err == nil; i++ {
		k := d.string()
		nv := d.count()
		vs := make([]string, 0, nv)
		for j := 0; j < nv && d.err == nil; j++ {
			vs = append(vs, d.string())
		}
		switch {
		case i > 0 && k == prev:
			d.fail("duplicate header %q", k)
		case i > 0 && k < prev:
			d.fail("header %q after %q: not in EncodeResponse's order", k, prev)
		}
		r.Header[k], prev = vs, k
	}
	if n := d.count(); d.err == nil {
		r.Body = d.take(n)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return Response{}, d.err
	}
	return r, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: response: %s", ErrCorruptRecord, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n <= 0:
		d.fail("bad varint")
		return 0
	case n > 1 && d.b[n-1] == 0:
		d.fail("non-minimal varint") // EncodeResponse never writes one
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that must fit in the remaining input.
func (d *decoder) count() int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.b)) {
		d.fail("length %d exceeds remaining %d bytes", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	out := make([]byte, n)
	copy(out, d.b[:n])
	d.b = d.b[n:]
	return out
}

func (d *decoder) string() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
