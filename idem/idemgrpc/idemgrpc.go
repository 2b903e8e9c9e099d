// Package idemgrpc is a gRPC unary server interceptor that makes unary
// calls idempotent with an idempotency-key metadata entry, on top of an
// *idem.Engine: the handler runs at most once per key, and a retry with the
// same key and request gets the stored response message (or the stored
// error status) again.
//
//	srv := grpc.NewServer(grpc.UnaryInterceptor(idemgrpc.UnaryServerInterceptor(eng, idemgrpc.Options{})))
//
// The key is read from the metadata entry idempotency-key, with the syntax
// of the HTTP header (idemhttp.ParseKey: an RFC 8941 string, quoted or
// bare). Answers of the interceptor itself:
//
//	code                when
//	InvalidArgument     key missing (unless Options.Optional), repeated, malformed
//	FailedPrecondition  the key was used with a different request (method or message)
//	Aborted             a call with this key is in progress; carries a RetryInfo
//	                    detail with Options.RetryAfter
//	Unavailable         the idempotency store failed; the handler did not run
//
// A replayed answer carries the response header idempotency-replayed: true.
// Requests and responses must be proto messages: the request's
// deterministic encoding (with the full method name) is the default
// fingerprint, and the response is stored as its encoding with its type's
// full name, so a replay unmarshals the same message type (registered in
// protoregistry.GlobalTypes, as generated code and the well-known types
// are).
//
// The handler's errors decide like the HTTP status does for idemhttp: an
// error whose code Options.StoreCode accepts (by default InvalidArgument,
// NotFound, AlreadyExists, FailedPrecondition and OutOfRange: answers about
// the request itself) is stored and replayed; any other releases the key,
// so the client may retry with it.
package idemgrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// Metadata names.
const (
	// MetadataKey is the request metadata entry that carries the key.
	MetadataKey = "idempotency-key"
	// ReplayedKey is set to "true" in the response header of a replay.
	ReplayedKey = "idempotency-replayed"
	// DefaultRetryAfter is the default RetryInfo delay of Aborted.
	DefaultRetryAfter = time.Second
)

// Header names inside a stored idem.Response.
const (
	headerType    = "grpc-message-type"
	headerMessage = "grpc-message"
)

// Options configures the interceptor. The zero value guards every unary
// method and requires the key.
type Options struct {
	// Optional lets calls without the key pass to the handler untouched.
	Optional bool
	// Guard, when set, says which methods (full names, "/pkg.Svc/Method")
	// are guarded; others pass untouched. Nil guards every method.
	Guard func(fullMethod string) bool
	// Scope, when set, returns the call's namespace (a tenant), as
	// idem.Engine.DoScoped takes it.
	Scope func(ctx context.Context) string
	// Fingerprint identifies the request. Nil means the full method name
	// and the request's deterministic proto encoding.
	Fingerprint func(ctx context.Context, fullMethod string, req any) (idem.Fingerprint, error)
	// StoreCode decides whether a handler error with this code is stored
	// and replayed (true) or releases the key (false). Nil means
	// InvalidArgument, NotFound, AlreadyExists, FailedPrecondition and
	// OutOfRange are stored.
	StoreCode func(codes.Code) bool
	// RetryAfter is the RetryInfo delay of Aborted. Zero means
	// DefaultRetryAfter.
	RetryAfter time.Duration
}

// errRelease is the engine function's error for a handler error that is
// not stored: the engine's default classifier releases the key.
type errRelease struct{ err error }

func (e *errRelease) Error() string {
	return "idemgrpc: handler error released the key: " + e.err.Error()
}
func (e *errRelease) Unwrap() error { return e.err }

