package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// TestIdemctlCorruptRecords is issue #23 item 7 on each store: stats
// counts a corrupt in-progress record as corrupt (not in progress),
// inspect shows a corrupt record's raw fields and digest (exit 4, where it
// used to exit 5 with the decode error alone), list --corrupt finds the
// corrupt keys, and purge-corrupt deletes one only with the digest of its
// current content, never a record that decodes.
func TestIdemctlCorruptRecords(t *testing.T) { onBackends(t, testCorruptRecords) }

// corruption is how a test breaks a record on one backend.
type corruption struct {
	inProgress []string // an in-progress record that no longer decodes
	again      []string // the same record, broken differently
	binary     []string // a completed record with binary garbage
	binaryShow string   // what inspect shows of the garbage
}

var corruptions = map[string]corruption{
	"redis": {
		inProgress: []string{"HSET", "token", "abc"},
		again:      []string{"HSET", "token", "abd"},
		binary:     []string{"SET", "\x00\xffjunk"},
		binaryShow: `0x00ff6a756e6b (6 bytes)`,
	},
	"postgres": {
		inProgress: []string{"token = 0"},
		again:      []string{"token = -1"},
		binary:     []string{`response = '\xdeadbeef'`},
		binaryShow: `0xdeadbeef (4 bytes)`,
	},
}

func testCorruptRecords(t *testing.T, b backend) {
	ctx := context.Background()
	c := corruptions[b.name]
	for _, key := range []string{"bad", "acme:t"} {
		if _, _, err := b.store.Acquire(ctx, key, fp, time.Hour); err != nil {
			t.Fatal(err)
		}
		b.raw(t, key, c.inProgress...)
	}
	if _, _, err := b.store.Acquire(ctx, "good", fp, time.Hour); err != nil {
		t.Fatal(err)
	}
	l, _, err := b.store.Acquire(ctx, "bin", fp, time.Hour)
	if err == nil {
		err = b.store.Complete(ctx, l, resp201, time.Hour)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.raw(t, "bin", c.binary...)

	digest := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errs := b.ctl(t, append([]string{"--json"}, args...)...)
		var j corruptJSON
		if err := json.Unmarshal([]byte(out), &j); code != exitCorrupt || err != nil || !j.Corrupt || j.Digest == "" {
			t.Fatalf("%v: exit %d, %v\nstdout: %s\nstderr: %s", args, code, err, out, errs)
		}
		return j.Digest
	}
	seen := digest(t, "inspect", "bad")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"stats", []string{"stats"}, 0, []string{"in_progress 1 (stuck 0)", "completed   0", "corrupt     3"}},
		{"inspect corrupt", []string{"inspect", "bad"}, exitCorrupt, []string{
			"key:          bad\ncorrupt:      ", "fields:\n", "digest:       " + seen,
			"purge-corrupt bad --confirm " + seen}},
		{"inspect binary garbage", []string{"inspect", "bin"}, exitCorrupt, []string{c.binaryShow}},
		{"inspect scoped corrupt", []string{"--scope", "acme", "inspect", "t"}, exitCorrupt, []string{
			"scope:        acme", "--scope acme purge-corrupt t --confirm"}},
		{"release corrupt", []string{"release", "bad", "--token", "1"}, exitCorrupt, nil},
		{"list corrupt", []string{"list", "--corrupt"}, 0, []string{
			"3 corrupt records\n", "bad\tdigest " + seen + "\t", "t\tscope acme\tdigest ", "bin\tdigest "}},
		{"list corrupt of a scope", []string{"--scope", "acme", "list", "--corrupt"}, 0, []string{"1 corrupt records\nt\tscope acme"}},
		{"list corrupt limit", []string{"list", "--corrupt", "--limit", "1"}, 0, []string{"1 corrupt records\n"}},
		{"purge without digest", []string{"purge-corrupt", "bad"}, exitUsage, nil},
		{"purge a valid record", []string{"purge-corrupt", "good", "--confirm", seen}, exitNotCorrupt, []string{"refused: the record of good decodes"}},
		{"valid record kept", []string{"inspect", "good"}, 0, []string{"live: a holder is executing"}},
		{"purge with a wrong digest", []string{"purge-corrupt", "bad", "--confirm", "0123"}, exitRefused, []string{"no longer has digest 0123"}},
		{"corrupt record kept", []string{"inspect", "bad"}, exitCorrupt, nil},
		{"purge of a missing key", []string{"purge-corrupt", "nope", "--confirm", seen}, exitNotFound, nil},
	}
	for _, tt := range tests {
		b.check(t, tt.name, tt.args, tt.code, tt.stdout, "")
	}

	// The record changes after the operator looked: the old digest no
	// longer deletes it; the new one does.
	b.raw(t, "bad", c.again...)
	if code, out, errs := b.ctl(t, "purge-corrupt", "bad", "--confirm", seen); code != exitRefused || errs != "" {
		t.Fatalf("purge with the digest of an older content: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	now := digest(t, "inspect", "bad")
	if now == seen {
		t.Fatal("the digest did not change with the record")
	}
	if code, out, errs := b.ctl(t, "purge-corrupt", "bad", "--confirm", now); code != 0 || !strings.Contains(out, "deleted the corrupt record of bad") {
		t.Fatalf("purge-corrupt: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, _, _ := b.ctl(t, "inspect", "bad"); code != exitNotFound {
		t.Fatalf("inspect after purge: exit %d", code)
	}
	scoped := digest(t, "--scope", "acme", "inspect", "t")
	if code, out, errs := b.ctl(t, "--json", "--scope", "acme", "purge-corrupt", "t", "--confirm", scoped); code != 0 || !strings.Contains(out, `"purged": true`) {
		t.Fatalf("purge-corrupt --scope: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, out, _ := b.ctl(t, "stats"); code != 0 || !strings.Contains(out, "corrupt     1") {
		t.Fatalf("stats after purges: exit %d\n%s", code, out)
	}
}

var resp201 = idem.Response{Status: 201, Body: []byte("ok")}
