package blackbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

func newToy(double bool) *toyService {
	return &toyService{double: double, answers: map[string][]byte{}, effects: map[string]int{}}
}

// TestOpenLoopZipf drives the toy service open-loop with hot keys: the
// schedule is kept (every paced send is on the rate's grid, none skipped,
// late ones sent late), every first attempt carries its intended send
// time, and keys come from the key space.
func TestOpenLoopZipf(t *testing.T) {
	srv := httptest.NewServer(newToy(false))
	defer srv.Close()
	const rate, d, space = 400.0, time.Second, 20
	out, err := Run(context.Background(), Spec{
		Target: toyTarget(t, srv, "conformance: {skip: true}\n"), Seed: 2, Duration: d, Rate: rate, Clients: 16,
		Keys: workload.Keys{Dist: "zipf", Space: space, Concurrent: 1},
	})
	if err != nil {
		t.Fatalf("open loop on a correct toy: %v", err)
	}
	keys := map[string]bool{}
	var intended []int64
	for _, op := range out.History.Ops {
		if op.Kind != history.KindCall || op.Probe {
			continue
		}
		keys[op.Key] = true
		if op.Attempt == 1 && op.Intended == 0 {
			t.Fatalf("first attempt without an intended time: %+v", op)
		}
		if op.Intended != 0 {
			intended = append(intended, op.Intended)
		}
	}
	// The pacer's sends are on a grid of 1/rate from the first; a send
	// that fell behind went out late with its place on the grid. A busy
	// machine sends fewer in the second, never with a gap in the grid.
	origin := slices.Min(intended)
	step := int64(time.Duration(float64(time.Second) / rate))
	onGrid := map[int64]bool{}
	for _, at := range intended {
		if (at-origin)%step == 0 {
			onGrid[(at-origin)/step] = true
		}
	}
	for i := range int64(len(onGrid)) {
		if !onGrid[i] {
			t.Fatalf("paced send %d of %d missing: the schedule skipped it", i, len(onGrid))
		}
	}
	if n := len(onGrid); n < 100 || n > int(rate*d.Seconds()) {
		t.Errorf("%d paced sends in %s at %g/s", n, d, rate)
	}
	if len(keys) > space {
		t.Errorf("%d keys, want at most the space %d", len(keys), space)
	}
	if out.Summary.LateSends.OpenLoopCalls == 0 {
		t.Errorf("summary counts no open-loop calls")
	}
}

// TestDeclaredDeviation: a failed probe the target declares is reported as
// a deviation and does not fail the run; undeclared, it does.
func TestDeclaredDeviation(t *testing.T) {
	for _, declared := range []bool{false, true} {
		t.Run(fmt.Sprint("declared=", declared), func(t *testing.T) {
			tg := exampleTarget(t, "--flaw", "unscoped-path")
			if declared {
				tg.Conformance.Deviations = map[string]string{ProbeIsolation: "keys are global by design"}
			}
			out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 300 * time.Millisecond, Clients: 2})
			var row ProbeResult
			for _, p := range out.Conformance {
				if p.ID == ProbeIsolation {
					row = p
				}
			}
			switch {
			case declared && (err != nil || row.Status != ProbeDeviation || row.Reason == ""):
				t.Errorf("declared: err %v, row %+v; want a pass with a deviation row", err, row)
			case !declared && (!errors.Is(err, ErrDeviation) || checker.ExitCode(err) != checker.ExitDeviation || row.Status != ProbeFail || row.Class != ClassDeviation):
				t.Errorf("undeclared: err %v, row %+v; want ErrDeviation (exit 6) and a failed row", err, row)
			}
		})
	}
}

func TestThresholdMissed(t *testing.T) {
	srv := httptest.NewServer(newToy(false))
	defer srv.Close()
	out, err := Run(context.Background(), Spec{
		Target: toyTarget(t, srv, "conformance: {skip: true}\n"), Seed: 1, Duration: 200 * time.Millisecond, Clients: 2,
		Thresholds: &reports.Thresholds{MinThroughput: 1e9},
	})
	if !errors.Is(err, ErrThreshold) || checker.ExitCode(err) != checker.ExitThreshold || len(out.Misses) != 1 {
		t.Fatalf("err %v, misses %v; want ErrThreshold", err, out.Misses)
	}
}

// TestSQLOracle counts effects with a PostgreSQL query: the toy service
// inserts a row per execution.
func TestSQLOracle(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	table := fmt.Sprintf("blackbox_effects_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" (key text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DROP TABLE "+table)
	for _, double := range []bool{false, true} {
		t.Run(fmt.Sprint("double=", double), func(t *testing.T) {
			toy := newToy(double)
			toy.onExecute = func(key string) error {
				_, err := conn.Exec(ctx, "INSERT INTO "+table+" (key) VALUES ($1)", key)
				return err
			}
			srv := httptest.NewServer(toy)
			defer srv.Close()
			oracle := fmt.Sprintf("oracle: {kind: sql, postgres_url: '%s', query: 'SELECT key, count(*) FROM %s GROUP BY key'}\nconformance: {skip: true}\n", url, table)
			out, err := Run(ctx, Spec{Target: toyTarget(t, srv, oracle), Seed: 1, Duration: 300 * time.Millisecond, Clients: 2, Keys: keysWithCopies()})
			if double != errors.Is(err, ErrViolation) {
				t.Fatalf("double=%v: err %v", double, err)
			}
			if out.Check.Stats.Effects == 0 || !strings.Contains(strings.Join(out.Notes, " "), "effect(s) over") {
				t.Errorf("no effects from the query: %+v %v", out.Check.Stats, out.Notes)
			}
		})
	}
}

// TestNoReplayMarker: without a replay marker the first success of a key
// is its execution, the others replays; a correct service passes.
func TestNoReplayMarker(t *testing.T) {
	srv := httptest.NewServer(newToy(false))
	defer srv.Close()
	tg := toyTarget(t, srv, "conformance: {skip: true}\n")
	tg.Operation.ReplayHeader = ""
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Spec{Target: tg, Seed: 1, Duration: 300 * time.Millisecond, Clients: 2, Keys: keysWithCopies()})
	if err != nil {
		t.Fatalf("correct toy without a marker: %v", err)
	}
	if out.Summary.Outcomes["replayed"] == 0 || out.Summary.Outcomes["executed"] == 0 {
		t.Errorf("outcomes %v: want executions and replays", out.Summary.Outcomes)
	}
}

var _ http.Handler = (*toyService)(nil)
