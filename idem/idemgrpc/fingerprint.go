package idemgrpc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/idembench/idembench/idem"
)

// FingerprintPolicy is a declarative fingerprint for Options.Fingerprint:
// which fields of the request message count, by field path (proto field
// names joined by dots through singular message fields: "amount",
// "card.last4"). Its Func fingerprints the full method name, the
// message type, Policy and the deterministic encoding of the message with
// only those fields.
type FingerprintPolicy struct {
	// Policy names the policy and its version ("payments/v2"); it is part
	// of every fingerprint, so that two policies never share one by
	// accident.
	Policy string
	// Include, when not nil, keeps only these fields (a path through a
	// message field keeps that message's other fields out). Nil keeps
	// every field.
	Include []string
	// Exclude clears these fields (after Include).
	Exclude []string
}

// Func returns the fingerprint function of p. A request that is not a
// proto message, or a path that names no field of the request's message
// (nor of a message field on its way), is an error: the call gets
// InvalidArgument, and the configuration must be fixed.
func (p FingerprintPolicy) Func() FingerprintFunc {
	split := func(paths []string) [][]string {
		if paths == nil {
			return nil
		}
		out := make([][]string, len(paths))
		for i, s := range paths {
			out[i] = strings.Split(s, ".")
		}
		return out
	}
	include, exclude := split(p.Include), split(p.Exclude)
	return func(_ context.Context, fullMethod string, req any) (idem.Fingerprint, error) {
		msg, ok := req.(proto.Message)
		if !ok {
			return idem.Fingerprint{}, fmt.Errorf("request %T is not a proto message", req)
		}
		m := proto.Clone(msg).ProtoReflect()
		for _, path := range append(slices.Clone(include), exclude...) {
			if err := checkPath(m.Descriptor(), path); err != nil {
				return idem.Fingerprint{}, err
			}
		}
		if include != nil {
			keepOnly(m, include)
		}
		for _, path := range exclude {
			clearPath(m, path)
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Interface())
		if err != nil {
			return idem.Fingerprint{}, err
		}
		return idem.NewFingerprint([]byte("idemgrpc/policy/v1:"+p.Policy), []byte(fullMethod),
			[]byte(m.Descriptor().FullName()), b), nil
	}
}

// checkPath reports a path that does not name a field of d, through
// singular message fields.
func checkPath(d protoreflect.MessageDescriptor, path []string) error {
	for i, name := range path {
		f := d.Fields().ByName(protoreflect.Name(name))
		if f == nil {
			return fmt.Errorf("fingerprint policy: %s has no field %q (path %q)", d.FullName(), name, strings.Join(path, "."))
		}
		if i < len(path)-1 {
			if f.Message() == nil || f.IsList() || f.IsMap() {
				return fmt.Errorf("fingerprint policy: %s.%s is not a singular message (path %q)", d.FullName(), name, strings.Join(path, "."))
			}
			d = f.Message()
		}
	}
	return nil
}

// keepOnly clears every populated field of m that no path keeps: a field a
// path names is kept whole, a message field a path goes through keeps only
// what the rest of the path names (and is cleared when that leaves it
// empty, so that an empty message and an absent one fingerprint alike).
func keepOnly(m protoreflect.Message, paths [][]string) {
	var set []protoreflect.FieldDescriptor
	m.Range(func(f protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		set = append(set, f)
		return true
	})
	for _, f := range set {
		var rest [][]string
		whole := false
		for _, p := range paths {
			if len(p) == 0 || p[0] != string(f.Name()) {
				continue
			}
			if len(p) == 1 {
				whole = true
			} else {
				rest = append(rest, p[1:])
			}
		}
		switch {
		case whole:
		case rest != nil:
			sub := m.Mutable(f).Message()
			keepOnly(sub, rest)
			if empty(sub) {
				m.Clear(f)
			}
		default:
			m.Clear(f)
		}
	}
}

// empty reports whether m has no populated field.
func empty(m protoreflect.Message) bool {
	n := 0
	m.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { n++; return false })
	return n == 0
}

// clearPath clears the field path names in m, if it is set.
func clearPath(m protoreflect.Message, path []string) {
	for i, name := range path {
		f := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if f == nil || !m.Has(f) {
			return
		}
		if i == len(path)-1 {
			m.Clear(f)
			return
		}
		m = m.Mutable(f).Message()
	}
}
