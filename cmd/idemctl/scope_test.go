package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/idem"
)

// TestIdemctlKeysAreClientKeys is issue #23 item 5: without --scope,
// idemctl took its key argument as the stored key, so "inspect A:k1"
// showed tenant A's record k1 instead of the unscoped client's key "A:k1"
// (stored ":A:k1"), and "release A:k2 --token N" released tenant A's k2.
// Every key argument now goes through idem.StorageKey as the engine's.
func TestIdemctlKeysAreClientKeys(t *testing.T) { onBackends(t, testKeysAreClientKeys) }

func testKeysAreClientKeys(t *testing.T, b backend) {
	ctx := context.Background()
	tenant, open := idem.New(b.store, idem.WithScope("A")), idem.New(b.store)
	answer := func(body string) idem.Func {
		return func(context.Context) (idem.Response, error) {
			return idem.Response{Status: 201, Body: []byte(body)}, nil
		}
	}
	if _, err := tenant.Do(ctx, "k1", fp, answer("tenant A")); err != nil {
		t.Fatal(err)
	}
	if _, err := open.Do(ctx, "A:k1", fp, answer("the unscoped client")); err != nil {
		t.Fatal(err)
	}
	tenantRec, err := b.store.Get(ctx, "A:k1")
	if err != nil {
		t.Fatal(err)
	}
	openRec, err := b.store.Get(ctx, ":A:k1")
	if err != nil {
		t.Fatal(err)
	}
	// Tenant A's in-progress key k2, stuck; the unscoped "A:k2" is absent.
	stuck, _, err := b.store.Acquire(ctx, "A:k2", fp, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"unscoped key with ':'", []string{"inspect", "A:k1"}, 0, []string{
			"key:          A:k1\nstored key:   :A:k1\n",
			fmt.Sprintf("token:        %d\n", openRec.Token),
			fmt.Sprintf("status 201, %d bytes", openRec.Response.Size()),
		}},
		{"tenant's key with --scope", []string{"--scope", "A", "inspect", "k1"}, 0, []string{
			"key:          k1\nscope:        A\nstored key:   A:k1\n",
			fmt.Sprintf("token:        %d\n", tenantRec.Token),
		}},
		{"stored form is a key of its own", []string{"inspect", ":A:k1"}, exitNotFound, nil},
		{"release cannot reach the tenant", []string{"release", "A:k2", "--token", fmt.Sprint(stuck.Token)}, exitNotFound, nil},
		{"list shows the scope", []string{"list", "--stuck"}, 0, []string{fmt.Sprintf("k2\tscope A\ttoken %d\t", stuck.Token)}},
		{"list of one scope", []string{"--scope", "A", "list", "--stuck"}, 0, []string{"1 stuck keys\nk2\tscope A"}},
		{"list of another scope", []string{"--scope", "B", "list", "--stuck"}, 0, []string{"0 stuck keys"}},
		{"release with --scope", []string{"--scope", "A", "release", "k2", "--token", fmt.Sprint(stuck.Token)}, 0, []string{"released k2 (scope A)"}},
	}
	for _, tt := range tests {
		b.check(t, tt.name, tt.args, tt.code, tt.stdout, "")
		if tt.name == "release cannot reach the tenant" {
			if rec, err := b.store.Get(ctx, "A:k2"); err != nil || rec.Token != stuck.Token {
				t.Errorf("tenant A's k2 after an unscoped release: %+v, %v", rec, err)
			}
		}
	}

	code, out, _ := b.ctl(t, "--json", "inspect", "A:k1")
	var rec recordJSON
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil {
		t.Fatalf("inspect --json: exit %d, %v: %s", code, err, out)
	}
	if diff := cmp.Diff(keyName{Key: "A:k1", Stored: ":A:k1"}, rec.keyName); diff != "" || rec.Token != openRec.Token {
		t.Errorf("inspect --json names (-want +got):\n%s\ntoken %d, want %d", diff, rec.Token, openRec.Token)
	}
}

func TestNameOfInvertsStorageKey(t *testing.T) {
	tests := []struct {
		key    string
		scopes []string
		scope  string
	}{
		{"k1", nil, ""},
		{"a:k1", nil, ""},
		{":", nil, ""},
		{"k1", []string{"a"}, "a"},
		{"b:k1", []string{"a"}, "a"},
		{"k1", []string{"a", "b"}, "a:b"},
		{"::x:", []string{"svc", "acme"}, "svc:acme"},
	}
	for _, tt := range tests {
		stored, err := idem.StorageKey(tt.key, tt.scopes...)
		if err != nil {
			t.Fatal(err)
		}
		want := keyName{Key: tt.key, Scope: tt.scope, Stored: stored}
		if diff := cmp.Diff(want, nameOf(stored)); diff != "" {
			t.Errorf("nameOf(%q) (-want +got):\n%s", stored, diff)
		}
		scopes, err := parseScope(tt.scope)
		if err != nil || !cmp.Equal(scopes, tt.scopes) {
			t.Errorf("parseScope(%q) = %q, %v", tt.scope, scopes, err)
		}
	}
	for _, bad := range []string{"a::b", ":a", "a:"} {
		if _, err := parseScope(bad); err == nil {
			t.Errorf("parseScope(%q) accepted", bad)
		}
	}
}
