package netfault

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
)

// redisPair returns a client that talks to the test Redis directly, a proxy
// in front of that Redis, and a client that talks through the proxy. The
// proxied client never retries and times out after readTimeout, so each
// command's outcome is what the fault made of it.
func redisPair(t *testing.T, readTimeout time.Duration) (direct *redis.Client, p *Proxy, proxied *redis.Client) {
	t.Helper()
	opts, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	direct = redis.NewClient(opts)
	t.Cleanup(func() { direct.Close() })
	p = newProxy(t, opts.Addr, Options{})
	popts := *opts
	popts.Addr = p.Addr()
	popts.MaxRetries = -1
	popts.DialTimeout = readTimeout
	popts.ReadTimeout = readTimeout
	popts.WriteTimeout = readTimeout
	popts.PoolSize = 1
	popts.Protocol = 2 // no HELLO: each command is one round trip
	popts.DisableIdentity = true
	popts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	proxied = redis.NewClient(&popts)
	t.Cleanup(func() { proxied.Close() }) // before the proxy's Close (LIFO)
	if err := proxied.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING through the proxy: %v", err)
	}
	return direct, p, proxied
}

// redisKey returns a fresh key that is deleted when the test ends.
func redisKey(t *testing.T, direct *redis.Client) string {
	t.Helper()
	k := uniqueName("netfault:test:" + t.Name())
	t.Cleanup(func() { direct.Del(context.Background(), k) })
	return k
}

// redisKeyOf returns a fresh key (redisKey) that holds v.
func redisKeyOf(t *testing.T, direct *redis.Client, v any) string {
	t.Helper()
	k := redisKey(t, direct)
	if err := direct.Set(t.Context(), k, v, 0).Err(); err != nil {
		t.Fatal(err)
	}
	return k
}

// healThenIncr heals p and checks that INCR of k through it gives want.
func healThenIncr(t *testing.T, p *Proxy, proxied *redis.Client, k string, want int64) {
	t.Helper()
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if got, err := proxied.Incr(t.Context(), k).Result(); err != nil || got != want {
		t.Errorf("INCR after Heal = %d, %v; want %d", got, err, want)
	}
}

func TestRedisLatency(t *testing.T) {
	_, p, proxied := redisPair(t, 2*time.Second)
	ctx := t.Context()
	if err := p.Latency(300*time.Millisecond, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := proxied.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 280*time.Millisecond {
		t.Errorf("PING with 300ms±20ms latency took %s", d)
	}
	if err := p.Off(history.FaultLatency); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := proxied.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("PING after the latency ended took %s", d)
	}
}

func TestRedisResetFailsCommands(t *testing.T) {
	direct, p, proxied := redisPair(t, 2*time.Second)
	ctx := t.Context()
	k := redisKey(t, direct)
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the pooled connection, then a new one
		start := time.Now()
		err := proxied.Set(ctx, k, "v", 0).Err()
		if err == nil || isTimeout(err) {
			t.Errorf("SET %d during a reset = %v, want a connection error", i, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("SET %d during a reset took %s to fail", i, d)
		}
	}
	if n, err := direct.Exists(ctx, k).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s = %d, %v; a reset request must not reach the server", k, n, err)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := proxied.Set(ctx, k, "v", 0).Err(); err != nil {
		t.Errorf("SET after Heal: %v", err)
	}
}

// TestRedisDropRepliesIsAmbiguous is the ambiguous case: the client times
// out on INCR, yet the server applied it.
func TestRedisDropRepliesIsAmbiguous(t *testing.T) {
	direct, p, proxied := redisPair(t, 300*time.Millisecond)
	ctx := t.Context()
	k := redisKeyOf(t, direct, 0)
	if err := p.DropRepliesAfterApply(); err != nil {
		t.Fatal(err)
	}
	err := proxied.Incr(ctx, k).Err()
	if !isTimeout(err) {
		t.Fatalf("INCR with replies dropped = %v, want a time-out", err)
	}
	if got, err := direct.Get(ctx, k).Int(); err != nil || got != 1 {
		t.Fatalf("GET %s directly = %d, %v; want 1: the timed-out INCR was applied", k, got, err)
	}
	healThenIncr(t, p, proxied, k, 2)
}

func TestRedisPartitionBlocks(t *testing.T) {
	direct, p, proxied := redisPair(t, 300*time.Millisecond)
	ctx := t.Context()
	k := redisKeyOf(t, direct, 0)
	if err := p.Partition(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the pooled connection, then a new one
		if err := proxied.Incr(ctx, k).Err(); !isTimeout(err) {
			t.Errorf("INCR %d across a partition = %v, want a time-out", i, err)
		}
	}
	if got, err := direct.Get(ctx, k).Int(); err != nil || got != 0 {
		t.Errorf("GET %s directly = %d, %v; want 0: nothing crosses a partition", k, got, err)
	}
	healThenIncr(t, p, proxied, k, 1)
}

func TestRedisHealRemovesEverything(t *testing.T) {
	_, p, proxied := redisPair(t, 300*time.Millisecond)
	ctx := t.Context()
	if err := p.Latency(time.Second, 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{p.Reset, p.DropRepliesAfterApply, p.Partition} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(p.Active()); got != len(Kinds) {
		t.Fatalf("Active() = %v, want every kind", p.Active())
	}
	if err := proxied.Ping(ctx).Err(); err == nil {
		t.Error("PING with every fault on succeeded")
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if len(p.Active()) != 0 {
		t.Errorf("Active() after Heal = %v", p.Active())
	}
	for _, w := range p.Windows() {
		if w.Return == history.NoReturn {
			t.Errorf("window %+v still open after Heal", w)
		}
	}
	start := time.Now()
	if err := proxied.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Heal: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("PING after Heal took %s (the 1s latency is still on?)", d)
	}
}

// TestRedisLatencyAbandonedReplies: pipelined replies that the client gives
// up on while they are delayed must not stall Heal or break the proxy.
func TestRedisLatencyAbandonedReplies(t *testing.T) {
	direct, p, proxied := redisPair(t, 50*time.Millisecond)
	ctx := t.Context()
	k := redisKeyOf(t, direct, strings.Repeat("x", 200_000))
	if err := p.Latency(30*time.Millisecond, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	timeouts := 0
	for range 10 {
		pipe := proxied.Pipeline()
		for range 20 {
			pipe.Get(ctx, k)
		}
		if _, err := pipe.Exec(ctx); isTimeout(err) {
			timeouts++
		}
	}
	if timeouts == 0 {
		t.Fatal("no pipeline timed out: the test did not abandon any reply")
	}
	start := time.Now()
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Heal took %s", d)
	}
	if err := proxied.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after Heal: %v", err)
	}
}