// UnaryServerInterceptor returns the interceptor. It panics if e is nil.
func UnaryServerInterceptor(e *idem.Engine, opts Options) grpc.UnaryServerInterceptor {
	if e == nil {
		panic("idemgrpc: UnaryServerInterceptor with nil Engine")
	}
	if opts.Fingerprint == nil {
		opts.Fingerprint = defaultFingerprint
	}
	if opts.StoreCode == nil {
		opts.StoreCode = defaultStoreCode
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if opts.Guard != nil && !opts.Guard(info.FullMethod) {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		vals := md.Get(MetadataKey)
		switch {
		case len(vals) == 0 && opts.Optional:
			return handler(ctx, req)
		case len(vals) == 0:
			return nil, status.Errorf(codes.InvalidArgument, "%s metadata is required", MetadataKey)
		case len(vals) > 1:
			return nil, status.Errorf(codes.InvalidArgument, "%s metadata appears %d times", MetadataKey, len(vals))
		}
		key, err := idemhttp.ParseKey(vals[0])
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		scope := ""
		if opts.Scope != nil {
			scope = opts.Scope(ctx)
		}
		fp, err := opts.Fingerprint(ctx, info.FullMethod, req)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "idemgrpc: fingerprint: %v", err)
		}
		var (
			ran        bool
			out        any
			handlerErr error
		)
		res, err := e.DoScoped(ctx, scope, key, fp, func(ctx context.Context) (idem.Response, error) {
			ran = true
			out, handlerErr = handler(ctx, req)
			return outcome(out, handlerErr, opts.StoreCode)
		})
		if ran {
			// The handler ran: its answer goes to the client even if
			// recording it failed (its side effect happened).
			return out, handlerErr
		}
		if errors.Is(err, idem.ErrInvalidKey) {
			return nil, invalidKey(key)
		}
		return answer(ctx, res, err, opts.RetryAfter)
	}
}

// invalidKey is the status of a key the engine refused. The engine's
// error may name the caller's scope and the stored key, which a client must
// never see: the status says what is wrong with the key as the client sent
// it, or only that it is too long once the server's namespace is added.
func invalidKey(key string) error {
	if err := idem.ValidateKey(key); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.InvalidArgument, "idempotency key too long for this caller's namespace; use a shorter key")
}

// outcome turns the handler's answer into the engine function's result.
func outcome(out any, herr error, store func(codes.Code) bool) (idem.Response, error) {
	if herr != nil {
		st := status.Convert(herr)
		resp := idem.Response{Status: int(st.Code()), Header: map[string][]string{headerMessage: {st.Message()}}}
		if !store(st.Code()) {
			return resp, &errRelease{err: herr}
		}
		return resp, idem.Permanent(herr)
	}
	msg, ok := out.(proto.Message)
	if !ok {
		return idem.Response{}, &errRelease{err: fmt.Errorf("idemgrpc: response %T is not a proto message", out)}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return idem.Response{}, &errRelease{err: fmt.Errorf("idemgrpc: marshal response: %w", err)}
	}
	name := string(msg.ProtoReflect().Descriptor().FullName())
	return idem.Response{Status: int(codes.OK), Header: map[string][]string{headerType: {name}}, Body: b}, nil
}

// answer maps the engine's result when the handler did not run.
func answer(ctx context.Context, res idem.Result, err error, retryAfter time.Duration) (any, error) {
	switch {
	case err == nil:
		_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedKey, "true"))
		return replay(res.Response)
	case errors.Is(err, idem.ErrFingerprintMismatch):
		return nil, status.Error(codes.FailedPrecondition,
			"idempotency key already used by a different request (method or message differ); use a new key")
	case errors.Is(err, idem.ErrInProgress):
		st, derr := status.New(codes.Aborted, "a call with this idempotency key is in progress; retry later with the same key").
			WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
		if derr != nil {
			return nil, status.Error(codes.Aborted, "a call with this idempotency key is in progress")
		}
		return nil, st.Err()
	case ctx.Err() != nil:
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return nil, status.Error(codes.Unavailable, "the idempotency store is unavailable; the call was not processed")
}

// replay rebuilds the stored answer: the message, or the stored status.
func replay(r idem.Response) (any, error) {
	if code := codes.Code(r.Status); code != codes.OK {
		return nil, status.Error(code, first(r.Header[headerMessage]))
	}
	name := first(r.Header[headerType])
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "idemgrpc: stored response type %q: %v", name, err)
	}
	msg := mt.New().Interface()
	if err := proto.Unmarshal(r.Body, msg); err != nil {
		return nil, status.Errorf(codes.Internal, "idemgrpc: stored response: %v", err)
	}
	return msg, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func defaultFingerprint(_ context.Context, fullMethod string, req any) (idem.Fingerprint, error) {
	msg, ok := req.(proto.Message)
	if !ok {
		return idem.Fingerprint{}, fmt.Errorf("request %T is not a proto message", req)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return idem.Fingerprint{}, err
	}
	return idem.NewFingerprint([]byte(fullMethod), []byte(msg.ProtoReflect().Descriptor().FullName()), b), nil
}

func defaultStoreCode(c codes.Code) bool {
	switch c {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition, codes.OutOfRange:
		return true
	}
	return false
}
