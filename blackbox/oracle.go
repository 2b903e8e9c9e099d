package blackbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/history"
)

// oracleLimits says, per oracle kind, what the oracle cannot see; the
// report prints it next to the verdict.
var oracleLimits = map[string]string{
	OracleDownstream: "Every call the service made to the mock downstream is an effect, with its time: I1, I2, I4 and I6 are checked in full. " +
		"It cannot see effects the service performs elsewhere (its own rows, other providers) or downstream calls made without the key header.",
	OracleHTTP: "Effect counts per key come from the service's effects endpoint after the run, without times: a double execution is found (I1), " +
		"and each effect is placed anywhere after the key's first request (I4). It sees only what the endpoint counts.",
	OracleSQL: "Effect counts per key come from a SQL query after the run, without times: a double execution is found (I1), " +
		"and each effect is placed anywhere after the key's first request (I4). It sees only the rows the query counts.",
	OracleResponse: "Effects are derived from the answers: a key whose successes name more than one resource id executed twice (I1). " +
		"An execution whose answer was lost (client timeout, dropped reply) or that reuses the id is invisible, and I2 holds by construction. " +
		"Use a downstream or a query oracle for a stronger check.",
}

func effectOp(key string, call, ret int64, applied bool, exec string) history.Op {
	return history.Op{Kind: history.KindEffect, Client: -1, Worker: -1, Key: key, Call: call, Return: ret, Applied: applied, Exec: exec}
}

// downstreamEffects turns the downstream's calls for the workload's keys
// (those that start with prefix) into effect ops; calls for other keys
// (conformance probes, calls without the key) are counted in other.
func downstreamEffects(calls []DownstreamCall, prefix string) (ops []history.Op, other int) {
	for i, c := range calls {
		if !strings.HasPrefix(c.Key, prefix) {
			other++
			continue
		}
		exec := c.ID
		if exec == "" {
			exec = "failed-" + strconv.Itoa(i)
		}
		ops = append(ops, effectOp(c.Key, c.Arrived, c.Answered, c.ID != "", exec))
	}
	return ops, other
}

// countEffects turns per-key counts into effect ops placed anywhere after
// the key's first call (Return NoReturn). Keys the run did not use are
// ignored.
func countEffects(counts map[string]int, first map[string]int64) []history.Op {
	var ops []history.Op
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		call, ok := first[k]
		if !ok {
			continue
		}
		for i := range counts[k] {
			ops = append(ops, effectOp(k, call, history.NoReturn, true, "count-"+strconv.Itoa(i+1)))
		}
	}
	return ops
}

// responseEffects derives one effect per distinct resource id of a key,
// spanning from the earliest call to the earliest return of the answers
// that named it.
func responseEffects(ids []resourceAnswer) []history.Op {
	type span struct{ call, ret int64 }
	seen := map[[2]string]*span{}
	var order [][2]string
	for _, a := range ids {
		k := [2]string{a.key, a.id}
		s := seen[k]
		if s == nil {
			s = &span{a.call, a.ret}
			seen[k] = s
			order = append(order, k)
		}
		s.call, s.ret = min(s.call, a.call), min(s.ret, a.ret)
	}
	ops := make([]history.Op, 0, len(order))
	for _, k := range order {
		s := seen[k]
		ops = append(ops, effectOp(k[0], s.call, s.ret, true, "resource "+k[1]))
	}
	return ops
}

// queryHTTP reads {key: count} (or {"counts": {key: count}}) from url.
func queryHTTP(ctx context.Context, url string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, oraclef("%s: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, oraclef("%s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, oraclef("%s: reading the answer: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, oraclef("%s answered %d, want 200 with a JSON object of key to count", url, resp.StatusCode)
	}
	return parseCounts(b, url)
}

// parseCounts decodes a JSON object of key to non-negative integer, or
// such an object under "counts".
func parseCounts(b []byte, from string) (map[string]int, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, oraclef("%s: answer is not a JSON object of key to count: %v", from, err)
	}
	if inner, ok := raw["counts"]; ok && len(raw) == 1 {
		raw = nil
		if err := json.Unmarshal(inner, &raw); err != nil {
			return nil, oraclef("%s: \"counts\" is not an object of key to count: %v", from, err)
		}
	}
	counts := make(map[string]int, len(raw))
	for k, v := range raw {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f < 0 || f != math.Trunc(f) || f > 1e9 {
			return nil, oraclef("%s: count of key %q is %s, want a non-negative integer", from, k, v)
		}
		counts[k] = int(f)
	}
	return counts, nil
}

// querySQL runs query on PostgreSQL; each row is (key, count).
func querySQL(ctx context.Context, url, query string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, oraclef("sql: connect: %v", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, query)
	if err != nil {
		return nil, oraclef("sql: %v", err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var key string
		var n int64
		if err := rows.Scan(&key, &n); err != nil {
			return nil, oraclef("sql: each row must be (key text, count integer): %v", err)
		}
		if n < 0 {
			return nil, oraclef("sql: negative count %d for key %q", n, key)
		}
		counts[key] += int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, oraclef("sql: %v", err)
	}
	return counts, nil
}

// firstCalls returns the earliest Call of each key's calls.
func firstCalls(ops []history.Op) map[string]int64 {
	first := map[string]int64{}
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.KindCall {
			continue
		}
		if c, ok := first[op.Key]; !ok || op.Call < c {
			first[op.Key] = op.Call
		}
	}
	return first
}

// markExecutions is for targets without a replay marker: every success was
// recorded as Executed; the first to return per key stays Executed, and a
// later success with the same response becomes Replayed. A later success
// with another response stays Executed: without a marker nothing says it
// is a replay, and a second answer that differs is a second execution.
func markExecutions(ops []history.Op) {
	first := map[string]int{}
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.KindCall || op.Outcome != history.Executed {
			continue
		}
		if j, ok := first[op.Key]; !ok || op.Return < ops[j].Return {
			first[op.Key] = i
		}
	}
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.KindCall || op.Outcome != history.Executed {
			continue
		}
		if j := first[op.Key]; j != i && op.Resp == ops[j].Resp {
			op.Outcome = history.Replayed
		}
	}
}

func describeCounts(counts map[string]int) string {
	n := 0
	for _, c := range counts {
		n += c
	}
	return fmt.Sprintf("%d effect(s) over %d key(s)", n, len(counts))
}
