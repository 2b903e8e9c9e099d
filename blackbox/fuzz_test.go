package blackbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/idem/idemhttp"
)

// canon returns the canonical form of b (members sorted, whitespace
// removed, number literals kept), failing the test when b is not JSON.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	c, err := idemhttp.CanonicalJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return string(c)
}

// values decodes b into plain Go values, numbers as float64.
func values(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

var fuzzBodies = []string{
	`{"amount": 1200, "currency": "EUR"}`,
	`{"a":{"x":1,"y":[true,null,"s<>&"]},"b":2.5,"c":"\u00e9"}`,
	`[{"k":1,"j":2},3]`,
}

func TestFuzzJSONEquivalentVariantsKeepTheValue(t *testing.T) {
	for _, body := range fuzzBodies {
		n, err := parseJSON([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		if got := string(n.text(compactStyle)); canon(t, []byte(got)) != canon(t, []byte(body)) {
			t.Errorf("compact %s: canonical form differs from %s", got, body)
		}
		spaced := n.text(spacedStyle)
		if string(spaced) == body || canon(t, spaced) != canon(t, []byte(body)) {
			t.Errorf("spaced %q: not another layout of %s", spaced, body)
		}
		r := n.clone()
		if !r.reorder(rng) {
			t.Fatalf("%s: nothing reordered", body)
		}
		reordered := r.text(compactStyle)
		if string(reordered) == string(n.text(compactStyle)) || canon(t, reordered) != canon(t, []byte(body)) {
			t.Errorf("reordered %s: not a reordering of %s", reordered, body)
		}
		num := n.clone()
		if !num.renumber(rng) {
			t.Fatalf("%s: no number rewritten", body)
		}
		renumbered := num.text(compactStyle)
		if canon(t, renumbered) == canon(t, []byte(body)) {
			t.Errorf("renumbered %s: same literals as %s", renumbered, body)
		}
		if diff := cmp.Diff(values(t, []byte(body)), values(t, renumbered)); diff != "" {
			t.Errorf("renumbered %s changed a value (-want +got):\n%s", renumbered, diff)
		}
	}
}

func TestFuzzJSONFieldChangedChangesTheValue(t *testing.T) {
	for _, body := range fuzzBodies {
		n, _ := parseJSON([]byte(body))
		leaves, paths := n.clone().leaves()
		for i := range leaves {
			c := n.clone()
			l, _ := c.leaves()
			l[i].change()
			if cmp.Equal(values(t, []byte(body)), values(t, c.text(compactStyle))) {
				t.Errorf("%s: changing %s left the value as it was: %s", body, paths[i], c.text(compactStyle))
			}
		}
		if len(leaves) == 0 {
			t.Errorf("%s: no leaves", body)
		}
		retyped := 0
		for i := range leaves {
			c := n.clone()
			l, _ := c.leaves()
			if !l[i].retype() {
				continue
			}
			retyped++
			if cmp.Equal(values(t, []byte(body)), values(t, c.text(compactStyle))) {
				t.Errorf("%s: retyping %s left the value as it was", body, paths[i])
			}
		}
		if retyped == 0 {
			t.Errorf("%s: nothing retyped", body)
		}
	}
}

func TestFuzzJSONRefusesWhatIsNotOneValue(t *testing.T) {
	for _, body := range []string{"", "amount=1", `{"a":1} {"b":2}`, `{"a":`, "[1,]"} {
		if _, err := parseJSON([]byte(body)); !errors.Is(err, errNotJSON) {
			t.Errorf("parseJSON(%q) = %v, want errNotJSON", body, err)
		}
	}
}

// fuzzRun runs the fuzzer alone (probes off, a short workload) against
// examples/httpserver with extra flags.
func fuzzRun(t *testing.T, seed int64, dir string, extra ...string) (Outcome, error) {
	t.Helper()
	tg := exampleTarget(t, extra...)
	tg.Conformance.Skip = true
	return Run(context.Background(), Spec{
		Target: tg, Seed: seed, Duration: 100 * time.Millisecond, Clients: 2, FuzzFingerprint: 8, Dir: dir,
	})
}

// row returns the conformance row id of out.
func row(t *testing.T, out Outcome, id string) ProbeResult {
	t.Helper()
	for _, p := range out.Conformance {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no row %s in %+v", id, out.Conformance)
	return ProbeResult{}
}

// fuzzFinds reports whether the fuzzer found result in its row id.
func fuzzFinds(out Outcome, err error, id, result string) bool {
	if !errors.Is(err, ErrDeviation) {
		return false
	}
	failed := false
	for _, p := range out.Conformance {
		failed = failed || (p.ID == id && p.Status == ProbeFail)
	}
	for _, c := range out.Fingerprint {
		if failed && c.Result == result {
			return true
		}
	}
	return false
}

func TestFuzzFingerprint(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		dir := t.TempDir()
		out, err := fuzzRun(t, 1, dir)
		if err != nil {
			t.Fatalf("examples/httpserver: %v; rows %+v", err, out.Conformance)
		}
		for _, id := range FuzzProbeIDs {
			if r := row(t, out, id); r.Status != ProbePass {
				t.Errorf("row %s: %s (%s), want pass", id, r.Status, r.Observed)
			}
		}
		kinds := map[string]bool{}
		for _, c := range out.Fingerprint {
			kinds[c.Variant] = true
			if c.Result != FuzzPass {
				t.Errorf("case %+v: not a pass", c)
			}
		}
		want := map[string]bool{"members reordered": true, "whitespace changed": true, "field changed": true, "type changed": true, "query parameter added": true}
		if diff := cmp.Diff(want, kinds); diff != "" {
			t.Errorf("variants sent (-want +got):\n%s", diff)
		}
		b, err := os.ReadFile(filepath.Join(dir, FuzzFile))
		if err != nil {
			t.Fatal(err)
		}
		var saved []FuzzCase
		if err := json.Unmarshal(b, &saved); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(out.Fingerprint, saved); diff != "" {
			t.Errorf("%s differs from Outcome.Fingerprint (-want +got):\n%s", FuzzFile, diff)
		}
	})
	// A body-blind fingerprint replays a different request (a false
	// replay; the equivalent row passes: it replays everything); a
	// fingerprint of the raw bytes refuses an equivalent one (a false 422;
	// the different row passes).
	for _, c := range []struct {
		name, flaw       string
		found, pass, res string
	}{
		{"body-blind", "body-blind-fingerprint", ProbeFingerprintDifferent, ProbeFingerprintSame, FuzzFalseReplay},
		{"raw-bytes", "raw-bytes-fingerprint", ProbeFingerprintSame, ProbeFingerprintDifferent, FuzzFalse422},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := fuzzRun(t, 1, "", "--flaw", c.flaw)
			if !fuzzFinds(out, err, c.found, c.res) {
				t.Fatalf("%s not found: err %v, rows %+v", c.res, err, out.Conformance)
			}
			if r := row(t, out, c.pass); r.Status != ProbePass {
				t.Errorf("%s row %s (%s), want pass", c.pass, r.Status, r.Observed)
			}
			t.Log(row(t, out, c.found).Observed)
		})
	}
	t.Run("declared-deviation", func(t *testing.T) {
		tg := exampleTarget(t, "--flaw", "raw-bytes-fingerprint")
		tg.Conformance.Skip = true
		tg.Conformance.Deviations = map[string]string{ProbeFingerprintSame: "we hash the bytes"}
		out, err := Run(context.Background(), Spec{Target: tg, Seed: 2, Duration: 100 * time.Millisecond, Clients: 2, FuzzFingerprint: 4})
		if err != nil {
			t.Fatalf("a declared deviation failed the run: %v", err)
		}
		if r := row(t, out, ProbeFingerprintSame); r.Status != ProbeDeviation || r.Reason != "we hash the bytes" {
			t.Errorf("row %+v, want a deviation with its reason", r)
		}
	})
}

