package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/backends/redisstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

var fp = idem.FingerprintString("POST", "/pay", "x")

// backend is a store under test and the global flags that reach it.
type backend struct {
	name  string
	store idem.Store
	flags []string
	// raw rewrites the stored record of a stored key behind the store's
	// back: on Redis the Redis command args (the record name is appended
	// after the command name), on PostgreSQL an SQL SET list.
	raw func(t *testing.T, stored string, edit ...string)
}

func redisBackend(t *testing.T) backend {
	url := testenv.RedisURL(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	prefix := fmt.Sprintf("idemctl-test-%x", rand.Uint64())
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := client.Keys(ctx, prefix+":*").Result()
		if len(keys) > 0 {
			client.Del(ctx, keys...)
		}
		_ = client.Close()
	})
	s, err := redisstore.New(client, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	raw := func(t *testing.T, stored string, edit ...string) {
		t.Helper()
		args := []any{edit[0], prefix + ":{" + stored + "}"}
		for _, a := range edit[1:] {
			args = append(args, a)
		}
		if err := client.Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	return backend{"redis", s, []string{"--store", url, "--prefix", prefix}, raw}
}

func postgresBackend(t *testing.T) backend {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("idemctl_test_%x", rand.Uint32())
	s, err := pgstore.New(pool, pgstore.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %[1]s, %[1]s_fence; DROP SEQUENCE IF EXISTS %[1]s_token_seq", table))
		pool.Close()
	})
	raw := func(t *testing.T, stored string, edit ...string) {
		t.Helper()
		tag, err := pool.Exec(ctx, "UPDATE "+table+" SET "+edit[0]+" WHERE key = $1", stored)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("UPDATE %s SET %s: %v (%d rows)", stored, edit[0], err, tag.RowsAffected())
		}
	}
	return backend{"postgres", s, []string{"--store", url, "--table", table}, raw}
}

// ctl runs idemctl with the backend's flags and returns exit code, stdout
// and stderr.
func (b backend) ctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append(append([]string{}, b.flags...), args...), &out, &errb)
	return code, out.String(), errb.String()
}

// check runs idemctl with args on b and checks its exit code, that
// stdout holds each of stdout and stderr holds stderr, and that a refusal
// is printed once, on stdout; name names the call in the errors.
func (b backend) check(t *testing.T, name string, args []string, code int, stdout []string, stderr string) {
	t.Helper()
	got, out, errs := b.ctl(t, args...)
	if got != code {
		t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", name, got, code, out, errs)
		return
	}
	for _, want := range stdout {
		if !strings.Contains(out, want) {
			t.Errorf("%s: stdout lacks %q:\n%s", name, want, out)
		}
	}
	if !strings.Contains(errs, stderr) {
		t.Errorf("%s: stderr lacks %q: %s", name, stderr, errs)
	}
	if got == exitRefused && (errs != "" || strings.Count(out, "refused") != 1) {
		t.Errorf("%s: a refusal must be printed once, on stdout:\nstdout: %s\nstderr: %s", name, out, errs)
	}
}

