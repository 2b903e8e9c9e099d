package idemgrpc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemgrpc"
	"github.com/idembench/idembench/internal/testenv"
)

const method = "/idembench.test.Payments/Charge"

// payments is the service: Charge takes a StringValue and answers a Struct
// naming the run. The value picks the behaviour: "notfound",
// "unavailable" and "timeout" fail with NotFound, Unavailable and
// DeadlineExceeded, "block" waits for release.
type payments struct {
	runs    atomic.Int64
	release chan struct{}
	started chan struct{}
}

func (p *payments) charge(_ context.Context, in *wrapperspb.StringValue) (*structpb.Struct, error) {
	n := p.runs.Add(1)
	switch in.GetValue() {
	case "notfound":
		return nil, status.Error(codes.NotFound, "no such card")
	case "unavailable":
		return nil, status.Error(codes.Unavailable, "bank down")
	case "timeout":
		return nil, status.Error(codes.DeadlineExceeded, "bank timed out")
	case "block":
		p.started <- struct{}{}
		<-p.release
	}
	return structpb.NewStruct(map[string]any{"run": float64(n), "value": in.GetValue()})
}

func (p *payments) desc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "idembench.test.Payments",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Charge", Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) { return p.charge(ctx, req.(*wrapperspb.StringValue)) }
			if ic == nil {
				return h(ctx, in)
			}
			return ic(ctx, in, &grpc.UnaryServerInfo{FullMethod: method}, h)
		}}},
	}
}

// serve starts a real gRPC server on loopback with the interceptor on
// store and returns a client connection.
func serve(t *testing.T, store idem.Store, p *payments, opts ...idemgrpc.Options) *grpc.ClientConn {
	t.Helper()
	eng := idem.New(store)
	t.Cleanup(func() { _ = eng.Close() })
	o := idemgrpc.Options{RetryAfter: 3 * time.Second}
	if len(opts) > 0 {
		o = opts[0]
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(idemgrpc.UnaryServerInterceptor(eng, o)))
	srv.RegisterService(p.desc(), p)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// callAs invokes Charge with one key as tenant.
func callAs(conn *grpc.ClientConn, tenant, value, key string) (*structpb.Struct, bool, error) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), idemgrpc.MetadataKey, key, "tenant", tenant)
	out := new(structpb.Struct)
	var hdr metadata.MD
	err := conn.Invoke(ctx, method, wrapperspb.String(value), out, grpc.Header(&hdr))
	return out, strings.Join(hdr.Get(idemgrpc.ReplayedKey), "") == "true", err
}

// call invokes Charge with keys (none, one or several metadata values).
func call(conn *grpc.ClientConn, value string, keys ...string) (*structpb.Struct, bool, error) {
	ctx := context.Background()
	for _, k := range keys {
		ctx = metadata.AppendToOutgoingContext(ctx, idemgrpc.MetadataKey, k)
	}
	out := new(structpb.Struct)
	var hdr metadata.MD
	err := conn.Invoke(ctx, method, wrapperspb.String(value), out, grpc.Header(&hdr))
	return out, strings.Join(hdr.Get(idemgrpc.ReplayedKey), "") == "true", err
}