// TestFuzzFingerprintRules: what a target declares decides what is sent.
func TestFuzzFingerprintRules(t *testing.T) {
	tg := exampleTarget(t)
	p := &prober{t: tg}
	if got := p.sameKinds(); got != "members reordered, whitespace changed" {
		t.Errorf("default equivalent kinds %q", got)
	}
	tg.Conformance.Fingerprint = FingerprintRules{JSON: FingerprintRaw, Numbers: NumbersValue, Query: QueryIgnored}
	if got, want := p.sameKinds()+" | "+p.differentKinds(), "number forms | field changed, type changed"; got != want {
		t.Errorf("declared kinds %q, want %q", got, want)
	}
	yaml := strings.Replace(fmt.Sprintf(exampleYAML, "httpserver", ""), "conformance:\n", "conformance:\n  fingerprint: {numbers: value, query: ignored}\n", 1)
	parsed := mustParseTarget(t, yaml, "t.yaml")
	want := FingerprintRules{JSON: FingerprintCanonical, Numbers: NumbersValue, Query: QueryIgnored}
	if diff := cmp.Diff(want, parsed.Conformance.Fingerprint); diff != "" {
		t.Errorf("parsed rules (-want +got):\n%s", diff)
	}
	bad := strings.Replace(yaml, "numbers: value", "numbers: float", 1)
	if _, err := ParseTarget(strings.NewReader(bad), "t.yaml"); !errors.Is(err, ErrUsage) ||
		!strings.Contains(err.Error(), "fingerprint.numbers") {
		t.Errorf("numbers: float: %v, want a usage error naming fingerprint.numbers", err)
	}
	for _, n := range []int{-1, MaxFuzzCases + 1} {
		err := Spec{Target: exampleTarget(t), Duration: time.Second, FuzzFingerprint: n}.Validate()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "fuzz_fingerprint") {
			t.Errorf("FuzzFingerprint %d: %v, want a usage error", n, err)
		}
	}
}

