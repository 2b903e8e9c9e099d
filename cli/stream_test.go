package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// streamScenario is a scenario without faults whose traffic has every
// shape the driver draws: fresh keys, concurrent and delayed copies of
// half the requests, keys reused with another body, retries.
const streamScenario = `name: stream
description: one scenario, the same traffic under run and under http
duration: 1500ms
engine:
  lease_ttl: 500ms
  heartbeat: on
workload:
  clients: 4
  keys:
    dist: unique
    concurrent: 1
    delayed: 1
    delay: 20ms
    dup_fraction: 0.5
    mismatch_rate: 0.1
  retry:
    max_attempts: 6
    timeout: 2s
    backoff: 5ms
    max_backoff: 50ms
  business:
    latency: {dist: uniform, min: 500us, max: 2ms}
`

// logical is what a history says about one logical request.
type logical struct {
	key        string // the key without the run's prefix: c<client>-<n>
	fp         string
	deliveries int // first attempts: the original and its copies
	attempts   []int
}

var keySuffix = regexp.MustCompile(`-(c\d+-\d+|z\d+)$`)

// streams reads the calls of dir's history (probes left out) by logical
// request id.
func streams(t *testing.T, dir string) map[int64]*logical {
	t.Helper()
	h, err := history.DecodeFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*logical{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindCall || op.Probe {
			continue
		}
		m := keySuffix.FindStringSubmatch(op.Key)
		if m == nil {
			t.Fatalf("%s: key %q is not <prefix>-c<client>-<n>", dir, op.Key)
		}
		l := out[op.Request]
		if l == nil {
			l = &logical{key: m[1], fp: op.FP}
			out[op.Request] = l
		}
		if l.key != m[1] || l.fp != op.FP {
			t.Fatalf("%s: request %d sent as %s/%s and %s/%s", dir, op.Request, l.key, l.fp, m[1], op.FP)
		}
		if op.Attempt == 1 {
			l.deliveries++
		}
		l.attempts = append(l.attempts, op.Attempt)
	}
	return out
}

// TestRunAndHTTPSendTheSameTraffic runs one scenario with one seed under
// `idembench run` (the engine in process) and under `idembench http`
// against examples/httpserver, and compares the two request streams: per
// client, request by request, the same key, the same choice of reusing a
// key with another body, and the same number of copies; and under both,
// retries numbered from 1 within the scenario's attempts.
func TestRunAndHTTPSendTheSameTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts examples/httpserver")
	}
	dir := t.TempDir()
	scenario := filepath.Join(dir, "stream.yaml")
	if err := os.WriteFile(scenario, []byte(streamScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir, httpDir := filepath.Join(dir, "run"), filepath.Join(dir, "http")
	if r := runCLI(t, "run", "--scenario", scenario, "--seed", "11", "--out", runDir, "--no-progress"); r.code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	t.Chdir("..") // the target's start command runs from the repository root
	if r := runCLI(t, "http", "examples/httpserver/target.yaml", "--scenario", scenario, "--seed", "11", "--out", httpDir); r.code != exitOK {
		t.Fatalf("http: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	a, b := streams(t, runDir), streams(t, httpDir)

	// Client c's n-th logical request has id c<<32 | n. Compare the first
	// half of what both runs sent: the later requests' delayed copies may
	// fall after the end of the traffic in one run and not the other.
	const clients = 4
	var compared, copied, reused int
	for c := range int64(clients) {
		na, nb := count(a, c), count(b, c)
		if min(na, nb) < 20 {
			t.Fatalf("client %d sent %d requests under run and %d under http: too few to compare", c, na, nb)
		}
		for n := int64(1); n <= min(na, nb)/2; n++ {
			id := c<<32 | n
			x, y := a[id], b[id]
			if x.key != y.key || x.deliveries != y.deliveries || mismatch(a, id) != mismatch(b, id) {
				t.Fatalf("client %d request %d: run sent key %s ×%d (reused with another body: %v), http key %s ×%d (%v)",
					c, n, x.key, x.deliveries, mismatch(a, id), y.key, y.deliveries, mismatch(b, id))
			}
			compared++
			if x.deliveries > 1 {
				copied++
			}
			if mismatch(a, id) {
				reused++
			}
		}
	}
	if copied == 0 || reused == 0 || copied == compared {
		t.Fatalf("%d requests compared, %d with copies, %d reusing a key: the scenario should make some of each", compared, copied, reused)
	}
	for name, s := range map[string]map[int64]*logical{"run": a, "http": b} {
		for id, l := range s {
			for _, n := range l.attempts {
				if n < 1 || n > 6 {
					t.Fatalf("%s: request %d made attempt %d, outside 1..6", name, id, n)
				}
			}
		}
	}
	t.Logf("%d requests compared: %d with copies, %d reusing a key with another body", compared, copied, reused)
}

// count returns how many logical requests client c sent in s.
func count(s map[int64]*logical, c int64) int64 {
	var n int64
	for id := range s {
		if id>>32 == c {
			n = max(n, id&(1<<32-1))
		}
	}
	return n
}

// mismatch reports whether request id reused an earlier request's key with
// another body.
func mismatch(s map[int64]*logical, id int64) bool {
	l := s[id]
	first := id
	for other, o := range s {
		if other < first && o.key == l.key {
			first = other
		}
	}
	return first != id && s[first].fp != l.fp
}