// onBackends runs test on a Redis and a PostgreSQL store, a subtest each.
func onBackends(t *testing.T, test func(*testing.T, backend)) {
	for _, mk := range []func(*testing.T) backend{redisBackend, postgresBackend} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

func TestIdemctl(t *testing.T) { onBackends(t, testIdemctl) }

func testIdemctl(t *testing.T, b backend) {
	ctx := context.Background()
	st := b.store
	done, _, err := st.Acquire(ctx, "done", fp, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Complete(ctx, done, idem.Response{Status: 201, Body: []byte(`{"id":1}`)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	stuck, _, err := st.Acquire(ctx, "stuck", fp, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := st.Acquire(ctx, "acme:live", fp, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings
		stderr string
	}{
		{"inspect completed", []string{"inspect", "done"}, 0, []string{"status:       completed", fmt.Sprintf("token:        %d", done.Token), "status 201, 8 bytes", fp.String()}, ""},
		{"inspect stuck", []string{"inspect", "stuck"}, 0, []string{"in_progress", "ago), expired: stuck"}, ""},
		{"inspect with scope", []string{"--scope", "acme", "inspect", "live"}, 0, []string{"live: a holder is executing"}, ""},
		{"inspect missing", []string{"inspect", "nope"}, exitNotFound, nil, "not found"},
		{"list stuck", []string{"list", "--stuck"}, 0, []string{"1 stuck keys", "stuck\ttoken " + fmt.Sprint(stuck.Token)}, ""},
		{"list stuck older than an hour", []string{"list", "--stuck", "--older-than", "1h"}, 0, []string{"0 stuck keys"}, ""},
		{"stats", []string{"stats"}, 0, []string{"in_progress 2 (stuck 1)", "completed   1", "failed      0"}, ""},
		{"release moved token", []string{"release", "stuck", "--token", fmt.Sprint(stuck.Token + 1000)}, exitRefused, []string{"refused: the token moved"}, ""},
		{"release completed key", []string{"release", "done", "--token", fmt.Sprint(done.Token)}, exitRefused, []string{"is completed"}, ""},
		{"release live lease", []string{"--scope", "acme", "release", "live", "--token", fmt.Sprint(live.Token)}, exitRefused, []string{"is live", "--force"}, ""},
		{"release of a tenant's key without --scope", []string{"release", "acme:live", "--token", fmt.Sprint(live.Token)}, exitNotFound, nil, "not found"},
		{"release stuck", []string{"release", "stuck", "--token", fmt.Sprint(stuck.Token)}, 0, []string{"released stuck"}, ""},
		{"released key is gone", []string{"inspect", "stuck"}, exitNotFound, nil, "not found"},
		{"release again refused", []string{"release", "stuck", "--token", fmt.Sprint(stuck.Token)}, exitNotFound, nil, "not found"},
		{"force release live", []string{"--scope", "acme", "release", "--force", "live", "--token", fmt.Sprint(live.Token)}, 0, []string{"released live (scope acme)"}, ""},
		{"purge", []string{"purge", "--expired"}, 0, nil, ""},
		{"usage", []string{"release", "done"}, exitUsage, nil, "usage: release"},
		{"unknown command", []string{"frob"}, exitUsage, nil, "unknown command"},
	}
	for _, tt := range tests {
		b.check(t, tt.name, tt.args, tt.code, tt.stdout, tt.stderr)
	}

	testIdemctlJSON(t, b, done, live)
}

// testIdemctlJSON checks the --json outputs, the refusal of a token a
// retry took over, and that a force-released holder's write is fenced out.
func testIdemctlJSON(t *testing.T, b backend, done, live *idem.Lease) {
	ctx := context.Background()
	st := b.store
	code, out, _ := b.ctl(t, "--json", "inspect", "done")
	var rec recordJSON
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || rec.Token != done.Token || rec.Status != "completed" || rec.ResponseStatus != 201 {
		t.Fatalf("inspect --json: %d %v %+v", code, err, rec)
	}
	if err := st.Complete(ctx, live, idem.Response{Status: 201}, time.Hour); err == nil {
		t.Fatal("the force-released holder's Complete was accepted")
	}
	again, _, err := st.Acquire(ctx, "again", fp, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, _, err := st.Acquire(ctx, "again", fp, time.Hour); err != nil { // a retry takes it over
		t.Fatal(err)
	}
	code, out, _ = b.ctl(t, "--json", "release", "again", "--token", fmt.Sprint(again.Token))
	var rel releaseJSON
	if err := json.Unmarshal([]byte(out), &rel); code != exitRefused || err != nil || rel.Released || rel.Current == nil || *rel.Current <= again.Token {
		t.Fatalf("release of a taken-over token --json: exit %d %v %+v", code, err, rel)
	}
	code, out, _ = b.ctl(t, "--json", "stats")
	var sts map[string]int64
	if err := json.Unmarshal([]byte(out), &sts); code != 0 || err != nil || sts["completed"] != 1 || sts["in_progress"] != 1 || sts["bytes"] <= 0 {
		t.Fatalf("stats --json: %d %v %v", code, err, sts)
	}
}