// TestFuzzFingerprintSweep runs the fuzzer on IDEM_BLACKBOX_SWEEP seeds:
// the body-blind fingerprint must show a false replay, the raw-bytes one
// a false 422, each on at least 19 seeds in 20, and the correct server
// neither on any seed.
func TestFuzzFingerprintSweep(t *testing.T) {
	n := sweepSeeds(t)
	var blind, raw, clean int
	for seed := range int64(n) {
		out, err := fuzzRun(t, seed+1, "", "--flaw", "body-blind-fingerprint")
		if fuzzFinds(out, err, ProbeFingerprintDifferent, FuzzFalseReplay) {
			blind++
		}
		out, err = fuzzRun(t, seed+1, "", "--flaw", "raw-bytes-fingerprint")
		if fuzzFinds(out, err, ProbeFingerprintSame, FuzzFalse422) {
			raw++
		}
		if out, err = fuzzRun(t, seed+1, ""); err == nil {
			clean++
		} else {
			t.Logf("seed %d, correct server: %v; rows %+v", seed+1, err, out.Conformance)
		}
	}
	t.Logf("body-blind-fingerprint: false replay found on %d of %d seeds", blind, n)
	t.Logf("raw-bytes-fingerprint:  false 422 found on %d of %d seeds", raw, n)
	t.Logf("examples/httpserver:    passed on %d of %d seeds", clean, n)
	if blind*20 < n*19 || raw*20 < n*19 {
		t.Errorf("found on %d and %d of %d seeds, want at least 19 in 20 each", blind, raw, n)
	}
	if clean != n {
		t.Errorf("the correct server failed on %d of %d seeds", n-clean, n)
	}
}