func stores(t *testing.T) map[string]func(t *testing.T) idem.Store {
	return map[string]func(t *testing.T) idem.Store{
		"memory": func(t *testing.T) idem.Store {
			s := memstore.New(memstore.Options{SweepInterval: -1})
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"redis": func(t *testing.T) idem.Store {
			opt, err := redis.ParseURL(testenv.RedisURL(t))
			if err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(opt)
			prefix := fmt.Sprintf("idemgrpc-test-%x", rand.Uint64())
			t.Cleanup(func() {
				keys, _ := c.Keys(context.Background(), prefix+":*").Result()
				if len(keys) > 0 {
					c.Del(context.Background(), keys...)
				}
				_ = c.Close()
			})
			s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"postgres": func(t *testing.T) idem.Store {
			ctx := context.Background()
			pool, err := pgxpool.New(ctx, testenv.PostgresURL(t))
			if err != nil {
				t.Fatal(err)
			}
			table := fmt.Sprintf("idemgrpc_test_%x", rand.Uint32())
			s, err := pgstore.New(pool, pgstore.Options{Table: table})
			if err == nil {
				err = s.Migrate(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = pool.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %[1]s, %[1]s_fence; DROP SEQUENCE IF EXISTS %[1]s_token_seq", table))
				pool.Close()
			})
			return s
		},
	}
}

// step is one call and what must come back.
type step struct {
	value    string
	keys     []string
	code     codes.Code
	run      float64 // the run the response names (OK answers)
	replayed bool
	runs     int64 // handler runs after the call
}

func TestInterceptor(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"key required", []step{{value: "a", code: codes.InvalidArgument}}},
		{"key repeated", []step{{value: "a", keys: []string{"k", "k"}, code: codes.InvalidArgument}}},
		{"list refused", []step{{value: "a", keys: []string{`"a", "b"`}, code: codes.InvalidArgument}}},
		{"parameters refused", []step{{value: "a", keys: []string{`"a";v=1`}, code: codes.InvalidArgument}}},
		{"space in key", []step{{value: "a", keys: []string{`"a b"`}, code: codes.InvalidArgument}}},
		{"replay, quoted and bare keys alike", []step{
			{value: "a", keys: []string{"k"}, run: 1, runs: 1},
			{value: "a", keys: []string{"k"}, run: 1, replayed: true, runs: 1},
			{value: "a", keys: []string{`"k"`}, run: 1, replayed: true, runs: 1},
		}},
		{"other message is a mismatch", []step{
			{value: "a", keys: []string{"k"}, run: 1, runs: 1},
			{value: "b", keys: []string{"k"}, code: codes.FailedPrecondition, runs: 1},
		}},
		{"stored error replayed", []step{
			{value: "notfound", keys: []string{"k"}, code: codes.NotFound, runs: 1},
			{value: "notfound", keys: []string{"k"}, code: codes.NotFound, replayed: true, runs: 1},
		}},
		{"transient error releases", []step{
			{value: "unavailable", keys: []string{"k"}, code: codes.Unavailable, runs: 1},
			{value: "unavailable", keys: []string{"k"}, code: codes.Unavailable, runs: 2},
		}},
	}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					p := &payments{}
					conn := serve(t, mk(t), p)
					for i, s := range tt.steps {
						out, replayed, err := call(conn, s.value, s.keys...)
						if got := status.Code(err); got != s.code {
							t.Fatalf("step %d: code %v (%v), want %v", i, got, err, s.code)
						}
						if s.code == codes.OK && out.GetFields()["run"].GetNumberValue() != s.run {
							t.Fatalf("step %d: response %v, want run %v", i, out, s.run)
						}
						if replayed != s.replayed {
							t.Fatalf("step %d: replayed %v, want %v", i, replayed, s.replayed)
						}
						if n := p.runs.Load(); n != s.runs {
							t.Fatalf("step %d: %d runs, want %d", i, n, s.runs)
						}
					}
				})
			}
			t.Run("in progress is Aborted with retry info", func(t *testing.T) { testInProgress(t, mk(t)) })
		})
	}
}

