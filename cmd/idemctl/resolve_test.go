package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestResolve(t *testing.T) { onBackends(t, testResolve) }

// uncertainKey leaves key uncertain on b's store and returns its token.
func uncertainKey(t *testing.T, b backend, key string) idem.Token {
	t.Helper()
	e := idem.New(b.store)
	defer e.Close()
	res, err := e.Do(context.Background(), key, fp, func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 504}, idem.MarkAmbiguous(fmt.Errorf("provider timed out"))
	})
	if !res.Uncertain {
		t.Fatalf("Do: %+v, %v; want an uncertain key", res, err)
	}
	return res.Token
}

func testResolve(t *testing.T, b backend) {
	ctx := context.Background()
	a, n := uncertainKey(t, b, "pay-a"), uncertainKey(t, b, "pay-n")
	resp := `{"status":201,"header":{"Location":["/payments/7"]},"body":"{\"id\":7}"}`
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"inspect shows it", []string{"inspect", "pay-a"}, 0, "status:       uncertain", ""},
		{"list shows both", []string{"list", "--uncertain"}, 0, "2 uncertain keys", ""},
		{"list names the token", []string{"list", "--uncertain"}, 0, fmt.Sprintf("token %d", a), ""},
		{"both modes", []string{"resolve", "pay-a", "--token", fmt.Sprint(a), "--applied", resp, "--not-applied"}, exitUsage, "", "usage: resolve"},
		{"no token", []string{"resolve", "pay-a", "--not-applied"}, exitUsage, "", "usage: resolve"},
		{"bad response", []string{"resolve", "pay-a", "--token", fmt.Sprint(a), "--applied", `{"status":99}`}, exitUsage, "", "not in 200..599"},
		{"wrong token", []string{"resolve", "pay-a", "--token", fmt.Sprint(a + 1), "--not-applied"}, exitRefused, "not uncertain with token", ""},
		{"absent key", []string{"resolve", "nope", "--token", "1", "--not-applied"}, exitNotFound, "", "not found"},
		{"applied", []string{"resolve", "pay-a", "--token", fmt.Sprint(a), "--applied", resp}, 0, "resolved pay-a", `"transition":"resolved"`},
		{"again refused", []string{"resolve", "pay-a", "--token", fmt.Sprint(a), "--not-applied"}, exitRefused, "is completed", ""},
		{"not applied", []string{"resolve", "pay-n", "--token", fmt.Sprint(n), "--not-applied"}, 0, "runs as new", `"transition":"resolved"`},
		{"freed", []string{"inspect", "pay-n"}, exitNotFound, "", "not found"},
		{"list after", []string{"list", "--uncertain"}, 0, "0 uncertain keys", ""},
	}
	for _, tt := range tests {
		code, out, errs := b.ctl(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errs, tt.stderr) {
			t.Errorf("%s: exit %d (want %d)\nstdout (want %q): %s\nstderr (want %q): %s", tt.name, code, tt.code, tt.stdout, out, tt.stderr, errs)
		}
	}
	e := idem.New(b.store)
	defer e.Close()
	ran := false
	res, err := e.Do(ctx, "pay-a", fp, func(context.Context) (idem.Response, error) { ran = true; return idem.Response{Status: 200}, nil })
	if err != nil || ran || !res.Replayed || res.Response.Status != 201 || string(res.Response.Body) != `{"id":7}` ||
		res.Response.Header["Location"][0] != "/payments/7" {
		t.Fatalf("after --applied: %+v, %v, ran %v; want the given response replayed", res, err, ran)
	}
	res, err = e.Do(ctx, "pay-n", fp, func(context.Context) (idem.Response, error) { ran = true; return idem.Response{Status: 200}, nil })
	if err != nil || !ran || res.Token <= n {
		t.Fatalf("after --not-applied: %+v, %v, ran %v; want a new execution above token %d", res, err, ran, n)
	}
	code, out, _ := b.ctl(t, "--json", "stats")
	var st map[string]int64
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("stats --json: %d %v %s", code, err, out)
	}
	if _, ok := st["uncertain"]; !ok {
		t.Fatalf("stats --json lacks uncertain: %s", out)
	}
}
