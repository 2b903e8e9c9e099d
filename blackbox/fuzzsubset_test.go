package blackbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// subsetExcluded are the members examples/httpserver leaves out of its
// fingerprint under --fingerprint-exclude in these tests.
var subsetExcluded = []string{"/meta", "/client_ref"}

// subsetTarget is exampleTarget with a body that carries the client's own
// members (meta, client_ref) and the rules that declare them left out of
// the fingerprint, started with extra flags.
func subsetTarget(t testing.TB, extra ...string) *Target {
	t.Helper()
	var flags strings.Builder
	for _, e := range extra {
		fmt.Fprintf(&flags, ", %q", e)
	}
	yaml := fmt.Sprintf(exampleYAML, serverBin, flags.String())
	yaml = strings.Replace(yaml, `body: '{"amount": {{.Amount}}, "currency": "EUR"}'`,
		`body: '{"amount": {{.Amount}}, "currency": "EUR", "meta": {"trace": "t{{.Amount}}", "source": "fuzz"}, "client_ref": "r{{.Amount}}"}'`, 1)
	yaml = strings.Replace(yaml, "conformance:\n",
		"conformance:\n  skip: true\n  fingerprint: {excluded: ["+strings.Join(subsetExcluded, ", ")+"]}\n", 1)
	return mustParseTarget(t, yaml, "subset.yaml")
}

// subsetRun runs the fuzzer alone on the subset target.
func subsetRun(t *testing.T, seed int64, cases int, extra ...string) (Outcome, error) {
	t.Helper()
	return Run(context.Background(), Spec{
		Target: subsetTarget(t, extra...), Seed: seed, Duration: 100 * time.Millisecond, Clients: 2, FuzzFingerprint: cases,
	})
}

// subsetFlags configure examples/httpserver with the subset policy.
var subsetFlags = []string{"--fingerprint-exclude", strings.Join(subsetExcluded, ","), "--fingerprint-policy", "payments/subset-v1"}

// TestFuzzFingerprintSubsetPolicy: examples/httpserver configured with a
// subset fingerprint policy passes the fuzzer (changes under the excluded
// members replay, every other change gets 422), and the same body against
// the server's whole-body fingerprint shows the false 422 the rules
// predict, so the check can fail.
func TestFuzzFingerprintSubsetPolicy(t *testing.T) {
	t.Run("subset", func(t *testing.T) {
		for seed := int64(1); seed <= 2; seed++ {
			out, err := subsetRun(t, seed, 12, subsetFlags...)
			if err != nil {
				t.Fatalf("seed %d: %v; rows %+v", seed, err, out.Conformance)
			}
			kinds := map[string]int{}
			for _, c := range out.Fingerprint {
				kinds[c.Variant]++
				if c.Result != FuzzPass {
					t.Errorf("seed %d: case %+v: not a pass", seed, c)
				}
				if c.Variant == "field changed" || c.Variant == "type changed" {
					for _, p := range subsetExcluded {
						if strings.HasPrefix(c.Detail, p) {
							t.Errorf("seed %d: a different variant changed excluded %s: %+v", seed, c.Detail, c)
						}
					}
				}
			}
			if kinds["excluded member changed"] == 0 || kinds["field changed"] == 0 {
				t.Errorf("seed %d: variants sent %v; want excluded members and counted fields changed", seed, kinds)
			}
		}
	})
	t.Run("whole-body", func(t *testing.T) {
		out, err := subsetRun(t, 1, 12)
		if !fuzzFinds(out, err, ProbeFingerprintSame, FuzzFalse422) {
			t.Fatalf("false 422 not found on a server that counts the excluded members: err %v, rows %+v", err, out.Conformance)
		}
		for _, c := range out.Fingerprint {
			if c.Result == FuzzFalse422 && c.Variant != "excluded member changed" {
				t.Errorf("false 422 on %+v, want only on excluded members", c)
			}
		}
	})
}

// TestFuzzFingerprintSubsetSweep runs the subset policy on
// IDEM_BLACKBOX_SWEEP seeds: it must pass on every one.
func TestFuzzFingerprintSubsetSweep(t *testing.T) {
	n := sweepSeeds(t)
	clean, sent := 0, 0
	for seed := range int64(n) {
		out, err := subsetRun(t, seed+1, 12, subsetFlags...)
		sent += len(out.Fingerprint)
		if err == nil {
			clean++
		} else {
			t.Logf("seed %d: %v; rows %+v", seed+1, err, out.Conformance)
		}
	}
	t.Logf("examples/httpserver --fingerprint-exclude %s: passed on %d of %d seeds (%d variants, no false 422, no false replay)",
		strings.Join(subsetExcluded, ","), clean, n, sent)
	if clean != n {
		t.Errorf("the subset policy failed on %d of %d seeds", n-clean, n)
	}
}

// TestSubsetTargetFile: examples/httpserver/target-subset.yaml declares
// the members its start command tells the server to leave out.
func TestSubsetTargetFile(t *testing.T) {
	tg, err := LoadTarget("../examples/httpserver/target-subset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.Conformance.Fingerprint.Excluded; !slices.Equal(got, subsetExcluded) {
		t.Errorf("excluded %v, want %v", got, subsetExcluded)
	}
	i := slices.Index(tg.Start.Command, "--fingerprint-exclude")
	if i < 0 || i+1 >= len(tg.Start.Command) || tg.Start.Command[i+1] != strings.Join(tg.Conformance.Fingerprint.Excluded, ",") {
		t.Errorf("start command %q does not exclude %v", tg.Start.Command, tg.Conformance.Fingerprint.Excluded)
	}
	bad := strings.NewReader("name: x\nbase_url: http://127.0.0.1:1\noperation: {path: /p}\nconformance:\n  fingerprint: {excluded: [meta]}\n")
	if _, err := ParseTarget(bad, "bad.yaml"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "fingerprint.excluded") {
		t.Errorf("excluded: [meta]: %v, want a usage error naming fingerprint.excluded", err)
	}
}
