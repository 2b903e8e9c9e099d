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
//	FailedPrecondition  the key was used with a different request (method or
//	                    message); ErrorInfo reason FINGERPRINT_MISMATCH
//	FailedPrecondition  the key's outcome is uncertain (idem.ErrUncertain): it
//	                    may or may not have been processed and will not be
//	                    again until an operator resolves it; ErrorInfo reason
//	                    OPERATION_UNCERTAIN with metadata safe_new_key=false
//	FailedPrecondition  the key was stored under a fingerprint policy the
//	                    server no longer knows (idem.ErrPolicyChanged);
//	                    ErrorInfo reason POLICY_CHANGED, safe_new_key=false
//	Aborted             a call with this key is in progress; carries a RetryInfo
//	                    detail with Options.RetryAfter
//	Unavailable         the idempotency store failed; the handler did not run
//
// The ErrorInfo details have domain ErrorDomain; clients tell the three
// FailedPrecondition answers apart by their reason.
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

// ErrorDomain is the domain of the interceptor's ErrorInfo details, and
// the ErrorInfo reasons it sends.
const (
	ErrorDomain               = "idembench.idemgrpc"
	ReasonFingerprintMismatch = "FINGERPRINT_MISMATCH"
	ReasonOperationUncertain  = "OPERATION_UNCERTAIN"
	ReasonPolicyChanged       = "POLICY_CHANGED"
)

// FingerprintFunc computes the fingerprint of a call (Options.Fingerprint).
type FingerprintFunc = func(ctx context.Context, fullMethod string, req any) (idem.Fingerprint, error)

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
	Fingerprint FingerprintFunc
	// FingerprintPolicy is the id of Fingerprint's policy (its
	// FingerprintPolicy.Policy, "payments/v2"), stored with each new record
	// on a store that keeps ids (idem.PolicyStore), so that a call is
	// compared with a key under the policy the key was stored with. It
	// must satisfy idem.ValidatePolicy (UnaryServerInterceptor panics
	// otherwise). Empty means not named.
	FingerprintPolicy string
	// PriorPolicies are the fingerprint policies used before, by id: a
	// call whose key is stored under one of them is compared under it (the
	// same call replays, another gets FailedPrecondition
	// FINGERPRINT_MISMATCH); a key stored under an id neither current nor
	// listed gets FailedPrecondition POLICY_CHANGED. Nil means none.
	PriorPolicies map[string]FingerprintFunc
	// UncertainCode, when set, names the handler's error codes that mean
	// the handler cannot tell whether its effect happened (a
	// DeadlineExceeded from a payment provider, say). Such an error is not
	// stored: the key is recorded uncertain (idem.ErrUncertain; on a store
	// without idem.UncertainStore it stays in progress for a take-over
	// instead), and this call and every later one get FailedPrecondition
	// OPERATION_UNCERTAIN until an operator resolves the key (idemctl
	// resolve). It is asked before StoreCode. Nil means no code is
	// uncertain.
	UncertainCode func(codes.Code) bool
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
	if err := idem.ValidatePolicy(opts.FingerprintPolicy); err != nil {
		panic("idemgrpc: Options.FingerprintPolicy: " + err.Error())
	}
	for id := range opts.PriorPolicies {
		if err := idem.ValidatePolicy(id); err != nil || id == "" {
			panic(fmt.Sprintf("idemgrpc: Options.PriorPolicies: id %q: a valid, non-empty policy id is required (%v)", id, err))
		}
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
		claim := idem.Claim{Fingerprint: fp, Policy: opts.FingerprintPolicy}
		if opts.PriorPolicies != nil {
			claim.Prior = func(id string, stored idem.Fingerprint) (known, same bool) {
				f, ok := opts.PriorPolicies[id]
				if !ok {
					return false, false
				}
				pfp, err := f(ctx, info.FullMethod, req)
				if err != nil {
					return false, false // cannot compare: policy_changed, never a guessed mismatch
				}
				return true, pfp == stored
			}
		}
		res, err := e.DoClaim(ctx, scope, key, claim, func(ctx context.Context) (idem.Response, error) {
			ran = true
			out, handlerErr = handler(ctx, req)
			return outcome(out, handlerErr, opts.StoreCode, opts.UncertainCode)
		})
		if ran && errors.Is(err, idem.ErrUncertain) {
			return nil, uncertainStatus()
		}
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
func outcome(out any, herr error, store, uncertain func(codes.Code) bool) (idem.Response, error) {
	if herr != nil {
		st := status.Convert(herr)
		resp := idem.Response{Status: int(st.Code()), Header: map[string][]string{headerMessage: {st.Message()}}}
		if uncertain != nil && uncertain(st.Code()) {
			return resp, idem.MarkAmbiguous(herr)
		}
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
		return nil, withInfo(codes.FailedPrecondition, ReasonFingerprintMismatch, nil,
			"idempotency key already used by a different request (method or message differ); use a new key")
	case errors.Is(err, idem.ErrUncertain):
		return nil, uncertainStatus()
	case errors.Is(err, idem.ErrPolicyChanged):
		return nil, withInfo(codes.FailedPrecondition, ReasonPolicyChanged, map[string]string{"safe_new_key": "false"},
			"idempotency key stored under a fingerprint policy the server no longer knows; the call cannot be compared "+
				"with the one that used the key and was not processed; the key cannot be used until it expires")
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

// uncertainStatus is the answer for a key whose outcome is uncertain.
func uncertainStatus() error {
	return withInfo(codes.FailedPrecondition, ReasonOperationUncertain, map[string]string{"safe_new_key": "false"},
		"the call with this idempotency key may or may not have been processed; it will not be processed again "+
			"until the operator resolves it, and a call with a new key may be processed twice")
}

// withInfo returns a status with code and msg and an ErrorInfo detail of
// ErrorDomain with reason and meta.
func withInfo(code codes.Code, reason string, meta map[string]string, msg string) error {
	st, err := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: meta})
	if err != nil {
		return status.Error(code, msg)
	}
	return st.Err()
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