func mustStruct(t *testing.T, run float64, value string) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(map[string]any{"run": run, "value": value})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testInProgress holds a call in the handler and checks the concurrent one:
// Aborted with a RetryInfo detail, then a replay once the first finished.
func testInProgress(t *testing.T, store idem.Store) {
	p := &payments{release: make(chan struct{}), started: make(chan struct{}, 1)}
	conn := serve(t, store, p)
	first := make(chan error, 1)
	go func() { _, _, err := call(conn, "block", "k"); first <- err }()
	<-p.started
	_, _, err := call(conn, "block", "k")
	close(p.release)
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
	st := status.Convert(err)
	if st.Code() != codes.Aborted {
		t.Fatalf("concurrent call: %v, want Aborted", err)
	}
	var delay time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			delay = ri.GetRetryDelay().AsDuration()
		}
	}
	if delay != 3*time.Second {
		t.Fatalf("RetryInfo delay %v, want 3s (details %v)", delay, st.Details())
	}
	out, replayed, err := call(conn, "block", "k")
	if err != nil || !replayed || !proto.Equal(out, mustStruct(t, 1, "block")) {
		t.Fatalf("after the first finished: %v replayed=%v %v", out, replayed, err)
	}
}

func TestInterceptorOptions(t *testing.T) {
	tenant := func(ctx context.Context) string {
		md, _ := metadata.FromIncomingContext(ctx)
		return strings.Join(md.Get("tenant"), "")
	}
	tests := []struct {
		name  string
		opts  idemgrpc.Options
		calls [][2]string // tenant, key
		runs  []int64     // handler runs after each call
	}{
		{"optional key passes through", idemgrpc.Options{Optional: true},
			[][2]string{{"", ""}, {"", ""}, {"", "k"}, {"", "k"}}, []int64{1, 2, 3, 3}},
		{"unguarded method passes through", idemgrpc.Options{Guard: func(m string) bool { return m != method }},
			[][2]string{{"", "k"}, {"", "k"}}, []int64{1, 2}},
		{"scopes keep tenants apart", idemgrpc.Options{Scope: tenant},
			[][2]string{{"acme", "k"}, {"globex", "k"}, {"acme", "k"}, {"globex", "k"}}, []int64{1, 2, 2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &payments{}
			store := memstore.New(memstore.Options{SweepInterval: -1})
			t.Cleanup(func() { _ = store.Close() })
			conn := serve(t, store, p, tt.opts)
			for i, c := range tt.calls {
				var err error
				if c[1] == "" {
					_, _, err = call(conn, "a")
				} else {
					_, _, err = callAs(conn, c[0], "a", c[1])
				}
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if n := p.runs.Load(); n != tt.runs[i] {
					t.Fatalf("call %d: %d runs, want %d", i, n, tt.runs[i])
				}
			}
		})
	}
}

// TestInvalidKeyHidesTheScope: a key the engine refuses once the caller's
// scope is added must not reveal the scope or the stored key (before, the
// status carried `(scoped "internal-acct-98765:kkk…")`), and a key that is
// invalid by itself is still explained.
func TestInvalidKeyHidesTheScope(t *testing.T) {
	const scope = "internal-acct-98765"
	store := memstore.New(memstore.Options{SweepInterval: -1})
	t.Cleanup(func() { _ = store.Close() })
	p := &payments{}
	conn := serve(t, store, p, idemgrpc.Options{Scope: func(ctx context.Context) string {
		md, _ := metadata.FromIncomingContext(ctx)
		return strings.Join(md.Get("tenant"), "")
	}})
	_, _, err := callAs(conn, scope, "a", strings.Repeat("k", idem.MaxKeyLen-5))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("long key under a scope: %v, want InvalidArgument", err)
	}
	if msg := status.Convert(err).Message(); strings.Contains(msg, scope) || strings.Contains(msg, "kkkk") {
		t.Fatalf("status %q reveals the scope or the stored key", msg)
	}
	_, _, err = callAs(conn, scope, "a", strings.Repeat("k", idem.MaxKeyLen+1))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "limit 255") {
		t.Fatalf("key too long by itself: %v", err)
	}
	if strings.Contains(status.Convert(err).Message(), scope) {
		t.Fatalf("status %q reveals the scope", status.Convert(err).Message())
	}
	if p.runs.Load() != 0 {
		t.Fatalf("%d runs, want none", p.runs.Load())
	}
}
