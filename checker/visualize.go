package checker

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// visualizeFailures writes Porcupine's HTML for the keys listed with an I4
// violation, at most opts.MaxVisualizations of them, and records the paths
// in the violations. Failures to write are reported as notes.
func visualizeFailures(rep *Report, ops []history.Op, p *partition, opts Options) {
	if err := os.MkdirAll(opts.VisualizeDir, 0o755); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("visualizations not written: %v", err))
		return
	}
	written := 0
	for vi := range rep.Violations {
		v := &rep.Violations[vi]
		if v.Invariant != I4Linearizable {
			continue
		}
		if written >= opts.MaxVisualizations {
			rep.Notes = append(rep.Notes, fmt.Sprintf("only the first %d failing keys were visualized", written))
			return
		}
		k := slices.Index(p.keys, v.Key)
		if k < 0 {
			continue
		}
		path := filepath.Join(opts.VisualizeDir, fileName(v.Key))
		if err := visualizeKey(path, ops, p, k, opts); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("visualization of key %q: %v", v.Key, err))
			continue
		}
		v.VisualizationPath = path
		written++
	}
}

// visualizeKey runs the verbose check on every call and effect of key k
// (ops that cannot change the verdict are shown as no-ops) and writes the
// HTML to path. Calls and effects get rows per client (see rowMapper), the
// fault windows are annotations.
func visualizeKey(path string, ops []history.Op, p *partition, k int, opts Options) error {
	g := p.group(k)
	var f keyFacts
	for _, i := range g {
		op := &ops[i]
		switch {
		case op.Kind == history.KindEffect && op.Applied && op.Outcome == history.OutcomeNone:
			f.applied++
		case op.Outcome == history.Executed || (op.Outcome == history.Failed && op.Token != 0):
			f.committer = true
		}
	}
	var rows rowMapper
	pops := make([]porcupine.Operation, 0, len(g))
	lo, hi := history.NoReturn, int64(-1<<63)
	for _, i := range g {
		op := &ops[i]
		var in any = op
		ret := op.Return
		if affectsModel(op, f) {
			if op.Outcome == history.Unknown {
				ret = history.NoReturn
			}
		} else {
			in = noopOp{op}
		}
		lo = min(lo, op.Call)
		hi = max(hi, op.Call)
		if ret != history.NoReturn {
			hi = max(hi, ret)
		}
		pops = append(pops, porcupine.Operation{
			ClientId: rows.row(op, ret), Input: in, Call: op.Call, Return: ret,
			Metadata: fmt.Sprintf("op %d: client %d worker %d req %d attempt %d exec %s %s", i, op.Client, op.Worker,
				op.Request, op.Attempt, op.Exec, op.Err),
		})
	}
	_, info := porcupine.CheckOperationsVerbose(keyModel, pops, opts.VisualizeTimeout)
	var notes []porcupine.Annotation
	for _, i := range p.faults {
		fo := &ops[i]
		if (fo.Key != "" && fo.Key != p.keys[k]) || fo.Call > hi || fo.Return < lo {
			continue
		}
		end := fo.Return
		if end == history.NoReturn {
			end = hi
		}
		notes = append(notes, porcupine.Annotation{
			Tag: "faults", Start: fo.Call, End: end, Description: fo.Label,
			Details:         fmt.Sprintf("op %d: client %d worker %d, %d..%d", i, fo.Client, fo.Worker, fo.Call, fo.Return),
			BackgroundColor: "#f7c6c6",
		})
	}
	info.AddAnnotations(notes)
	return porcupine.VisualizePath(keyModel, info, path)
}

// rowMapper assigns visualization rows: each client's calls, and
// separately its effects, share rows, and an op that overlaps the previous
// one in its row (a retry after a timeout, whose first attempt never
// returned) gets a new row. Ops must be presented in Call order.
type rowMapper struct {
	groups map[[2]int][]int // (client, kind) -> its rows
	ends   []int64          // last Return per row
}

func (m *rowMapper) row(op *history.Op, ret int64) int {
	if m.groups == nil {
		m.groups = make(map[[2]int][]int)
	}
	k := [2]int{op.Client, int(op.Kind)}
	for _, r := range m.groups[k] {
		if m.ends[r] < op.Call {
			m.ends[r] = ret
			return r
		}
	}
	r := len(m.ends)
	m.ends = append(m.ends, ret)
	m.groups[k] = append(m.groups[k], r)
	return r
}

// fileName turns a key into a safe file name: characters outside
// [A-Za-z0-9._-] and a leading dot become '_', long keys are cut, and when
// anything changed a hash of the real key is appended so that distinct keys
// never collide.
func fileName(key string) string {
	var b strings.Builder
	for _, c := range []byte(key) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 100 {
		s = s[:100]
	}
	if s != "" && s[0] == '.' {
		s = "_" + s[1:] // no hidden files
	}
	if s != key || s == "" {
		h := fnv.New32a()
		h.Write([]byte(key))
		s = fmt.Sprintf("%s-%08x", s, h.Sum32())
	}
	return s + ".html"
}
